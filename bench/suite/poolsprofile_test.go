package suite

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/txengine/txengine/internal/freeport"
)

// busyProfile profiles a busy burst when TXENGINE_PROFILE names a folder
// and TXENGINE_BENCH_BIN a txengine built with -tags pprof: a CPU profile
// of TXENGINE_PROFILE_SECONDS (20) from the start of the load, then the
// mutex and block profiles, each block's transactions, and the JSON-RPC
// requests per completed transfer. Without them it does nothing.
type busyProfile struct {
	dir, addr string
	seconds   int
	done      chan struct{}
}

func startBusyProfile(t *testing.T, b bins) *busyProfile {
	dir := os.Getenv("TXENGINE_PROFILE")
	if dir == "" {
		return nil
	}
	if os.Getenv("TXENGINE_BENCH_BIN") == "" {
		t.Fatal("TXENGINE_PROFILE needs TXENGINE_BENCH_BIN, a txengine built with -tags pprof")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &busyProfile{dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)), seconds: envInt(t, "TXENGINE_PROFILE_SECONDS", 20)}
}

func (p *busyProfile) env() []string {
	if p == nil {
		return nil
	}
	return []string{"TXENGINE_PPROF=" + p.addr}
}

// during takes the CPU profile while the load runs.
func (p *busyProfile) during(t *testing.T, logf func(string, ...any)) {
	if p == nil {
		return
	}
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		logf("CPU profile for %ds", p.seconds)
		fetch(t, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", p.addr, p.seconds), filepath.Join(p.dir, "cpu.pprof"))
	}()
}

// after saves the other profiles and logs the blocks and round trips.
func (p *busyProfile) after(t *testing.T, st *busyStack, started time.Time, r loadReport, before, after metrics, logf func(string, ...any)) {
	if p == nil {
		return
	}
	<-p.done
	for _, name := range []string{"mutex", "block", "goroutine"} {
		fetch(t, fmt.Sprintf("http://%s/debug/pprof/%s", p.addr, name), filepath.Join(p.dir, name+".pprof"))
	}
	logSenders(st.ec, started, r.FirstBlock, r.LastBlock, logf)
	completed := after.completed - before.completed
	logf("JSON-RPC requests %.0f = %.3f per completed transaction; top: %s", after.rpc-before.rpc, (after.rpc-before.rpc)/completed, after.top(before, 10))
	for _, name := range []string{"cpu", "mutex", "block"} {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", filepath.Join(p.dir, name+".pprof")).Output()
		if err != nil {
			t.Errorf("pprof %s: %v", name, err)
			continue
		}
		logf("== %s ==\n%s", name, out)
	}
}

// logSenders logs each block's transactions by sender: how many senders,
// how many sent the most a sender may have pending (16), and the largest
// sender's count (the treasury's top-ups show there).
func logSenders(ec *ethclient.Client, start time.Time, first, last uint64, logf func(string, ...any)) {
	spans := map[common.Address]*senderSpan{}
	defer logSpans(spans, logf)
	for n := first - 1; n <= last+1 && first > 0; n++ {
		blk, err := ec.BlockByNumber(context.Background(), new(big.Int).SetUint64(n))
		if err != nil {
			logf("block %d: %v", n, err)
			continue
		}
		by := map[common.Address]int{}
		plain := map[common.Address]int{} // transactions without data: ETH transfers
		for _, tx := range blk.Transactions() {
			from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
			if err != nil {
				continue
			}
			by[from]++
			spans[from] = spans[from].add(n)
			if len(tx.Data()) == 0 {
				plain[from]++
			}
		}
		tipLo, tipHi := tipRange(blk)
		full, most, mostETH := 0, 0, 0
		for a, c := range by {
			if c >= 16 {
				full++
			}
			if c > most {
				most, mostETH = c, plain[a]
			}
		}
		at := time.Unix(int64(blk.Time()), 0)
		logf("block %d: %4d txs from %2d senders (%2d with 16+, most %3d of which %2d ETH), gas %3.0f %%, at %+6.1fs, base fee %v, tips %v..%v", n, len(blk.Transactions()), len(by), full, most, mostETH,
			100*float64(blk.GasUsed())/float64(blk.GasLimit()), at.Sub(start).Seconds(), blk.BaseFee(), tipLo, tipHi)
	}
}

// senderSpan is one sender's transactions over the logged blocks: how
// many, in how many blocks, the first and the last block.
type senderSpan struct {
	txs, blocks int
	first, last uint64
}

// add counts one transaction in block n.
func (s *senderSpan) add(n uint64) *senderSpan {
	if s == nil {
		return &senderSpan{txs: 1, blocks: 1, first: n, last: n}
	}
	if s.last != n {
		s.blocks++
	}
	s.txs++
	s.last = n
	return s
}

// logSpans logs the senders by their last block: a tail of part-empty
// blocks shows which senders were left the most, and whether they had
// sent in every block before (left behind) or started late (waited).
func logSpans(spans map[common.Address]*senderSpan, logf func(string, ...any)) {
	addrs := make([]common.Address, 0, len(spans))
	for a := range spans {
		addrs = append(addrs, a)
	}
	sort.Slice(addrs, func(i, j int) bool {
		a, b := spans[addrs[i]], spans[addrs[j]]
		if a.last != b.last {
			return a.last < b.last
		}
		return a.txs < b.txs
	})
	for _, a := range addrs {
		s := spans[a]
		logf("sender %s: %4d txs in %2d blocks, blocks %d..%d (%d missed)", a.Hex()[:10], s.txs, s.blocks, s.first, s.last, int(s.last-s.first)+1-s.blocks)
	}
}

// tipRange returns the lowest and highest effective tip of blk's
// transactions (nil without any): a burst whose later transactions tip
// more than its earlier ones leaves the earlier behind.
func tipRange(blk *types.Block) (lo, hi *big.Int) {
	for _, tx := range blk.Transactions() {
		tip, err := tx.EffectiveGasTip(blk.BaseFee())
		if err != nil {
			continue
		}
		if lo == nil || tip.Cmp(lo) < 0 {
			lo = tip
		}
		if hi == nil || tip.Cmp(hi) > 0 {
			hi = tip
		}
	}
	return lo, hi
}

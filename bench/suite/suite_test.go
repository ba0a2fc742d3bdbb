// Package suite is the benchmark suite that `make bench` runs: it starts
// what it needs (the HTTP ceiling server, txengine on the embedded store,
// on a throwaway PostgreSQL and against geth --dev), drives each with
// cmd/txload and prints one markdown table of P1..P5 beside their targets.
// It runs only with TXENGINE_BENCH=1 (it takes minutes and the machine's
// full attention); `go test ./...` skips it. BENCH_OUT names a file to
// save the run as JSON (for bench/median).
package suite

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/bench/benchtable"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/servicetest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.RunMain(m) }

// Sizes of the runs (kept so that the suite ends in minutes on 2 cores).
const (
	p1N         = 20000
	p1Clients   = 64
	p2N         = 10000
	p3Seconds   = 10
	p3Samples   = 30
	p4Depth     = 10000
	p4Accounts  = 1000
	p4PerAcct   = 10
	peerAccepts = 1970.0 // the peer's best accept rate (range 1,750-1,970/s)
	inFlight    = "1024" // per-account window of P4, matched to the txpool slots per account
	// p2InFlight is the window of P2: two blocks' worth of transfers
	// (60M gas / 48.8k gas per transfer = 1,229 a block), so that the
	// pool holds the next block's transfers while one is mined; geth's
	// global slots (8,192) take them.
	p2InFlight  = "2048"
	idleAccount = "10s"
	// p4Idle is how many distinct accounts the RSS row of P4 creates, each
	// of which sends once and goes idle (TXENGINE_BENCH_IDLE_ACCOUNTS
	// overrides it for trial runs); p4IdleClients create and send them.
	p4Idle        = 100000
	p4IdleClients = 32
	// p4IdleTimeout bounds the wait for every idle account's transfer to end.
	p4IdleTimeout = 10 * time.Minute
	// idleTo receives the idle accounts' transfers (of 0: they cannot pay gas).
	idleTo = "0x000000000000000000000000000000000000bEEF"
)

// bins are the programs under test, built once.
type bins struct{ txengine, txload, ceiling string }

func build(t *testing.T) bins {
	dir := t.TempDir()
	b := bins{filepath.Join(dir, "txengine"), filepath.Join(dir, "txload"), filepath.Join(dir, "ceiling")}
	pkgs := map[string]string{b.txengine: servicetest.Package, b.txload: "github.com/txengine/txengine/cmd/txload", b.ceiling: "github.com/txengine/txengine/bench/ceiling"}
	if bin := os.Getenv("TXENGINE_BENCH_BIN"); bin != "" {
		// A txengine built otherwise (go build -tags pprof, or instrumented).
		delete(pkgs, b.txengine)
		b.txengine = bin
	}
	for out, pkg := range pkgs {
		bin, err := servicetest.Build(filepath.Dir(out), pkg, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(bin, out); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestBench(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "1" {
		t.Skip("the benchmark suite runs with TXENGINE_BENCH=1 (make bench)")
	}
	b := build(t)
	var rows []benchtable.Row
	add := func(r ...benchtable.Row) { rows = append(rows, r...) }
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

	// P1: durable accepts/s for one account, 64 clients.
	ceil := startCeiling(t, b.ceiling)
	rc := runLoad(t, b.txload, ceil.url, "ceiling", "--n", itoa(p1N), "--concurrency", itoa(p1Clients), "--wait=false")
	ceil.stop()
	logf("ceiling: %.0f/s", rc.AcceptedPerSec)

	// P1 runs the default configuration (in-flight window 64): with a window
	// of 1024 the account actor spends its time sending, and accepts fall.
	emb := startService(t, b.txengine, t.TempDir())
	re := runLoad(t, b.txload, emb.url, emb.token, "--n", itoa(p1N), "--concurrency", itoa(p1Clients), "--wait=false")
	emb.stop()
	logf("embedded: %.0f/s", re.AcceptedPerSec)

	// A cluster of its own with PostgreSQL's durability defaults (fsync and
	// synchronous commit on): pgtest.New's shared cluster runs without them.
	pg := startService(t, b.txengine, t.TempDir(), "TXENGINE_DATABASE_URL="+pgtest.StartDurableCluster(t).URL())
	rp := runLoad(t, b.txload, pg.url, pg.token, "--n", itoa(p1N), "--concurrency", itoa(p1Clients), "--wait=false")
	logf("postgres: %.0f/s", rp.AcceptedPerSec)
	add(
		benchtable.Row{ID: "P1.ceiling", What: fmt.Sprintf("P1 HTTP ceiling (bare gin, same validation), N=%d, %d clients", p1N, p1Clients), Value: rc.AcceptedPerSec, Unit: "/s"},
		benchtable.Row{ID: "P1.pg", What: fmt.Sprintf("P1 durable accepts, PostgreSQL (fsync on), 1 account, N=%d, %d clients", p1N, p1Clients), Value: rp.AcceptedPerSec, Unit: "/s", Note: errNote(rp)},
		benchtable.Row{ID: "P1.pg.ratio", What: "P1 PostgreSQL / ceiling", Value: rp.AcceptedPerSec / rc.AcceptedPerSec, Unit: "x", HasTarget: true, Target: 0.5, AtLeast: true},
		benchtable.Row{ID: "P1.pg.peer", What: fmt.Sprintf("P1 PostgreSQL / peer (%.0f/s)", peerAccepts), Value: rp.AcceptedPerSec / peerAccepts, Unit: "x", HasTarget: true, Target: 5, AtLeast: true},
		benchtable.Row{ID: "P1.embedded", What: fmt.Sprintf("P1 durable accepts, embedded store, 1 account, N=%d, %d clients", p1N, p1Clients), Value: re.AcceptedPerSec, Unit: "/s", Note: errNote(re)},
		benchtable.Row{ID: "P1.embedded.ratio", What: "P1 embedded / ceiling", Value: re.AcceptedPerSec / rc.AcceptedPerSec, Unit: "x"},
	)

	// P3 (first half): accept latency at half of the PostgreSQL maximum.
	half := rp.AcceptedPerSec / 2
	n3 := int(half * p3Seconds)
	rh := runLoad(t, b.txload, pg.url, pg.token, "--n", itoa(n3), "--concurrency", itoa(p1Clients), "--rate", fmt.Sprintf("%.0f", half), "--wait=false")
	pg.stop()
	logf("half rate %.0f/s: p99 %.1f ms", half, rh.LatencyMs.P99)
	hw := fmt.Sprintf("at %.0f/s (half of P1 PostgreSQL), N=%d", half, n3)
	add(
		benchtable.Row{ID: "P3.p50", What: "P3 accept latency p50 " + hw, Value: rh.LatencyMs.P50, Unit: "ms"},
		benchtable.Row{ID: "P3.p90", What: "P3 accept latency p90", Value: rh.LatencyMs.P90, Unit: "ms"},
		benchtable.Row{ID: "P3.p99", What: "P3 accept latency p99", Value: rh.LatencyMs.P99, Unit: "ms", HasTarget: true, Target: 10},
		benchtable.Row{ID: "P3.max", What: "P3 accept latency max", Value: rh.LatencyMs.Max, Unit: "ms"},
	)

	// P2 and P5: a burst on geth --dev; P3 (second half): completion delay;
	// P4's RSS once 100,000 accounts sent once and went idle (on the same
	// node, reported after the other P4 rows).
	gethRows, idleRows := benchGeth(t, b, logf)
	add(gethRows...)

	// P4: breadth beside depth on the embedded chain, then the RSS row.
	add(benchBreadth(t, b, logf)...)
	add(idleRows...)

	// The shapes of issue 16 with the default configuration.
	add(benchShapes(t, b, logf)...)

	// Issue 30: one account beside a pool of 32 behind a busy mempool.
	add(benchPools(t, b, poolsN, poolsSize, logf)...)

	run := benchtable.Run{Machine: machine(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Rows: rows}
	var out bytes.Buffer
	benchtable.Markdown(&out, run)
	fmt.Print("\n" + out.String())
	if p := os.Getenv("BENCH_OUT"); p != "" {
		raw, _ := json.MarshalIndent(run, "", "  ")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
}

// TestBenchP2 runs the geth part of the suite alone (P2, P5, the
// completion delay of P3 and P4's RSS after idle accounts), with
// TXENGINE_BENCH=P2, and logs the blocks of the burst: how full each was
// and when it came, to see where a drain loses time against the chain
// bound. TXENGINE_BENCH_IDLE_ACCOUNTS=5000 makes the RSS part a quick trial.
//
//	TXENGINE_BENCH=P2 go test -count=1 -v -run TestBenchP2 -timeout 20m ./bench/suite/
func TestBenchP2(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "P2" {
		t.Skip("runs with TXENGINE_BENCH=P2")
	}
	b := build(t)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	rows, idle := benchGeth(t, b, logf)
	rows = append(rows, idle...)
	var out bytes.Buffer
	benchtable.Markdown(&out, benchtable.Run{Machine: machine(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Rows: rows})
	fmt.Print("\n" + out.String())
}

// logBlocks logs, for the blocks first-1..last+1, their transactions, gas
// used and arrival relative to start.
func logBlocks(ec *ethclient.Client, start time.Time, first, last uint64, logf func(string, ...any)) {
	for n := first - 1; n <= last+1 && first > 0; n++ {
		blk, err := ec.BlockByNumber(context.Background(), new(big.Int).SetUint64(n))
		if err != nil {
			logf("block %d: %v", n, err)
			continue
		}
		at := time.Unix(int64(blk.Time()), 0)
		logf("block %d: %4d txs, gas %8d (%3.0f %%), at %+6.1fs", n, len(blk.Transactions()), blk.GasUsed(),
			100*float64(blk.GasUsed())/float64(blk.GasLimit()), at.Sub(start).Seconds())
	}
}

// benchGeth measures P2 (drain of a burst beside the chain bound), P5
// (JSON-RPC requests per completed transfer) and the completion delay of P3
// on geth --dev; then, on the same node, P4's RSS after idle accounts
// (benchIdle), whose rows it returns apart.
func benchGeth(t *testing.T, b bins, logf func(string, ...any)) (rows, idle []benchtable.Row) {
	node := gethtest.Start(t, gethtest.Period(1))
	dir := t.TempDir()
	netEnv := []string{
		"TXENGINE_NETWORK_NAME=geth", "TXENGINE_NETWORK_CHAIN_ID=1337",
		"TXENGINE_NETWORK_HTTP_URL=" + node.HTTPURL, "TXENGINE_NETWORK_WS_URL=" + node.WSURL,
	}
	env := append(slices.Clip(netEnv),
		"TXENGINE_NETWORK_FAUCET_KEY="+hex.EncodeToString(crypto.FromECDSA(node.FaucetKey)),
		"TXENGINE_IN_FLIGHT="+cmp.Or(os.Getenv("TXENGINE_BENCH_P2_IN_FLIGHT"), p2InFlight),
	)
	deployToken(t, b.txengine, dir, "Bench Token", "BT", env)
	svc := startService(t, b.txengine, dir, env...)
	defer svc.stop()
	ec, err := ethclient.Dial(node.WSURL)
	if err != nil {
		t.Fatalf("dial geth: %v", err)
	}
	defer ec.Close()
	// The faucet gives 0.1 ETH, and geth reserves gas × fee cap for every
	// pending transaction: a 10,000 burst needs more. Top the sender up.
	var def struct {
		Address string `json:"address"`
	}
	if err := apiCall(&http.Client{Timeout: 10 * time.Second}, "GET", svc.url+"/accounts/default", svc.token, "", &def); err != nil {
		t.Fatalf("default account: %v", err)
	}
	fundETH(t, ec, node, common.HexToAddress(def.Address), 100)

	before := scrape(t, svc.url)
	started := time.Now()
	r2 := runLoad(t, b.txload, svc.url, svc.token, "--n", itoa(p2N), "--concurrency", itoa(p1Clients), "--timeout", "5m")
	after := scrape(t, svc.url)
	logf("geth burst: drained in %.1fs, gas %d, check %+v", r2.LastCompletedSeconds, r2.GasUsedMedian, r2.Check)
	logf("geth burst: accepted in %.1fs, blocks %d..%d", r2.AcceptSeconds, r2.FirstBlock, r2.LastBlock)
	logBlocks(ec, started, r2.FirstBlock, r2.LastBlock, logf)

	head, err := ec.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatalf("geth head: %v", err)
	}
	period := 1.0
	bound := math.NaN()
	if r2.GasUsedMedian > 0 {
		perBlock := head.GasLimit / r2.GasUsedMedian
		bound = math.Ceil(float64(p2N)/float64(perBlock)) * period
	}
	gaps, dups := math.NaN(), math.NaN()
	if r2.Check != nil {
		gaps, dups = float64(r2.Check.NonceGaps), float64(r2.Check.NonceDuplicates+r2.Check.HashDuplicates)
	}
	rpc := after.rpc - before.rpc
	completed := after.completed - before.completed
	rows = []benchtable.Row{
		{ID: "P2.drain", What: fmt.Sprintf("P2 drain of %d transfers from 1 account on geth --dev (first request to last completed)", p2N), Value: r2.LastCompletedSeconds, Unit: "s",
			Note: fmt.Sprintf("(accepted %.0f/s; check %s)", r2.AcceptedPerSec, verdict(r2))},
		{ID: "P2.bound", What: fmt.Sprintf("P2 chain bound: ⌈N / ⌊%d gas / %d gas per transfer⌋⌉ × %.0fs", head.GasLimit, r2.GasUsedMedian, period), Value: bound, Unit: "s"},
		{ID: "P2.ratio", What: "P2 drain / chain bound", Value: r2.LastCompletedSeconds / bound, Unit: "x", HasTarget: true, Target: 1.1},
		{ID: "P2.gaps", What: "P2 nonce gaps", Value: gaps, Unit: "", HasTarget: true, Target: 0},
		{ID: "P2.dups", What: "P2 duplicates (nonce or hash)", Value: dups, Unit: "", HasTarget: true, Target: 0},
		{ID: "P5.rpc", What: fmt.Sprintf("P5 JSON-RPC round trips per completed transfer (P2 burst: %.0f round trips, %.0f completed; a batch counts once)", rpc, completed),
			Value: rpc / completed, Unit: "", HasTarget: true, Target: 0.5, Note: "top: " + after.top(before, 4)},
	}
	d := completionDelays(t, svc, ec, r2.TokenID)
	logf("completion delay: %v", d)
	rows = append(rows,
		benchtable.Row{ID: "P3.visible.p50", What: fmt.Sprintf("P3 head → completed visible p50 (geth, %d transfers, 10 ms polling)", len(d)), Value: pct(d, 50), Unit: "ms"},
		benchtable.Row{ID: "P3.visible.max", What: "P3 head → completed visible max", Value: pct(d, 100), Unit: "ms", HasTarget: true, Target: 100},
	)

	// P4 RSS: the token of P2 on a second service; this one is done.
	var token struct {
		Address string `json:"address"`
	}
	if err := apiCall(&http.Client{Timeout: 10 * time.Second}, "GET", svc.url+"/tokens/"+r2.TokenID, svc.token, "", &token); err != nil {
		t.Fatalf("P2 token: %v", err)
	}
	svc.stop()
	return rows, benchIdle(t, b, netEnv, token.Address, logf)
}

// fundETH sends eth ether from the node's faucet key to addr and waits
// until it is mined.
func fundETH(t *testing.T, ec *ethclient.Client, node *gethtest.Node, addr common.Address, eth int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from := crypto.PubkeyToAddress(node.FaucetKey.PublicKey)
	nonce, err := ec.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatalf("faucet nonce: %v", err)
	}
	tip, err := ec.SuggestGasTipCap(ctx)
	if err != nil {
		t.Fatalf("tip: %v", err)
	}
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatalf("head: %v", err)
	}
	value := new(big.Int).Mul(big.NewInt(eth), big.NewInt(1e18))
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(gethtest.ChainID), Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: 21000, To: &addr, Value: value}), types.LatestSignerForChainID(big.NewInt(gethtest.ChainID)), node.FaucetKey)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	if err := ec.SendTransaction(ctx, tx); err != nil {
		t.Fatalf("send: %v", err)
	}
	for {
		if r, err := ec.TransactionReceipt(ctx, tx.Hash()); err == nil && r != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("funding %s not mined: %v", addr.Hex(), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// completionDelays sends p3Samples transfers one at a time and returns, for
// each, the time from the arrival of its block's head at a subscriber (the
// confirming head: the network has confirmation depth 0) to the first poll
// of GET /transactions/{id} that reads completed, in milliseconds.
func completionDelays(t *testing.T, svc *service, ec *ethclient.Client, tokenID string) []float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	heads := make(chan *types.Header, 64)
	sub, err := ec.SubscribeNewHead(ctx, heads)
	if err != nil {
		t.Fatalf("subscribe to heads: %v", err)
	}
	defer sub.Unsubscribe()
	var mu sync.Mutex
	arrived := map[uint64]time.Time{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by completionDelays, which cancels and waits for it
		defer wg.Done()
		for {
			select {
			case h := <-heads:
				now := time.Now()
				mu.Lock()
				arrived[h.Number.Uint64()] = now
				mu.Unlock()
			case <-sub.Err():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	defer wg.Wait()
	defer cancel()
	hc := &http.Client{Timeout: 10 * time.Second}
	var out []float64
	for i := range p3Samples {
		to := fmt.Sprintf("0x%040x", 0xbe00+i)
		var tx struct {
			ID string `json:"id"`
		}
		if err := apiCall(hc, "POST", svc.url+"/tokens/"+tokenID+"/transfers", svc.token, fmt.Sprintf(`{"to":%q,"value":"1"}`, to), &tx); err != nil {
			t.Fatalf("sample transfer: %v", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var v struct {
				Status      string  `json:"status"`
				BlockNumber *uint64 `json:"blockNumber"`
			}
			if err := apiCall(hc, "GET", svc.url+"/transactions/"+tx.ID, svc.token, "", &v); err != nil {
				t.Fatalf("poll: %v", err)
			}
			if v.Status == "completed" && v.BlockNumber != nil {
				seen := time.Now()
				mu.Lock()
				at, ok := arrived[*v.BlockNumber]
				mu.Unlock()
				if ok {
					out = append(out, float64(seen.Sub(at).Microseconds())/1000)
				}
				break
			}
			if v.Status == "failed" || time.Now().After(deadline) {
				t.Fatalf("sample transfer %s: %s", tx.ID, v.Status)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return out
}

// benchBreadth measures P4 on the embedded chain: 1 account × p4Depth
// beside p4Accounts × p4PerAcct (P4's RSS is benchIdle's).
func benchBreadth(t *testing.T, b bins, logf func(string, ...any)) []benchtable.Row {
	svc := startService(t, b.txengine, t.TempDir(), "TXENGINE_IN_FLIGHT="+inFlight, "TXENGINE_IDLE_ACCOUNT="+idleAccount)
	defer svc.stop()
	deep := runLoad(t, b.txload, svc.url, svc.token, "--n", itoa(p4Depth), "--concurrency", itoa(p1Clients))
	wide := runLoad(t, b.txload, svc.url, svc.token, "--n", itoa(p4Accounts*p4PerAcct), "--accounts", itoa(p4Accounts), "--concurrency", itoa(p1Clients))
	logf("depth %.0f/s, breadth %.0f/s (setup %.0fs)", deep.CompletedPerSec, wide.CompletedPerSec, wide.SetupSeconds)
	return []benchtable.Row{
		{ID: "P4.depth", What: fmt.Sprintf("P4 1 account × %d on the embedded chain (accepted/s; completed/s to the last)", p4Depth), Value: deep.CompletedPerSec, Unit: "/s",
			Note: fmt.Sprintf("(accepts %.0f/s; check %s)", deep.AcceptedPerSec, verdict(deep))},
		{ID: "P4.breadth", What: fmt.Sprintf("P4 %d accounts × %d (completed/s to the last; setup excluded)", p4Accounts, p4PerAcct), Value: wide.CompletedPerSec, Unit: "/s",
			Note: fmt.Sprintf("(accepts %.0f/s; setup %.0fs; check %s)", wide.AcceptedPerSec, wide.SetupSeconds, verdict(wide))},
		{ID: "P4.ratio", What: "P4 breadth / depth (completed/s)", Value: wide.CompletedPerSec / deep.CompletedPerSec, Unit: "x", HasTarget: true, Target: 0.8, AtLeast: true},
	}
}

// benchIdle measures P4's RSS: that of a service once idleAccounts
// distinct accounts have sent once and gone idle. The service is a second
// one against the geth node of netEnv (no in-process chain: the RSS is the
// engine's own), on a PostgreSQL cluster of its own with the durability
// defaults (it groups concurrent commits; the embedded store would take
// minutes for the account creations), without a faucet and with a
// passivation delay of idleAccount. It registers the ERC-20 at tokenAddr,
// creates the accounts and sends from each a transfer of 0 to idleTo; the
// accounts have no ETH, so each transfer goes through acceptance, its
// account actor and submitter and fails for lack of gas, and nothing
// reaches the node's pool. Once none is new, waiting or submitted and the
// passivation delay has passed (plus 10s), it reads the service's VmRSS.
// The row's note gives txengine_account_actors then (0: every actor
// passivated).
func benchIdle(t *testing.T, b bins, netEnv []string, tokenAddr string, logf func(string, ...any)) []benchtable.Row {
	n := idleAccounts(t)
	idle, err := time.ParseDuration(idleAccount)
	if err != nil {
		t.Fatalf("idleAccount %q: %v", idleAccount, err)
	}
	env := append(slices.Clip(netEnv), "TXENGINE_DATABASE_URL="+pgtest.StartDurableCluster(t).URL(), "TXENGINE_IDLE_ACCOUNT="+idleAccount)
	svc := startService(t, b.txengine, t.TempDir(), env...)
	defer svc.stop()
	// One keep-alive connection per client (the default keeps 2 idle per
	// host, and the other clients would dial anew for every request).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 2*p4IdleClients, 2*p4IdleClients
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: tr}

	var contract struct {
		ID string `json:"id"`
	}
	body := fmt.Sprintf(`{"name":"Bench Token","network":"geth","address":%q,"type":"erc20"}`, tokenAddr)
	if err := apiCall(hc, "PUT", svc.url+"/contracts", svc.token, body, &contract); err != nil {
		t.Fatalf("register the P2 token %s: %v", tokenAddr, err)
	}

	ids := make([]string, n)
	start := time.Now()
	if err := each(n, p4IdleClients, "accounts created", logf, func(i int) error {
		var a struct {
			ID string `json:"id"`
		}
		if err := apiCall(hc, "POST", svc.url+"/accounts", svc.token, "{}", &a); err != nil {
			return fmt.Errorf("account %d: %w", i, err)
		}
		ids[i] = a.ID
		return nil
	}); err != nil {
		t.Fatalf("P4 idle accounts: %v", err)
	}
	created := time.Since(start).Seconds()
	logf("P4 idle: %d accounts created in %.1fs (%.0f/s)", n, created, float64(n)/created)

	before := scrape(t, svc.url)
	sendStart := time.Now()
	if err := each(n, p4IdleClients, "sends accepted", logf, func(i int) error {
		var tx struct {
			ID string `json:"id"`
		}
		body := fmt.Sprintf(`{"to":%q,"value":"0","from":%q}`, idleTo, ids[i])
		if err := apiCall(hc, "POST", svc.url+"/tokens/"+contract.ID+"/transfers", svc.token, body, &tx); err != nil {
			return fmt.Errorf("transfer from account %d (%s): %w", i, ids[i], err)
		}
		return nil
	}); err != nil {
		t.Fatalf("P4 idle sends: %v", err)
	}
	sent := time.Since(sendStart).Seconds()
	logf("P4 idle: %d sends accepted in %.1fs (%.0f/s)", n, sent, float64(n)/sent)

	open, err := waitEnded(hc, svc, before, p4IdleTimeout, logf)
	if err != nil {
		t.Fatalf("P4 idle: %v", err)
	}
	ended := time.Since(sendStart).Seconds()
	after := scrape(t, svc.url)
	rssEnded := vmRSS(t, svc.PID())
	outcome := after.outcome(before)
	logf("P4 idle: every transfer ended %.1fs after the first send (%.1fs after the last accept): %s; open %s; RSS %.0f MB",
		ended, ended-sent, outcome, open, rssEnded)
	logf("P4 idle: %.0f JSON-RPC round trips (%.2f a transfer; top: %s)", after.rpc-before.rpc, (after.rpc-before.rpc)/float64(n), after.top(before, 5))
	var failed []struct {
		ID    string `json:"id"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := apiCall(hc, "GET", svc.url+"/transactions?status=failed&limit=1", svc.token, "", &failed); err != nil {
		t.Fatalf("P4 idle: failed transactions: %v", err)
	}
	if len(failed) > 0 && failed[0].Error != nil {
		logf("P4 idle: a failed transfer: %s: %s (%s)", failed[0].ID, failed[0].Error.Code, failed[0].Error.Message)
	}

	// Every account actor passivates idleAccount after its last message.
	time.Sleep(idle + 10*time.Second)
	rss := vmRSS(t, svc.PID())
	idleNow := scrape(t, svc.url)
	logf("P4 idle: RSS %.0f MB after %s idle; account actors running: %.0f (%.0f when the last transfer ended)",
		rss, idle+10*time.Second, idleNow.actors, after.actors)
	note := fmt.Sprintf("(%.0f account actors running, %.0f when the last transfer ended with %.0f MB; %s",
		idleNow.actors, after.actors, rssEnded, outcome)
	if open != "none" {
		note += "; NOT IDLE, still open: " + open
	}
	note += ")"
	return []benchtable.Row{
		{ID: "P4.rss", What: fmt.Sprintf("P4 RSS of txengine after %d distinct accounts each sent one transfer and went idle "+
			"(PostgreSQL store, geth --dev: no in-process chain; each transfer failed for lack of gas; %s passivation, read %s after the last ended)",
			n, idleAccount, idle+10*time.Second), Value: rss, Unit: "MB", HasTarget: true, Target: 300, Note: note},
		{ID: "P4.idle.create", What: fmt.Sprintf("P4 idle setup: accounts created (POST /accounts, %d clients)", p4IdleClients), Value: float64(n) / created, Unit: "/s"},
		{ID: "P4.idle.send", What: fmt.Sprintf("P4 idle setup: sends accepted (one transfer per account, %d clients)", p4IdleClients), Value: float64(n) / sent, Unit: "/s"},
		{ID: "P4.idle.ended", What: "P4 idle setup: first send → every transfer ended", Value: ended, Unit: "s",
			Note: fmt.Sprintf("(%.0fs after the last accept)", ended-sent)},
	}
}

// idleAccounts is the number of accounts of P4's RSS row: p4Idle, or
// TXENGINE_BENCH_IDLE_ACCOUNTS for trial runs.
func idleAccounts(t *testing.T) int {
	v := os.Getenv("TXENGINE_BENCH_IDLE_ACCOUNTS")
	if v == "" {
		return p4Idle
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("TXENGINE_BENCH_IDLE_ACCOUNTS: %q is not a positive integer", v)
	}
	return n
}

// each runs fn(0..n-1) on workers goroutines, which it waits for, and logs
// every 10,000 done as "<done> <what>". It returns the first error; the
// indices not yet started are then skipped.
func each(n, workers int, what string, logf func(string, ...any), fn func(i int) error) error {
	var (
		next, done atomic.Int64
		mu         sync.Mutex
		first      error
		wg         sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() { // owned by each, which waits for it
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n)) // skip the rest
					return
				}
				if d := done.Add(1); d%10000 == 0 {
					logf("P4 idle: %d %s (%.0f/s)", d, what, float64(d)/time.Since(start).Seconds())
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// waitEnded polls svc until none of its transactions is new, waiting or
// submitted, logging the transactions ended since before every 10s; it
// returns "none", or after timeout how many each list still holds (a
// page's worth at most).
func waitEnded(hc *http.Client, svc *service, before metrics, timeout time.Duration, logf func(string, ...any)) (string, error) {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		var open []json.RawMessage
		if err := apiCall(hc, "GET", svc.url+"/transactions?status=new,waiting,submitted&limit=1", svc.token, "", &open); err != nil {
			return "", fmt.Errorf("open transactions: %w", err)
		}
		if len(open) == 0 {
			return "none", nil
		}
		if time.Now().After(deadline) {
			var parts []string
			for _, st := range []string{"new", "waiting", "submitted"} {
				var txs []json.RawMessage
				if err := apiCall(hc, "GET", svc.url+"/transactions?status="+st+"&limit=1000", svc.token, "", &txs); err != nil {
					return "", fmt.Errorf("%s transactions: %w", st, err)
				}
				parts = append(parts, fmt.Sprintf("%d %s", len(txs), st))
			}
			logf("P4 idle: transfers still open after %s: %s", timeout, strings.Join(parts, ", "))
			return strings.Join(parts, ", "), nil
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			if m, err := scrapeErr(svc.url); err == nil {
				logf("P4 idle: %s", m.outcome(before))
			}
		}
		time.Sleep(time.Second)
	}
}

// loadReport is the part of txload's JSON report the suite reads.
type loadReport struct {
	TokenID              string  `json:"tokenId"`
	Pool                 string  `json:"pool"`
	Accepted             int     `json:"accepted"`
	AcceptedPerSec       float64 `json:"acceptedPerSec"`
	SetupSeconds         float64 `json:"setupSeconds"`
	AcceptSeconds        float64 `json:"acceptSeconds"`
	FirstBlock           uint64  `json:"firstBlock"`
	LastBlock            uint64  `json:"lastBlock"`
	LastCompletedSeconds float64 `json:"lastCompletedSeconds"`
	CompletedPerSec      float64 `json:"completedPerSec"`
	GasUsedMedian        uint64  `json:"gasUsedMedian"`
	Blocks               []struct {
		Number       uint64  `json:"number"`
		Transfers    int     `json:"transfers"`
		EndedSeconds float64 `json:"endedSeconds"`
	} `json:"blocks"`
	LatencyMs struct {
		P50, P90, P99, Max float64
	} `json:"acceptLatencyMs"`
	Errors map[string]int `json:"errors"`
	Check  *struct {
		OK                                                    bool
		Completed, NonceGaps, NonceDuplicates, HashDuplicates int
		BalanceMismatches                                     int
		Problems                                              []string
	} `json:"check"`
	WaitError string `json:"waitError"`
}

func verdict(r loadReport) string {
	switch {
	case r.Check == nil:
		return "not run"
	case r.Check.OK:
		return "OK"
	default:
		return fmt.Sprintf("FAILED: %d completed, %d gaps, %d dups, %d balance mismatches", r.Check.Completed, r.Check.NonceGaps, r.Check.NonceDuplicates+r.Check.HashDuplicates, r.Check.BalanceMismatches)
	}
}

func errNote(r loadReport) string {
	if len(r.Errors) == 0 {
		return ""
	}
	raw, _ := json.Marshal(r.Errors)
	return "(errors " + string(raw) + ")"
}

// runLoad runs txload --json against url and decodes its report; a failed
// check is reported in the table, not fatal.
func runLoad(t *testing.T, txload, url, token string, args ...string) loadReport {
	t.Helper()
	r, err := loadRun(txload, url, token, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// loadRun is runLoad for goroutines other than the test's: the error
// instead of t.Fatal.
func loadRun(txload, url, token string, args ...string) (loadReport, error) {
	cmd := exec.Command(txload, append([]string{"--url", url, "--token", token, "--json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var r loadReport
	if jerr := json.Unmarshal(stdout.Bytes(), &r); jerr != nil {
		return r, fmt.Errorf("txload %v: %v; %v\n%s", args, err, jerr, stderr.String())
	}
	if r.WaitError != "" {
		fmt.Fprintf(os.Stderr, "bench: txload %v: %s\n", args, r.WaitError)
	}
	return r, nil
}

// service is a running txengine.
type service struct {
	*servicetest.Process
	url, token string
}

// deployToken deploys an ERC-20 named name (symbol, supply 10^24 base
// units) on the network geth with the service's own `token deploy`, in the
// data dir dataDir, with the service's environment env.
func deployToken(t *testing.T, bin, dataDir, name, symbol string, env []string) {
	t.Helper()
	deploy := exec.Command(bin, "token", "deploy", "--network", "geth", "--name", name, "--symbol", symbol, "--supply", "1000000000000000000000000")
	deploy.Env = append(append(os.Environ(), "TXENGINE_DATA_DIR="+dataDir), env...)
	if out, err := deploy.CombinedOutput(); err != nil {
		t.Fatalf("token deploy: %v\n%s", err, out)
	}
}

// startService starts txengine serve on dataDir (embedded default unless
// env says otherwise) and waits for its banner.
func startService(t *testing.T, bin, dataDir string, env ...string) *service {
	t.Helper()
	opts := servicetest.Options{
		Env: append([]string{"TXENGINE_LISTEN=127.0.0.1:0", "TXENGINE_DATA_DIR=" + dataDir,
			"TXENGINE_DEV_BLOCK_PERIOD=1s", "TXENGINE_LOG_LEVEL=warn"}, env...),
		MaxLogs: 1 << 20,
	}
	if lvl := os.Getenv("TXENGINE_BENCH_LOG_LEVEL"); lvl != "" { // with TXENGINE_BENCH_SERVICE_LOG
		opts.Env = append(opts.Env, "TXENGINE_LOG_LEVEL="+lvl)
	}
	if p := os.Getenv("TXENGINE_BENCH_SERVICE_LOG"); p != "" {
		// Keep the service's output (appended, one file for every service).
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		opts.Output = f
	}
	p, err := servicetest.Start(bin, []string{"serve"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &service{Process: p, url: p.URL, token: p.Token}
	t.Cleanup(s.stop)
	return s
}

// stop ends the service (SIGKILL: the benchmark needs no graceful drain)
// and waits for it; a no-op the second time.
func (s *service) stop() { s.Kill() }

// ceilingServer is the running bench/ceiling program.
type ceilingServer struct {
	cmd *exec.Cmd
	url string
}

func startCeiling(t *testing.T, bin string) *ceilingServer {
	t.Helper()
	cmd := exec.Command(bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ceiling: %v", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("ceiling: %v", err)
	}
	c := &ceilingServer{cmd: cmd, url: strings.TrimSpace(strings.TrimPrefix(line, "listening on "))}
	t.Cleanup(c.stop)
	return c
}

func (c *ceilingServer) stop() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

// metrics are the counters the suite reads from /metrics.
type metrics struct {
	rpc       float64
	accepted  float64
	completed float64
	byMethod  map[string]float64
	failed    map[string]float64 // by error code
	actors    float64            // txengine_account_actors: account actors running
}

// scrape reads txengine_rpc_requests_total (all networks, methods and
// outcomes) and txengine_transactions_{accepted,completed,failed}_total
// from /metrics.
func scrape(t *testing.T, url string) metrics {
	t.Helper()
	m, err := scrapeErr(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return m
}

// scrapeErr is scrape for goroutines and loops that must not fail the test.
func scrapeErr(url string) (metrics, error) {
	res, err := http.Get(url + "/metrics")
	if err != nil {
		return metrics{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return metrics{}, fmt.Errorf("read %s/metrics: %w", url, err)
	}
	m := metrics{byMethod: map[string]float64{}, failed: map[string]float64{}}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "txengine_account_actors "); ok {
			m.actors, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			continue
		}
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, val, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "txengine_rpc_requests_total":
			m.rpc += v
			m.byMethod[label(labels, "method")] += v
		case "txengine_transactions_accepted_total":
			m.accepted += v
		case "txengine_transactions_completed_total":
			m.completed += v
		case "txengine_transactions_failed_total":
			m.failed[label(labels, "code")] += v
		}
	}
	return m, nil
}

// outcome describes the transactions accepted since before and how they
// ended: "N accepted, C completed, F failed (code n, ...)".
func (m metrics) outcome(before metrics) string {
	var codes []string
	failed := 0.0
	for code, v := range m.failed {
		if d := v - before.failed[code]; d > 0 {
			failed += d
			codes = append(codes, fmt.Sprintf("%s %.0f", code, d))
		}
	}
	slices.Sort(codes)
	return fmt.Sprintf("%.0f accepted, %.0f completed, %.0f failed (%s)", m.accepted-before.accepted, m.completed-before.completed, failed, strings.Join(codes, ", "))
}

// top lists the n methods with the most requests since before.
func (m metrics) top(before metrics, n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range m.byMethod {
		if d := v - before.byMethod[k]; d > 0 {
			all = append(all, kv{k, d})
		}
	}
	for i := range all { // a few entries: insertion sort, largest first
		for j := i; j > 0 && all[j].v > all[j-1].v; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	var parts []string
	for i := 0; i < len(all) && i < n; i++ {
		parts = append(parts, fmt.Sprintf("%s %.0f", all[i].k, all[i].v))
	}
	return strings.Join(parts, ", ")
}

func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// apiCall sends one request with token and a raw JSON body ("" for none)
// to url and decodes the data of a 2xx answer into out.
func apiCall(hc *http.Client, method, url, token, body string, out any) error {
	req := servicetest.Request{Method: method, Token: token}
	if body != "" {
		req.Body = body
	}
	r, _, err := servicetest.Call(hc, url, req)
	if err != nil {
		return err
	}
	if err := r.Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	return nil
}

// vmRSS returns the resident set of pid in MB from /proc/<pid>/status.
func vmRSS(t *testing.T, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Logf("read RSS: %v", err)
		return math.NaN()
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return math.NaN()
}

// pct returns the p-th percentile (nearest rank) of ms, NaN for none.
func pct(ms []float64, p float64) float64 {
	if len(ms) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), ms...)
	for i := range s {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

func itoa(n int) string { return strconv.Itoa(n) }

// machine describes where the suite ran.
func machine() string {
	model := ""
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s %s/%s", runtime.NumCPU(), model, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

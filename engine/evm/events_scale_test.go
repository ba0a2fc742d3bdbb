package evm

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/internal/gethtest"
)

// tickerABI is the ABI of tickerCode's contract: each call emits Tick()
// tickerLogs times.
const tickerABI = `[{"type":"event","name":"Tick","anonymous":false,"inputs":[]}]`

const tickerLogs = 10

// tickerCode is the creation code of a contract whose every call emits
// Tick() tickerLogs times: PUSH32 topic, then per log DUP1 PUSH0 PUSH0
// LOG1, then STOP; the creation prefix copies and returns that runtime.
func tickerCode() []byte {
	topic := crypto.Keccak256([]byte("Tick()"))
	runtime := append([]byte{0x7f}, topic...)
	for range tickerLogs {
		runtime = append(runtime, 0x80, 0x5f, 0x5f, 0xa1)
	}
	runtime = append(runtime, 0x00)
	n := byte(len(runtime))
	initCode := []byte{0x60, n, 0x60, 10, 0x5f, 0x39, 0x60, n, 0x5f, 0xf3}
	return append(initCode, runtime...)
}

// countingChain counts the node calls of engine.ContractEvents.
type countingChain struct {
	engine.IndexChain
	headers, logs atomic.Int64
}

func (c *countingChain) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	c.headers.Add(1)
	return c.IndexChain.HeaderByNumber(ctx, n)
}

func (c *countingChain) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	c.logs.Add(1)
	return c.IndexChain.FilterLogs(ctx, q)
}

// TestEventsScale (TXENGINE_BENCH=events; TXENGINE_BENCH_EVENT_BLOCKS,
// default 10,000 blocks of tickerLogs events each;
// TXENGINE_BENCH_EVENT_NODE=geth for geth --dev over HTTP instead of the
// simulated backend over a unix socket): a contract's events, read over
// JSON-RPC, paged through with engine.ContractEvents in pages of 1,000
// from block 0, as GET /contracts/{id}/events with no query and its next
// cursors does. It checks that every event comes exactly once in chain
// order and reports the wall time and the node calls (round trips);
// TXENGINE_BENCH_EVENT_PAGES=1 logs each page.
func TestEventsScale(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "events" {
		t.Skip("benchmark: TXENGINE_BENCH=events runs it (flock /work/wt/bench.lock on the shared machine)")
	}
	blocks := 10_000
	if v := os.Getenv("TXENGINE_BENCH_EVENT_BLOCKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("TXENGINE_BENCH_EVENT_BLOCKS=%q: want a positive integer", v)
		}
		blocks = n
	}
	ctx := context.Background()
	built := time.Now()
	var client *Client
	var addr common.Address
	nodeName := os.Getenv("TXENGINE_BENCH_EVENT_NODE")
	switch nodeName {
	case "", "sim":
		nodeName = "simulated backend (unix socket)"
		client, addr = tickerOnSim(ctx, t, blocks)
	case "geth":
		nodeName = "geth --dev (HTTP)"
		client, addr = tickerOnGeth(ctx, t, blocks)
	default:
		t.Fatalf("TXENGINE_BENCH_EVENT_NODE=%q: sim or geth", nodeName)
	}
	defer client.Close()
	t.Logf("chain built on %s: %d blocks of %d events in %v", nodeName, blocks, tickerLogs, time.Since(built).Round(time.Millisecond))
	parsed, err := abi.JSON(strings.NewReader(tickerABI))
	if err != nil {
		t.Fatal(err)
	}
	chain := &countingChain{IndexChain: client}
	start := time.Now()
	var q engine.EventQuery
	total, pages, firstBlock := 0, 0, uint64(0)
	prev := engine.EventView{BlockNumber: 0}
	for {
		page, err := engine.ContractEvents(ctx, chain, addr, &parsed, q)
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if os.Getenv("TXENGINE_BENCH_EVENT_PAGES") != "" {
			t.Logf("page %d: %d events, %d eth_getLogs calls, next %+v", pages, len(page.Events), page.Calls, page.Next)
		}
		for _, ev := range page.Events {
			if total > 0 && (ev.BlockNumber < prev.BlockNumber || ev.BlockNumber == prev.BlockNumber && ev.LogIndex <= prev.LogIndex) {
				t.Fatalf("event %d at %d/%d after %d/%d: not in chain order or twice", total, ev.BlockNumber, ev.LogIndex, prev.BlockNumber, prev.LogIndex)
			}
			if total == 0 {
				firstBlock = ev.BlockNumber
			}
			prev = ev
			total++
		}
		if page.Next == nil {
			break
		}
		q.At = page.Next
	}
	elapsed := time.Since(start)
	if want := blocks * tickerLogs; total != want {
		t.Fatalf("%d events read, want %d", total, want)
	}
	calls := chain.headers.Load() + chain.logs.Load()
	fmt.Printf("events scale (%s): %d events in %d blocks (%d..%d): %d pages in %v (%.1f ms/page); node calls %d (eth_getLogs %d, head %d), %.2f per page\n",
		nodeName, total, blocks, firstBlock, prev.BlockNumber, pages, elapsed.Round(time.Millisecond), float64(elapsed.Milliseconds())/float64(pages),
		calls, chain.logs.Load(), chain.headers.Load(), float64(calls)/float64(pages))
}

// tickerSigner signs the transactions that make a ticker chain.
func tickerTx(key *ecdsa.PrivateKey, nonce uint64, to *common.Address, data []byte) *types.Transaction {
	return types.MustSignNewTx(key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9),
		Gas: 200_000, To: to, Data: data})
}

// tickerOnSim deploys the ticker on a simulated backend and calls it once
// per block for blocks blocks; it returns a client over the backend's
// unix socket.
func tickerOnSim(ctx context.Context, t *testing.T, blocks int) (*Client, common.Address) {
	key := mustKey(t)
	from := crypto.PubkeyToAddress(key.PublicKey)
	ipc := filepath.Join(t.TempDir(), "sim.ipc")
	sim := simulated.NewBackend(types.GenesisAlloc{from: {Balance: ether(1000)}},
		func(nodeConf *node.Config, _ *ethconfig.Config) { nodeConf.IPCPath = ipc })
	t.Cleanup(func() { _ = sim.Close() })
	addr := crypto.CreateAddress(from, 0)
	for i := 0; i <= blocks; i++ {
		to, data := &addr, []byte(nil)
		if i == 0 {
			to, data = nil, tickerCode()
		}
		if err := sim.Client().SendTransaction(ctx, tickerTx(key, uint64(i), to, data)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		sim.Commit()
	}
	client, err := Dial(ctx, ipc)
	if err != nil {
		t.Fatal(err)
	}
	return client, addr
}

// tickerOnGeth deploys the ticker on geth --dev (mining on demand) and
// calls it blocks times, each sent once the previous one is mined (one
// call a block); it returns a client over HTTP.
func tickerOnGeth(ctx context.Context, t *testing.T, blocks int) (*Client, common.Address) {
	n := gethtest.Start(t, gethtest.Period(0))
	client, err := Dial(ctx, n.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	key := n.FaucetKey
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	addr := crypto.CreateAddress(from, nonce)
	for i := 0; i <= blocks; i++ {
		to, data := &addr, []byte(nil)
		if i == 0 {
			to, data = nil, tickerCode()
		}
		tx := tickerTx(key, nonce+uint64(i), to, data)
		if err := client.SendTransaction(ctx, tx); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			r, err := client.TransactionReceipt(ctx, tx.Hash())
			if err == nil && r.Status == types.ReceiptStatusSuccessful {
				break
			}
			if err == nil || time.Now().After(deadline) {
				t.Fatalf("transaction %d: not mined in 10 s, or failed (%v)", i, err)
			}
		}
	}
	return client, addr
}

package evm

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/rpcproxy"
)

// batchFixture is a geth --dev with a token deployed, the client that
// talks to it directly (it batches: the reference), and what the Batch*
// methods are asked.
type batchFixture struct {
	node   *gethtest.Node
	direct *Client
	key    *ecdsa.PrivateKey
	owner  common.Address
	tk     token
	calls  []engine.CallRequest
	quers  []engine.BalanceQuery
	msgs   []ethereum.CallMsg
	addrs  []common.Address
	reads  []engine.TokenRead
	signer types.Signer
}

func newBatchFixture(ctx context.Context, t *testing.T) *batchFixture {
	t.Helper()
	node := gethtest.Start(t, gethtest.Period(0))
	direct, err := Dial(ctx, node.HTTPURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	f := &batchFixture{node: node, direct: direct, key: node.FaucetKey, owner: crypto.PubkeyToAddress(node.FaucetKey.PublicKey)}
	f.tk = deployToken(ctx, t, direct, f.key, ether(1_000_000))
	other := common.HexToAddress("0xbeef")
	f.calls = []engine.CallRequest{
		{To: f.tk.addr, Data: f.tk.pack("balanceOf", f.owner)},
		{To: f.tk.addr, Data: f.tk.pack("symbol")},
		{From: other, To: f.tk.addr, Data: f.tk.pack("transfer", f.owner, big.NewInt(1))}, // reverts
	}
	f.quers = []engine.BalanceQuery{{ETH: true, Holder: f.owner}, {Token: f.tk.addr, Holder: f.owner}, {ETH: true, Holder: other}}
	f.msgs = []ethereum.CallMsg{
		{From: f.owner, To: &f.tk.addr, Data: f.tk.pack("transfer", other, big.NewInt(5))},
		{From: other, To: &f.tk.addr, Data: f.tk.pack("transfer", f.owner, big.NewInt(5))}, // reverts
	}
	f.addrs = []common.Address{f.owner, other}
	f.reads = []engine.TokenRead{{Address: f.tk.addr}, {Address: other}}
	id, err := direct.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.signer = types.LatestSignerForChainID(id)
	return f
}

// readCalls is how many calls readAll makes: 3 eth_call, 3 balances, 2
// estimates, 2 nonces, 2 tokens of 4 getters.
const readCalls = 3 + 3 + 2 + 2 + 2*4

// readAll is what a client answers to every Batch* read of the fixture
// (five batches), in a comparable form (errors as their text); before,
// when not nil, runs before each batch.
func (f *batchFixture) readAll(ctx context.Context, t *testing.T, c *Client, before func()) []string {
	t.Helper()
	var out []string
	add := func(what string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, fmt.Sprintf("%s: %v", what, v))
	}
	if before == nil {
		before = func() {}
	}
	before()
	res, err := c.BatchCall(ctx, f.calls)
	add("BatchCall", errText(res), err)
	before()
	bals, errs, err := c.BatchBalances(ctx, f.quers)
	add("BatchBalances", fmt.Sprint(bals, errs), err)
	before()
	gas, errs, err := c.BatchEstimateGas(ctx, f.msgs)
	add("BatchEstimateGas", fmt.Sprint(gas, errs), err)
	before()
	nonces, errs, err := c.BatchNonces(ctx, f.addrs)
	add("BatchNonces", fmt.Sprint(nonces, errs), err)
	before()
	infos, err := engine.ReadTokenInfos(ctx, c, f.reads)
	add("ReadTokenInfos", fmt.Sprint(infos.Infos, infos.Errs), err)
	return out
}

func errText(res []engine.CallResult) string {
	var b strings.Builder
	for _, r := range res {
		fmt.Fprintf(&b, "[%x %v] ", r.Data, r.Err)
	}
	return b.String()
}

// txs signs n transfers of 1 wei to 0xbeef from the fixture's key, from
// its next nonce on, and one more at a nonce already used (refused).
func (f *batchFixture) txs(ctx context.Context, t *testing.T, n int) []*types.Transaction {
	t.Helper()
	nonce, err := f.direct.PendingNonceAt(ctx, f.owner)
	if err != nil {
		t.Fatal(err)
	}
	price, err := f.direct.SuggestGasPrice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	to := common.HexToAddress("0xbeef")
	var out []*types.Transaction
	for i := range n + 1 {
		nn := nonce + uint64(i)
		if i == n {
			nn = 0 // used by the token's deployment
		}
		tx, err := types.SignNewTx(f.key, f.signer, &types.LegacyTx{Nonce: nn, To: &to, Value: big.NewInt(1), Gas: 21_000, GasPrice: new(big.Int).Mul(price, big.NewInt(2))})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tx)
	}
	return out
}

// checkSent sends txs through c and checks that all but the last went in
// (in order) and the last was refused as a used nonce.
func (f *batchFixture) checkSent(ctx context.Context, t *testing.T, c *Client, txs []*types.Transaction) {
	t.Helper()
	errs, err := c.BatchSendTransactions(ctx, txs)
	if err != nil {
		t.Fatalf("BatchSendTransactions: %v", err)
	}
	for i, e := range errs[:len(txs)-1] {
		if e != nil {
			t.Fatalf("transaction %d (nonce %d): %v", i, txs[i].Nonce(), e)
		}
	}
	if k := engine.ClassifyNodeError(errs[len(txs)-1]); k != engine.NodeNonceTooLow {
		t.Fatalf("used nonce: %v (%s), want nonce too low", errs[len(txs)-1], k)
	}
	for _, tx := range txs[:len(txs)-1] {
		if _, err := WaitMined(ctx, f.direct, tx.Hash()); err != nil {
			t.Fatalf("transaction %d not mined: %v", tx.Nonce(), err)
		}
	}
}

// logCapture collects the warnings of a client.
type logCapture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logCapture) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logCapture) warnings() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	return out
}

// apiKey is a key-like path segment, as hosted endpoints put in URLs.
const apiKey = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"

// dialProxied dials the node through a new proxy that refuses batches as
// how says, at a URL holding an API key, logging into a logCapture.
func (f *batchFixture) dialProxied(ctx context.Context, t *testing.T, how rpcproxy.BatchRefusal, opts ...Option) (*Client, *rpcproxy.Proxy, *logCapture) {
	t.Helper()
	p := rpcproxy.Start(t, f.node.HTTPURL)
	p.RefuseBatches(how)
	logs := &logCapture{}
	opts = append(opts, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	c, err := Dial(ctx, p.URL()+"/v3/"+apiKey, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, p, logs
}

// forget makes c take its node to batch again.
func forget(c *Client) {
	c.batches.mu.Lock()
	defer c.batches.mu.Unlock()
	c.batches.refusedUntil = time.Time{}
}

// requests returns the requests, batches and refused batches p saw since
// its last call, and resets its counts.
func requests(p *rpcproxy.Proxy) (int, int, int) {
	s := p.Stats()
	p.ResetStats()
	return s.Requests, s.Batches, s.RefusedBatches
}

// TestBatchesRefused: against geth --dev behind a proxy that refuses
// JSON-RPC batches as hosted endpoints do (HTTP 400, an error object in
// place of the array, an array without the answers), every Batch* method
// and ReadTokenInfos answer as the node answers batches; the first batch
// is refused and its calls go one each, later batches go one call each
// directly (no batch at the proxy), with one warning per switch that does
// not show the URL's key; 10 minutes on, a batch is tried again.
func TestBatchesRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := newBatchFixture(ctx, t)
	want := f.readAll(ctx, t, f.direct, nil)

	batching, bp, _ := f.dialProxied(ctx, t, rpcproxy.BatchesPass)
	if got := f.readAll(ctx, t, batching, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("through a batching proxy:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	reqs, batches, _ := requests(bp)
	t.Logf("batching node: %d requests, %d batches for %d calls", reqs, batches, readCalls)
	if reqs != 5 || batches != 5 {
		t.Fatalf("batching node: %d requests, %d batches; want 5 batches", reqs, batches)
	}
	for name, how := range map[string]rpcproxy.BatchRefusal{
		"http400": rpcproxy.BatchHTTP400, "errorObject": rpcproxy.BatchErrorObject, "errorArray": rpcproxy.BatchErrorArray,
	} {
		t.Run(name, func(t *testing.T) {
			c, p, logs := f.dialProxied(ctx, t, how)
			want := f.readAll(ctx, t, f.direct, nil) // the sends below move on the state
			// Each batch refused once (forgotten before each): one refused
			// batch, then one request per call.
			if got := f.readAll(ctx, t, c, func() { forget(c) }); !reflect.DeepEqual(got, want) {
				t.Fatalf("first reads:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			reqs, batches, refused := requests(p)
			t.Logf("refusing node, first batches: %d requests, %d batches (%d refused) for %d calls", reqs, batches, refused, readCalls)
			if refused != 5 || batches != 5 || reqs != 5+readCalls {
				t.Fatalf("first reads: %d requests, %d batches, %d refused; want 5 refused batches + %d single calls", reqs, batches, refused, readCalls)
			}
			if w := logs.warnings(); len(w) != 5 || strings.Contains(w[0], apiKey) || !strings.Contains(w[0], "REDACTED") {
				t.Fatalf("warnings: %q; want 5 (one per switch), the key redacted", w)
			}
			// Remembered: no batch any more.
			if got := f.readAll(ctx, t, c, nil); !reflect.DeepEqual(got, want) {
				t.Fatalf("later reads:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			reqs, batches, _ = requests(p)
			t.Logf("refusing node, later batches: %d requests, %d batches for %d calls", reqs, batches, readCalls)
			if batches != 0 || reqs != readCalls {
				t.Fatalf("later reads: %d requests, %d batches; want %d single calls, no batch", reqs, batches, readCalls)
			}
			// Transactions, one call each in order: remembered, then refused.
			f.checkSent(ctx, t, c, f.txs(ctx, t, 3))
			if reqs, batches, _ = requests(p); batches != 0 || reqs != 4 {
				t.Fatalf("sends: %d requests, %d batches; want 4 single calls", reqs, batches)
			}
			forget(c)
			f.checkSent(ctx, t, c, f.txs(ctx, t, 3))
			if reqs, batches, refused = requests(p); refused != 1 || reqs != 5 {
				t.Fatalf("sends after a refusal: %d requests, %d refused; want 1 refused batch + 4 single calls", reqs, refused)
			}
			// 10 minutes on, a batch again; it goes through once the node
			// takes batches.
			c.batches.now = func() time.Time { return time.Now().Add(noBatchFor + time.Second) }
			p.RefuseBatches(rpcproxy.BatchesPass)
			if _, _, err := c.BatchNonces(ctx, f.addrs); err != nil {
				t.Fatal(err)
			}
			if reqs, batches, _ = requests(p); reqs != 1 || batches != 1 {
				t.Fatalf("%v later: %d requests, %d batches; want one batch", noBatchFor, reqs, batches)
			}
			if w := logs.warnings(); len(w) != 6 {
				t.Fatalf("%d warnings, want 6", len(w))
			}
		})
	}
}

// TestBatchFailuresNotRefusals: a batch that fails for a timeout, a reset
// connection, a gateway's 502 (node down) or a refusal that single calls
// do not confirm (the node is down too) fails as a whole after one request
// (the refusal: two, the batch and one single call) and leaves the client
// batching.
func TestBatchFailuresNotRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newBatchFixture(ctx, t)
	check := func(name string, c *Client, p *rpcproxy.Proxy, logs *logCapture, wantReqs int) {
		t.Helper()
		p.ResetStats()
		if _, _, err := c.BatchNonces(ctx, f.addrs); err == nil {
			t.Fatalf("%s: no error", name)
		}
		reqs, _, _ := requests(p)
		if reqs != wantReqs || c.batches.refused() || len(logs.warnings()) != 0 {
			t.Fatalf("%s: %d requests, batches refused %v, warnings %q; want %d request(s), still batching, no warning",
				name, reqs, c.batches.refused(), logs.warnings(), wantReqs)
		}
	}
	c, p, logs := f.dialProxied(ctx, t, rpcproxy.BatchesPass, WithCallTimeout(300*time.Millisecond))
	p.Delay("", 2*time.Second)
	check("timeout", c, p, logs, 1)
	p.ClearFaults()
	p.ResetNext(1)
	check("reset", c, p, logs, 1)
	p.ClearFaults()
	if _, _, err := c.BatchNonces(ctx, f.addrs); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
	if reqs, batches, _ := requests(p); reqs != 1 || batches != 1 {
		t.Fatalf("after the faults: %d requests, %d batches; want one batch", reqs, batches)
	}

	down := rpcproxy.Start(t, "http://127.0.0.1:1") // a gateway whose node is down: 502
	dlogs := &logCapture{}
	dc, err := Dial(ctx, down.URL(), WithLogger(slog.New(slog.NewTextHandler(dlogs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	check("502", dc, down, dlogs, 1)
	down.RefuseBatches(rpcproxy.BatchHTTP400)
	check("refused, singles down too", dc, down, dlogs, 2)
}

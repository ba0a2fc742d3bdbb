package prom

import (
	"context"
	"errors"
	"math/big"
	"strconv"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txengine/txengine/engine"
)

// testAccount is the account the tests report for.
var testAccount = engine.MetricAccount{ID: "a", Address: common.HexToAddress("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed")}

// numbered is account "acct<i>" with an address of its own.
func numbered(i int) engine.MetricAccount {
	return engine.MetricAccount{ID: "acct" + strconv.Itoa(i), Address: common.BigToAddress(big.NewInt(int64(1000 + i)))}
}

// exercise makes every vector of m emit a series: each per-account call for
// testAccount, a head, a reorg, a request, a 429 and a JSON-RPC call.
func exercise(t *testing.T, m *Metrics) {
	t.Helper()
	exerciseAccount(m, testAccount)
	m.Head("dev", 1, time.Now())
	m.Reorg("dev", 2)
	m.ObserveHTTP("GET", "/x", 200, time.Millisecond)
	m.RateLimited("second")
	_, _ = m.InstrumentChain("dev", fakeChain{}).HeaderByNumber(t.Context(), nil)
	m.SubscriptionPoll("dev", engine.SubscriptionResult{Subscriptions: 3, Lag: 2, Delivered: 5, Retracted: 1}, nil)
	m.CallbackOutcome("event", "delivered")
	exercisePool(m, "p1")
}

// exerciseAccount makes every per-account call for a on network dev.
func exerciseAccount(m *Metrics, a engine.MetricAccount) {
	m.TxAccepted(a, "dev", 1)
	m.TxSubmitted(a, "dev")
	m.TxCompleted(a, "dev", time.Second)
	m.TxFailed(a, "dev", engine.TxReverted)
	m.AccountLoad(a, "dev", 1, 1)
	m.NextNonce(a, "dev", 1)
	lowest, since := uint64(1), uint64(3)
	m.NonceHealth(a, "dev", engine.NonceHealth{ChainNonce: 1, ChainKnown: true, NextNonce: 2, NextKnown: true,
		LowestInFlight: &lowest, StuckSince: &since, StuckBlocks: 4, DoctorBlocks: 15})
	m.NonceRepaired(a, "dev", engine.NonceRepairGapFilled)
}

func newTest(t *testing.T, cfg Config) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// TestNamesFollowConventions lints every metric (with the Go and process
// collectors, as serve registers them) with Prometheus' own linter.
func TestNamesFollowConventions(t *testing.T) {
	m, reg := newTest(t, Config{})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exercise(t, m)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestAccountCap: the first MaxAccounts accounts get their own series, the
// rest share account="other" (and have no next nonce series).
func TestAccountCap(t *testing.T) {
	m, reg := newTest(t, Config{MaxAccounts: 3})
	for i := 0; i < 10; i++ {
		m.TxAccepted(numbered(i), "dev", 1)
		m.NextNonce(numbered(i), "dev", 5)
		m.AccountLoad(numbered(i), "dev", 2, 0)
	}
	if n := testutil.CollectAndCount(reg, "txengine_transactions_accepted_total"); n != 4 {
		t.Errorf("accepted series: %d, want 3 accounts + other", n)
	}
	if v := testutil.ToFloat64(m.accepted.WithLabelValues(OtherAccount, OtherAccount, "dev")); v != 7 {
		t.Errorf("other accepted = %v, want 7", v)
	}
	if v := testutil.ToFloat64(m.queued.WithLabelValues(OtherAccount, OtherAccount, "dev")); v != 14 {
		t.Errorf("other queue depth = %v, want 14", v)
	}
	if n := testutil.CollectAndCount(reg, "txengine_account_next_nonce"); n != 3 {
		t.Errorf("next nonce series: %d, want 3", n)
	}
	// The tracked accounts carry their EIP-55 address; the same account
	// seen again keeps its one series.
	m.TxAccepted(numbered(1), "dev", 1)
	if v := testutil.ToFloat64(m.accepted.WithLabelValues("acct1", numbered(1).Address.Hex(), "dev")); v != 2 {
		t.Errorf("acct1 accepted = %v, want 2", v)
	}
	// Deltas bring a shared gauge back to zero.
	for i := 3; i < 10; i++ {
		m.AccountLoad(numbered(i), "dev", -2, 0)
	}
	if v := testutil.ToFloat64(m.queued.WithLabelValues(OtherAccount, OtherAccount, "dev")); v != 0 {
		t.Errorf("other queue depth = %v after the deltas, want 0", v)
	}
}

// TestHeadAgeAtScrape: the head age grows with the clock between heads.
func TestHeadAgeAtScrape(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m, reg := newTest(t, Config{Now: func() time.Time { return now }})
	m.Head("dev", 42, now.Add(-3*time.Second))
	now = now.Add(10 * time.Second)
	if age, ok := m.HeadAge("dev"); !ok || age != 13*time.Second {
		t.Errorf("HeadAge = %v %v", age, ok)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() == "txengine_network_head_age_seconds" {
			found = true
			if v := f.GetMetric()[0].GetGauge().GetValue(); v != 13 {
				t.Errorf("head age = %v, want 13", v)
			}
		}
	}
	if !found {
		t.Error("txengine_network_head_age_seconds missing")
	}
}

// fakeChain answers HeaderByNumber with err and the rest with nothing.
type fakeChain struct {
	engine.Node
	err error
}

func (f fakeChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	return &types.Header{}, f.err
}

func (f fakeChain) TransactionReceipt(context.Context, common.Hash) (*types.Receipt, error) {
	return nil, ethereum.NotFound
}

// TestInstrumentedChain counts calls by JSON-RPC method and outcome.
func TestInstrumentedChain(t *testing.T) {
	m, _ := newTest(t, Config{})
	ctx := context.Background()
	ok := m.InstrumentChain("dev", fakeChain{})
	_, _ = ok.HeaderByNumber(ctx, nil)
	_, _ = ok.HeaderByNumber(ctx, nil)
	_, _ = ok.TransactionReceipt(ctx, common.Hash{})
	bad := m.InstrumentChain("dev", fakeChain{err: errors.New("connection refused")})
	_, _ = bad.HeaderByNumber(ctx, nil)
	slow := m.InstrumentChain("dev", fakeChain{err: context.DeadlineExceeded})
	_, _ = slow.HeaderByNumber(ctx, nil)
	for _, c := range []struct {
		method, outcome string
		want            float64
	}{
		{"eth_getBlockByNumber", "ok", 2},
		{"eth_getBlockByNumber", "error", 1},
		{"eth_getBlockByNumber", "timeout", 1},
		{"eth_getTransactionReceipt", "not_found", 1},
	} {
		if v := testutil.ToFloat64(m.rpcRequests.WithLabelValues("dev", c.method, c.outcome)); v != c.want {
			t.Errorf("%s %s = %v, want %v", c.method, c.outcome, v, c.want)
		}
	}
}

// callChain answers every eth_call with 32 zero bytes and counts them.
type callChain struct {
	fakeChain
	calls *int
}

func (c callChain) CallContract(context.Context, ethereum.CallMsg, *big.Int) ([]byte, error) {
	*c.calls++
	return make([]byte, 32), nil
}

// batchChain is a callChain that also batches.
type batchChain struct {
	callChain
	batches *int
}

func (c batchChain) BatchCall(_ context.Context, reqs []engine.CallRequest) ([]engine.CallResult, error) {
	*c.batches++
	return make([]engine.CallResult, len(reqs)), nil
}

// TestInstrumentedChainKeepsCapabilities: wrapping a chain neither hides
// what it can do (batches, logs) nor invents what it cannot.
func TestInstrumentedChainKeepsCapabilities(t *testing.T) {
	m, _ := newTest(t, Config{})
	ctx := context.Background()
	reqs := make([]engine.CallRequest, 3)

	calls, batches := 0, 0
	plain := m.InstrumentChain("dev", callChain{calls: &calls})
	if res, err := engine.BatchCall(ctx, plain, reqs); err != nil || len(res) != 3 || calls != 3 {
		t.Fatalf("without batching: %d results, %d calls, %v; want 3 sequential calls", len(res), calls, err)
	}
	if _, err := plain.(engine.IndexChain).FilterLogs(ctx, ethereum.FilterQuery{}); err == nil {
		t.Fatal("FilterLogs succeeded on a chain that cannot read logs")
	}

	calls = 0
	batching := m.InstrumentChain("dev", batchChain{callChain: callChain{calls: &calls}, batches: &batches})
	if res, err := engine.BatchCall(ctx, batching, reqs); err != nil || len(res) != 3 || batches != 1 || calls != 0 {
		t.Fatalf("with batching: %d results, %d batches, %d calls, %v; want one batch", len(res), batches, calls, err)
	}
	if v := testutil.ToFloat64(m.rpcRequests.WithLabelValues("dev", "batch", "ok")); v != 1 {
		t.Fatalf("batch counted %v times, want 1", v)
	}

	// Receipts: one lookup per hash unless the chain batches them.
	hashes := []common.Hash{{1}, {2}}
	if got, err := engine.Receipts(ctx, plain, hashes); err != nil || len(got) != 2 || got[0] != nil {
		t.Fatalf("receipts without batching: %v, %v", got, err)
	}
	if v := testutil.ToFloat64(m.rpcRequests.WithLabelValues("dev", "eth_getTransactionReceipt", "not_found")); v != 2 {
		t.Fatalf("receipt lookups counted %v times, want 2", v)
	}
	receipts := m.InstrumentChain("dev", receiptBatchChain{})
	if got, err := engine.Receipts(ctx, receipts, hashes); err != nil || len(got) != 2 || got[1].TxHash != hashes[1] {
		t.Fatalf("receipts with batching: %v, %v", got, err)
	}
	if v := testutil.ToFloat64(m.rpcBatched.WithLabelValues("dev", "eth_getTransactionReceipt")); v != 2 {
		t.Fatalf("batched receipt lookups counted %v times, want 2", v)
	}
}

// receiptBatchChain reads receipts in batches: every hash has one.
type receiptBatchChain struct{ fakeChain }

func (receiptBatchChain) TransactionReceipts(_ context.Context, hashes []common.Hash) ([]*types.Receipt, error) {
	out := make([]*types.Receipt, len(hashes))
	for i, h := range hashes {
		out[i] = &types.Receipt{TxHash: h}
	}
	return out, nil
}

// TestLiveAccounts: the gauge reads the live count at every scrape.
func TestLiveAccounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	n := 3
	if err := RegisterLiveAccounts(reg, func() int { return n }); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{3, 0} {
		n = want
		got, err := testutil.GatherAndCount(reg, "txengine_account_actors")
		if err != nil || got != 1 {
			t.Fatalf("series %d, %v", got, err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if v := mfs[0].GetMetric()[0].GetGauge().GetValue(); v != float64(want) {
			t.Fatalf("txengine_account_actors = %v, want %d", v, want)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestAddressLabel: every per-account series carries the account's EIP-55
// address beside its id (one address per id: the series count does not
// change), and accounts beyond the cap have address="other".
func TestAddressLabel(t *testing.T) {
	m, reg := newTest(t, Config{MaxAccounts: 1})
	other := engine.MetricAccount{ID: "b", Address: common.HexToAddress("0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359")}
	exerciseAccount(m, testAccount)
	exerciseAccount(m, other)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	perAccount := map[string]bool{}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			acct, hasAcct := labels["account"]
			if !hasAcct {
				continue
			}
			perAccount[f.GetName()] = true
			want := map[string]string{"a": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", OtherAccount: OtherAccount}[acct]
			if labels["address"] != want {
				t.Errorf("%s{account=%q}: address %q, want %q", f.GetName(), acct, labels["address"], want)
			}
		}
	}
	for _, name := range []string{"accepted_total", "submitted_total", "completed_total", "failed_total"} {
		if !perAccount["txengine_transactions_"+name] {
			t.Errorf("txengine_transactions_%s has no per-account series", name)
		}
	}
	for _, name := range []string{"queue_depth", "in_flight", "next_nonce"} {
		if !perAccount["txengine_account_"+name] {
			t.Errorf("txengine_account_%s has no per-account series", name)
		}
	}
}

// TestCallbackOutbox: the gauge counts at every scrape; a failing count
// leaves the series out without failing the scrape.
func TestCallbackOutbox(t *testing.T) {
	reg := prometheus.NewRegistry()
	n, fail := 3, false
	if err := RegisterCallbackOutbox(reg, func(context.Context) (int, error) {
		if fail {
			return 0, errors.New("store down")
		}
		return n, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{3, 0, 12} {
		n = want
		fams, err := reg.Gather()
		if err != nil || len(fams) != 1 || fams[0].GetName() != "txengine_callbacks_pending" || fams[0].GetMetric()[0].GetGauge().GetValue() != float64(want) {
			t.Fatalf("gather with %d pending: %v, %v", want, fams, err)
		}
	}
	fail = true
	if fams, err := reg.Gather(); err != nil || len(fams) != 0 {
		t.Fatalf("gather with a failing store: %v, %v; want no series and no error", fams, err)
	}
}

// TestZeroCounters: the rate-limited windows exist from the start and a
// network's reorg counters from its first head, at zero.
func TestZeroCounters(t *testing.T) {
	m, reg := newTest(t, Config{})
	if n := testutil.CollectAndCount(reg, "txengine_http_rate_limited_total"); n != 2 {
		t.Errorf("rate-limited series at start: %d, want 2", n)
	}
	if n := testutil.CollectAndCount(reg, "txengine_network_reorgs_total"); n != 0 {
		t.Errorf("reorg series before a head: %d, want 0", n)
	}
	m.Head("dev", 1, time.Now())
	if v := testutil.ToFloat64(m.reorgs.WithLabelValues("dev")); v != 0 || testutil.CollectAndCount(reg, "txengine_network_reorgs_total", "txengine_network_reorged_blocks_total") != 2 {
		t.Errorf("reorg series after a head: %v", v)
	}
}

// TestSubscriptionMetrics: a poll sets the live, lag and waiting gauges and
// adds its deliveries and failed steps; a failed poll counts a failure and leaves the gauges as they
// were; callback outcomes count by kind and outcome.
func TestSubscriptionMetrics(t *testing.T) {
	m, _ := newTest(t, Config{})
	m.SubscriptionPoll("dev", engine.SubscriptionResult{Subscriptions: 7, Lag: 3, Delivered: 4, Retracted: 2, Failed: 2, Waiting: 5}, nil)
	m.SubscriptionPoll("dev", engine.SubscriptionResult{Delivered: 1}, errors.New("node down"))
	s := m.subs
	for _, c := range []struct {
		name string
		got  prometheus.Collector
		want float64
	}{
		{"live", s.live.WithLabelValues("dev"), 7},
		{"lag", s.lag.WithLabelValues("dev"), 3},
		{"log events", s.events.WithLabelValues("dev", "log"), 5},
		{"removed events", s.events.WithLabelValues("dev", "removed"), 2},
		{"poll failures", s.pollErrors.WithLabelValues("dev"), 1},
		{"step failures", s.stepErrors.WithLabelValues("dev"), 2},
		{"waiting", s.waiting.WithLabelValues("dev"), 5},
	} {
		if v := testutil.ToFloat64(c.got); v != c.want {
			t.Errorf("%s = %v, want %v", c.name, v, c.want)
		}
	}
	m.CallbackOutcome("event", "retry")
	m.CallbackOutcome("event", "retry")
	m.CallbackOutcome("transaction", "delivered")
	if v := testutil.ToFloat64(s.callbacks.WithLabelValues("event", "retry")); v != 2 {
		t.Errorf("event retries = %v, want 2", v)
	}
	if v := testutil.ToFloat64(s.callbacks.WithLabelValues("event", "delivered")); v != 0 {
		t.Errorf("event delivered = %v, want 0", v)
	}
}

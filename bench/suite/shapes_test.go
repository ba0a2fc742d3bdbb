package suite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/txengine/txengine/bench/benchtable"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// shape is a load shape: accounts × transfers per account.
type shape struct{ accounts, per int }

func (s shape) String() string { return fmt.Sprintf("%d × %d", s.accounts, s.per) }

// The shapes our users have (issue 16): one account's burst, many
// accounts sending a few each, and each account's first send. txload's
// setup gives every account gas through the service's faucet, which funds
// the accounts created at once in batches (engine.Faucet).
var shapes = []shape{{1, 10000}, {1000, 10}, {10000, 1}}

// gethStack is txengine with the default configuration on PostgreSQL
// (fsync on) and geth --dev (1 s blocks, 60M gas, raised pool), with the
// token deployed and the operator's default account funded.
type gethStack struct {
	svc  *service
	node *gethtest.Node
	ec   *ethclient.Client
	db   *sql.DB // the service's database (pg_stat_statements when asked)
}

// startGethStack starts a gethStack; env adds to the service's
// environment, pgSettings to PostgreSQL's.
func startGethStack(t *testing.T, bin string, env []string, pgSettings ...string) *gethStack {
	t.Helper()
	return startGethStackOn(t, gethtest.Start(t, gethtest.Period(1)), bin, env, pgSettings...)
}

// startGethStackOn is startGethStack on node.
func startGethStackOn(t *testing.T, node *gethtest.Node, bin string, env []string, pgSettings ...string) *gethStack {
	t.Helper()
	pg := pgtest.StartDurableCluster(t, pgSettings...)
	db, err := sql.Open("postgres", pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := t.TempDir()
	env = append([]string{
		"TXENGINE_DATABASE_URL=" + pg.URL(),
		"TXENGINE_NETWORK_NAME=geth", "TXENGINE_NETWORK_CHAIN_ID=1337",
		"TXENGINE_NETWORK_HTTP_URL=" + node.HTTPURL, "TXENGINE_NETWORK_WS_URL=" + node.WSURL,
		"TXENGINE_NETWORK_FAUCET_KEY=" + hex.EncodeToString(crypto.FromECDSA(node.FaucetKey)),
	}, env...)
	deployToken(t, bin, dir, "Bench Token", "BT", env)
	svc := startService(t, bin, dir, env...)
	ec, err := ethclient.Dial(node.WSURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	var def struct {
		Address string `json:"address"`
	}
	if err := apiCall(&http.Client{Timeout: 10 * time.Second}, "GET", svc.url+"/accounts/default", svc.token, "", &def); err != nil {
		t.Fatalf("default account: %v", err)
	}
	// The faucet gives 0.1 ETH; geth reserves gas × fee cap for every
	// pending transaction, and a burst needs more.
	fundETH(t, ec, node, common.HexToAddress(def.Address), 100)
	return &gethStack{svc: svc, node: node, ec: ec, db: db}
}

// measured is one load run as the service saw it, from its first accepted
// transfer (after txload's setup) to the report.
type measured struct {
	r         loadReport
	cpu       float64 // service CPU seconds
	completed float64 // transfers completed (service metrics)
	rpc       float64 // JSON-RPC round trips
	before    metrics
	after     metrics
}

// measure runs txload with args against svc in the background (sh: its
// shape); once the service accepted the first transfer of the load (after
// the setup's funding transfers, one per account when there are several)
// it calls during (nil: nothing) and then waits for the report.
func measure(t *testing.T, txload string, svc *service, sh shape, during func(), args ...string) measured {
	t.Helper()
	base := scrape(t, svc.url)
	setup := 0.0
	if sh.accounts > 1 {
		setup = float64(sh.accounts)
	}
	args = append([]string{"--n", itoa(sh.accounts * sh.per), "--accounts", itoa(sh.accounts)}, args...)
	type result struct {
		r   loadReport
		err error
	}
	loaded := make(chan result, 1)
	go func() { // owned by measure: it waits for the report below
		r, err := loadRun(txload, svc.url, svc.token, args...)
		loaded <- result{r, err}
	}()
	report := func(res result) loadReport {
		if res.err != nil {
			t.Fatal(res.err)
		}
		return res.r
	}
	var m measured
	for {
		cur := scrape(t, svc.url)
		if cur.accepted > base.accepted+setup {
			m.before = cur
			break
		}
		select {
		case res := <-loaded: // ended before anything was accepted
			m.r = report(res)
			return m
		case <-time.After(20 * time.Millisecond):
		}
	}
	cpu := processCPU(t, svc.PID())
	if during != nil {
		during()
	}
	m.r = report(<-loaded)
	m.after = scrape(t, svc.url)
	m.cpu = processCPU(t, svc.PID()) - cpu
	m.completed = m.after.completed - m.before.completed
	m.rpc = m.after.rpc - m.before.rpc
	return m
}

// chainBound is the least time the chain needs for n transfers of the
// run's median gas: ⌈n / ⌊gas limit / gas⌋⌉ blocks of period seconds.
func chainBound(ec *ethclient.Client, n int, gas uint64, period float64) (float64, uint64, error) {
	head, err := ec.HeaderByNumber(context.Background(), nil)
	if err != nil || gas == 0 {
		return math.NaN(), 0, err
	}
	perBlock := head.GasLimit / gas
	return math.Ceil(float64(n)/float64(perBlock)) * period, perBlock, nil
}

// recipients is to whom a shape's transfers go: "holders" is txload's
// default (100 addresses, which hold the token after their first
// transfer: 48,783 gas on geth 1.17), "fresh" a new address for every
// transfer (146,715 gas: the recipient's balance slot is created), which is
// what users mostly pay and what makes a block hold 408 instead of 1,229.
type recipients string

const (
	holders recipients = "holders"
	fresh   recipients = "fresh"
)

// key is the part key (wantShapes) of the rows of store to r: store
// itself to holders, store.fresh to fresh recipients.
func (r recipients) key(store string) string {
	if r == fresh {
		return store + ".fresh"
	}
	return store
}

// args are txload's arguments for n transfers to r.
func (r recipients) args(n int) []string {
	if r == fresh {
		return []string{"--recipients", itoa(n)}
	}
	return nil
}

// wantShapes says whether the part key of benchShapes runs:
// TXENGINE_BENCH_SHAPES, a comma-separated list of parts (pg, pg.fresh,
// pool, emb, emb.fresh, emb.breadth), runs those only; empty runs all.
func wantShapes(key string) bool {
	only := os.Getenv("TXENGINE_BENCH_SHAPES")
	return only == "" || slices.Contains(strings.Split(only, ","), key)
}

// benchShapes measures the three shapes, in this order, with the default
// configuration, on PostgreSQL (fsync on) and geth --dev, then on the
// embedded default (SQLite and the in-process chain), each to holders and
// to fresh recipients: accepts/s, accept p99, drain beside the chain bound
// and the service's CPU per completed transfer, and the ratios the targets
// of issues 16 and 28 are set on (breadth beside depth, drain beside the
// bound).
func benchShapes(t *testing.T, b bins, logf func(string, ...any)) []benchtable.Row {
	var rows []benchtable.Row
	if wantShapes("pg") || wantShapes("pg.fresh") {
		st := startGethStack(t, b.txengine, nil)
		// txload checks each completed transfer on the node too (--rpc).
		for _, r := range []recipients{holders, fresh} {
			if key := r.key("pg"); wantShapes(key) {
				rows = append(rows, shapeRows(t, b, logf, key, "on PostgreSQL (fsync on) + geth --dev, to "+string(r), r, st.svc, st.ec, "--rpc", st.node.HTTPURL)...)
			}
		}
		st.svc.stop()
	}
	if wantShapes("pool") {
		rows = append(rows, defaultPoolRows(t, b, logf)...)
	}
	if wantShapes("emb") || wantShapes("emb.fresh") || wantShapes("emb.breadth") {
		emb := startService(t, b.txengine, t.TempDir())
		defer emb.stop()
		for _, r := range []recipients{holders, fresh} {
			if key := r.key("emb"); wantShapes(key) {
				rows = append(rows, shapeRows(t, b, logf, key, "on the embedded default, to "+string(r), r, emb, nil)...)
			}
		}
		// Issue 28: breadth beside depth on the embedded default, as `make run`
		// starts it (400 × 10 beside 1 × 4,000; 1,000 × 10 beside 1 × 10,000).
		if wantShapes("emb.breadth") {
			rows = append(rows, embBreadthRows(t, b, logf, emb)...)
		}
	}
	return rows
}

// defaultPoolRows is one account's burst on geth's default pool limits:
// nothing may be lost or stuck; the window adapts to what the pool takes.
func defaultPoolRows(t *testing.T, b bins, logf func(string, ...any)) []benchtable.Row {
	small := startGethStackOn(t, gethtest.Start(t, gethtest.Period(1), gethtest.DefaultPool()), b.txengine, nil)
	defer small.svc.stop()
	m := measure(t, b.txload, small.svc, shapes[0], nil, "--concurrency", itoa(p1Clients), "--timeout", "10m", "--rpc", small.node.HTTPURL)
	bound, perBlock, err := chainBound(small.ec, shapes[0].accounts*shapes[0].per, m.r.GasUsedMedian, 1)
	if err != nil {
		t.Fatalf("chain bound: %v", err)
	}
	logf("%s on geth's default pool: drain %.1fs (bound %.0fs), check %s", shapes[0], m.r.LastCompletedSeconds, bound, verdict(m.r))
	logBlocks(small.ec, time.Now().Add(-time.Duration(m.r.LastCompletedSeconds*float64(time.Second))), m.r.FirstBlock, m.r.LastBlock, logf)
	return []benchtable.Row{
		{ID: "S.pool.1x10000.drain", What: fmt.Sprintf("%s on geth's default pool (16 slots per account, 5,120 in all), defaults: drain (chain bound %.0fs: %d a block)", shapes[0], bound, perBlock),
			Value: m.r.LastCompletedSeconds, Unit: "s", Note: fmt.Sprintf("(check %s; %s)", verdict(m.r), m.after.outcome(m.before))},
		{ID: "S.pool.1x10000.ratio", What: fmt.Sprintf("%s on geth's default pool: drain / chain bound", shapes[0]), Value: m.r.LastCompletedSeconds / bound, Unit: "x"},
	}
}

// settledBaseFee is the base fee (wei) a shape waits for the chain to fall
// back to after the one before: a dev chain's only demand is the bench, and
// a shape that fills every block (25 blocks to fresh recipients) raises the
// base fee 1/8 a block, about 19 ×; the next shape would start on a chain
// no other chain's users have, and its new accounts' 0.1 ETH of gas could
// not pay twice that base fee.
const settledBaseFee = 2_000_000_000

// settleBaseFee waits, at most two minutes, for the base fee of network
// (GET /contracts/network/{network}/gas-price) to be at most
// settledBaseFee; an empty block lowers it by 1/8.
func settleBaseFee(t *testing.T, svc *service, network string, logf func(string, ...any)) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for start := time.Now(); ; time.Sleep(time.Second) {
		var q struct {
			BaseFee string `json:"baseFeePerGas"`
		}
		if err := apiCall(hc, "GET", svc.url+"/contracts/network/"+network+"/gas-price", svc.token, "", &q); err != nil {
			t.Fatalf("gas price of %s: %v", network, err)
		}
		fee, ok := new(big.Int).SetString(q.BaseFee, 10)
		if !ok || fee.Cmp(big.NewInt(settledBaseFee)) <= 0 || time.Now().After(deadline) {
			if d := time.Since(start); d > time.Second {
				logf("waited %.0fs for %s's base fee to settle: %s wei", d.Seconds(), network, q.BaseFee)
			}
			return
		}
	}
}

// shapeRows runs the shapes on svc (txload with loadArgs more), the
// transfers going to r; ec reads the chain for the bound and the blocks
// (nil: the embedded dev chain, whose gas limit and period are its
// defaults). With a profiling build (TXENGINE_BENCH_BIN, TXENGINE_PPROF)
// and TXENGINE_PROFILE, each shape's profiles are written there
// (shapeProfiler: CPU from the first accepted transfer).
func shapeRows(t *testing.T, b bins, logf func(string, ...any), key, where string, r recipients, svc *service, ec *ethclient.Client, loadArgs ...string) []benchtable.Row {
	var rows []benchtable.Row
	network := "geth"
	if ec == nil {
		network = "dev"
	}
	var depth measured
	only := os.Getenv("TXENGINE_BENCH_SHAPE") // e.g. 1x10000: that shape alone
	for i, sh := range shapes {
		if only != "" && only != fmt.Sprintf("%dx%d", sh.accounts, sh.per) {
			continue
		}
		settleBaseFee(t, svc, network, logf)
		args := append([]string{"--concurrency", itoa(p1Clients), "--timeout", "10m"}, r.args(sh.accounts*sh.per)...)
		id := fmt.Sprintf("S.%s.%dx%d", key, sh.accounts, sh.per)
		prof := shapeProfiler(t, id) // nil unless TXENGINE_PROFILE and TXENGINE_PPROF are set
		m := measure(t, b.txload, svc, sh, prof.during, append(args, loadArgs...)...)
		prof.after()
		cpuPer := 1000 * m.cpu / m.completed
		logf("%s %s: accepts %.0f/s p99 %.1f ms, drain %.1fs, CPU %.2f ms per completed, %.0f completed, gas %d, check %s",
			sh, where, m.r.AcceptedPerSec, m.r.LatencyMs.P99, m.r.LastCompletedSeconds, cpuPer, m.completed, m.r.GasUsedMedian, verdict(m.r))
		rows = append(rows,
			benchtable.Row{ID: id + ".accepts", What: fmt.Sprintf("%s %s, defaults, %d clients: accepted/s", sh, where, p1Clients), Value: m.r.AcceptedPerSec, Unit: "/s",
				Note: fmt.Sprintf("(check %s; %s)", verdict(m.r), m.after.outcome(m.before))},
			benchtable.Row{ID: id + ".p99", What: fmt.Sprintf("%s accept p99", sh), Value: m.r.LatencyMs.P99, Unit: "ms", HasTarget: true, Target: 50},
			benchtable.Row{ID: id + ".cpu", What: fmt.Sprintf("%s service CPU per completed transfer", sh), Value: cpuPer, Unit: "ms",
				Note: fmt.Sprintf("(%.1fs for %.0f; JSON-RPC %.3f round trips per completed)", m.cpu, m.completed, m.rpc/m.completed)},
		)
		var bound float64
		var perBlock uint64
		if ec != nil {
			var err error
			if bound, perBlock, err = chainBound(ec, sh.accounts*sh.per, m.r.GasUsedMedian, 1); err != nil {
				t.Fatalf("chain bound: %v", err)
			}
			logBlocks(ec, time.Now().Add(-time.Duration(m.r.LastCompletedSeconds*float64(time.Second))), m.r.FirstBlock, m.r.LastBlock, logf)
		} else if m.r.GasUsedMedian > 0 {
			perBlock = evm.DefaultDevGasLimit / m.r.GasUsedMedian
			bound = math.Ceil(float64(sh.accounts*sh.per) / float64(perBlock))
			// No node to read: the blocks as the completed transfers show them.
			for _, b := range m.r.Blocks {
				logf("block %d: %4d transfers (%3.0f %% of %d), first seen ended at %+6.1fs from the first request",
					b.Number, b.Transfers, 100*float64(b.Transfers)/float64(perBlock), perBlock, b.EndedSeconds)
			}
		}
		rows = append(rows, benchtable.Row{ID: id + ".drain", What: fmt.Sprintf("%s drain (first request to last completed; chain bound %.0fs: %d transfers a block)", sh, bound, perBlock), Value: m.r.LastCompletedSeconds, Unit: "s"})
		if bound > 0 {
			rows = append(rows, benchtable.Row{ID: id + ".ratio", What: fmt.Sprintf("%s drain / chain bound", sh), Value: m.r.LastCompletedSeconds / bound, Unit: "x", HasTarget: true, Target: 1.1})
		}
		if i == 0 {
			depth = m
			continue
		}
		if depth.completed == 0 {
			continue
		}
		rows = append(rows,
			benchtable.Row{ID: id + ".accepts.ratio", What: fmt.Sprintf("%s accepted/s / %s's", sh, shapes[0]), Value: m.r.AcceptedPerSec / depth.r.AcceptedPerSec, Unit: "x", HasTarget: key == "pg", Target: 0.8, AtLeast: true},
			benchtable.Row{ID: id + ".cpu.ratio", What: fmt.Sprintf("%s CPU per completed / %s's", sh, shapes[0]), Value: (m.cpu / m.completed) / (depth.cpu / depth.completed), Unit: "x", HasTarget: key == "pg", Target: 1.5},
		)
	}
	return rows
}

// TestBenchShapes runs the shape rows of the suite alone:
//
//	TXENGINE_BENCH=shapes go test -count=1 -v -run TestBenchShapes -timeout 30m ./bench/suite/
func TestBenchShapes(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "shapes" {
		t.Skip("the shape rows run alone with TXENGINE_BENCH=shapes (make bench runs them too)")
	}
	b := build(t)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	rows := benchShapes(t, b, logf)
	var out strings.Builder
	benchtable.Markdown(&out, benchtable.Run{Machine: machine(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Rows: rows})
	fmt.Print("\n" + out.String())
}

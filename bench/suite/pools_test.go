package suite

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/bench/benchtable"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/rpcproxy"
)

// Sizes of the busy-mempool rows (issue 30): a burst from one account
// beside the same burst through a pool, 64 clients.
const (
	poolsN    = 10000
	poolsSize = 32
)

// busyStack is a gethStack behind a busy mempool: geth --dev with its own
// pool limits of a public node (16 slots per account) and, in front of its
// HTTP endpoint, rpcproxy.BusyMempool refusing a sender's 17th pending
// transaction with geth's "txpool is full" (a dev node's pool is never
// full, so geth itself would take it). The service sends through the
// proxy; heads come over geth's ws endpoint.
type busyStack struct {
	*gethStack
	proxy *rpcproxy.Proxy
}

func startBusyStack(t *testing.T, bin string, env ...string) *busyStack {
	t.Helper()
	node := gethtest.Start(t, gethtest.Period(1), gethtest.TxPool(gethtest.PoolLimits{AccountSlots: rpcproxy.DefaultSlots}))
	proxy := rpcproxy.Start(t, node.HTTPURL)
	proxy.BusyMempool(rpcproxy.DefaultSlots)
	st := startGethStackOn(t, node, bin, append([]string{"TXENGINE_NETWORK_HTTP_URL=" + proxy.URL()}, env...))
	return &busyStack{gethStack: st, proxy: proxy}
}

// busyRun is one burst on a busyStack.
type busyRun struct {
	r         loadReport
	bound     float64 // chain bound, s
	perBlock  uint64
	cpuPer    float64 // service CPU ms per completed transaction (setup included)
	refusals  int     // the proxy's "txpool is full"
	blocks    uint64  // blocks from the first to the last completed transfer
	completed float64 // transactions completed (service metrics; top-ups included)
}

// busyBurst runs txload with args (--n n and more) against a fresh busy
// stack, checking every completed transfer on the node (--rpc).
func busyBurst(t *testing.T, b bins, n int, logf func(string, ...any), args ...string) busyRun {
	t.Helper()
	prof := startBusyProfile(t, b)
	st := startBusyStack(t, b.txengine, prof.env()...)
	defer st.svc.stop()
	return st.burst(t, b, prof, n, logf, args...)
}

// burst runs txload with args (--n n and more) on the stack, checking every
// completed transfer on the node (--rpc), and profiles it when prof is set.
func (st *busyStack) burst(t *testing.T, b bins, prof *busyProfile, n int, logf func(string, ...any), args ...string) busyRun {
	t.Helper()
	before := scrape(t, st.svc.url)
	cpu := processCPU(t, st.svc.PID())
	st.proxy.ResetStats()
	started := time.Now()
	prof.during(t, logf)
	r := runLoad(t, b.txload, st.svc.url, st.svc.token, append([]string{"--n", itoa(n), "--concurrency", itoa(p1Clients),
		"--timeout", "30m", "--rpc", st.node.HTTPURL}, args...)...)
	after := scrape(t, st.svc.url)
	run := busyRun{r: r, refusals: st.proxy.Stats().PoolFull, completed: after.completed - before.completed}
	run.cpuPer = 1000 * (processCPU(t, st.svc.PID()) - cpu) / run.completed
	var err error
	if run.bound, run.perBlock, err = chainBound(st.ec, n, r.GasUsedMedian, 1); err != nil {
		t.Fatalf("chain bound: %v", err)
	}
	if r.LastBlock >= r.FirstBlock && r.FirstBlock > 0 {
		run.blocks = r.LastBlock - r.FirstBlock + 1
	}
	logf("busy mempool %v: drained %d in %.1fs (bound %.0fs, %d a block), blocks %d..%d, %d refusals, accepted in %.1fs, CPU %.2f ms per completed, check %s",
		args, n, r.LastCompletedSeconds, run.bound, run.perBlock, r.FirstBlock, r.LastBlock, run.refusals, r.AcceptSeconds, run.cpuPer, verdict(r))
	prof.after(t, st, started, r, before, after, logf)
	if prof == nil && os.Getenv("TXENGINE_BENCH_BLOCKS") != "" {
		logSenders(st.ec, started, r.FirstBlock, r.LastBlock, logf)
	}
	if r.Check == nil || !r.Check.OK {
		t.Errorf("busy burst %v: check %s %v", args, verdict(r), r.Check)
	}
	return run
}

// benchPools measures the busy-mempool rows: n transfers from one account,
// then through a pool of size members (a fresh stack each), defaults,
// PostgreSQL (fsync on), 64 clients. TXENGINE_BENCH_POOLS_ONLY=single or
// =pool runs one of them.
func benchPools(t *testing.T, b bins, n, size int, logf func(string, ...any)) []benchtable.Row {
	only := os.Getenv("TXENGINE_BENCH_POOLS_ONLY")
	var rows []benchtable.Row
	// Recipients: txload's 100 by default (holders after their first
	// transfer: 48,783 gas each on geth's dev chain); n of them makes every
	// transfer pay a fresh address (more gas: fewer fit a block).
	recipients := envInt(t, "TXENGINE_BENCH_POOLS_RECIPIENTS", 100)
	to := "to 100 recipients (holders after their first transfer)"
	if recipients >= n {
		to = "each to a fresh recipient"
	} else if recipients != 100 {
		to = fmt.Sprintf("to %d recipients", recipients)
	}
	where := fmt.Sprintf("%s, on geth --dev behind a busy mempool (16 pending per sender), PostgreSQL, defaults, %d clients", to, p1Clients)
	var single busyRun
	if only == "" || only == "single" {
		single = busyBurst(t, b, n, logf, "--recipients", itoa(recipients))
		rows = append(rows, busyRows("B.single", fmt.Sprintf("1 × %d %s", n, where), single)...)
	}
	if only == "" || only == "pool" {
		pool, warm := poolBursts(t, b, n, logf, "--recipients", itoa(recipients), "--pool-size", itoa(size))
		rows = append(rows, busyRows("B.pool", fmt.Sprintf("%d through a new pool of %d %s", n, size, where), pool)...)
		if single.r.LastCompletedSeconds > 0 {
			rows = append(rows, benchtable.Row{ID: "B.pool.speedup", What: "single account's drain / the pool's", Value: single.r.LastCompletedSeconds / pool.r.LastCompletedSeconds, Unit: "x"})
		}
		if warm != nil {
			rows = append(rows, busyRows("B.pool.warm", fmt.Sprintf("then %d more through the same pool (members hold what the first burst's top-ups left)", n), *warm)...)
		}
	}
	return rows
}

// poolBursts runs a burst through a new pool (args create it: --pool-size)
// on a fresh busy stack and then, unless TXENGINE_BENCH_POOLS_WARM=0, a
// second burst of n through the same pool: a pool in use, whose members
// hold the gas and tokens the first burst's top-ups left them, as an
// integrator's long-lived pool does. TXENGINE_PROFILE_RUN=warm profiles the
// second burst instead of the first; TXENGINE_BENCH_BLOCKS=1 logs the
// blocks of a burst that is not profiled too.
func poolBursts(t *testing.T, b bins, n int, logf func(string, ...any), args ...string) (busyRun, *busyRun) {
	t.Helper()
	prof := startBusyProfile(t, b)
	st := startBusyStack(t, b.txengine, prof.env()...)
	defer st.svc.stop()
	coldProf, warmProf := prof, (*busyProfile)(nil)
	if os.Getenv("TXENGINE_PROFILE_RUN") == "warm" {
		coldProf, warmProf = nil, prof
	}
	cold := st.burst(t, b, coldProf, n, logf, args...)
	if os.Getenv("TXENGINE_BENCH_POOLS_WARM") == "0" || cold.r.Pool == "" {
		return cold, nil
	}
	again := slices.Clone(args)
	for i, a := range again {
		if a == "--pool-size" {
			again[i+1] = cold.r.Pool
			again[i] = "--pool"
		}
	}
	warm := st.burst(t, b, warmProf, n, logf, again...)
	return cold, &warm
}

// busyRows are the rows of one busy run.
func busyRows(id, what string, r busyRun) []benchtable.Row {
	return []benchtable.Row{
		{ID: id + ".drain", What: what + ": drain (first request to last completed)", Value: r.r.LastCompletedSeconds, Unit: "s",
			Note: fmt.Sprintf("(%d blocks; %d refusals; check %s)", r.blocks, r.refusals, verdict(r.r))},
		{ID: id + ".bound", What: fmt.Sprintf("chain bound (%d transfers a block)", r.perBlock), Value: r.bound, Unit: "s"},
		{ID: id + ".ratio", What: "drain / chain bound", Value: r.r.LastCompletedSeconds / r.bound, Unit: "x", HasTarget: strings.HasPrefix(id, "B.pool"), Target: 1.2},
		{ID: id + ".cpu", What: "service CPU per completed transaction (setup and top-ups included)", Value: r.cpuPer, Unit: "ms"},
	}
}

// TestBenchPools runs the busy-mempool rows alone (make bench-pools):
// TXENGINE_BENCH_POOLS_N transfers (10,000) from one account and through a
// pool of TXENGINE_BENCH_POOLS_SIZE (32).
//
//	TXENGINE_BENCH=pools TXENGINE_BENCH_POOLS_N=1000 go test -count=1 -v -run TestBenchPools -timeout 60m ./bench/suite/
func TestBenchPools(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "pools" {
		t.Skip("the busy-mempool rows run alone with TXENGINE_BENCH=pools (make bench-pools; make bench runs them too)")
	}
	b := build(t)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }
	rows := benchPools(t, b, envInt(t, "TXENGINE_BENCH_POOLS_N", poolsN), envInt(t, "TXENGINE_BENCH_POOLS_SIZE", poolsSize), logf)
	var out strings.Builder
	benchtable.Markdown(&out, benchtable.Run{Machine: machine(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Rows: rows})
	fmt.Print("\n" + out.String())
}

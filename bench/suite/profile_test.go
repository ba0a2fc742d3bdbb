package suite

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/servicetest"
)

// TestProfile profiles the service under one load shape on PostgreSQL
// (fsync on, pg_stat_statements loaded) and geth --dev (1 s blocks), with
// the default configuration: where the CPU goes while transfers are
// accepted and drained, the contention (mutex, block) and allocations, the
// JSON-RPC requests by method and the SQL statements by text, each per
// completed transfer. It writes the profiles and a summary to the
// directory named by TXENGINE_PROFILE:
//
//	TXENGINE_PROFILE=/tmp/prof TXENGINE_PROFILE_SHAPE=1000x10 \
//	  go test -count=1 -v -run '^TestProfile$' -timeout 30m ./bench/suite/
//
// The shape is accounts x transfers per account (1x10000: one account's
// burst; 1000x10: breadth; 10000x1: each account's first send). The CPU
// profile starts with the first accepted transfer (after txload's setup)
// and lasts TXENGINE_PROFILE_SECONDS (20); statement counts are reset then.
func TestProfile(t *testing.T) {
	out := os.Getenv("TXENGINE_PROFILE")
	if out == "" {
		t.Skip("profiles are taken with TXENGINE_PROFILE=<dir> (and TXENGINE_PROFILE_SHAPE=1000x10)")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var accounts, per int
	shapeArg := envOr("TXENGINE_PROFILE_SHAPE", "1000x10")
	if _, err := fmt.Sscanf(shapeArg, "%dx%d", &accounts, &per); err != nil || accounts < 1 || per < 1 {
		t.Fatalf("TXENGINE_PROFILE_SHAPE=%q: want accounts x transfers, e.g. 1000x10", shapeArg)
	}
	seconds := envInt(t, "TXENGINE_PROFILE_SECONDS", 20)
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "profile: "+format+"\n", args...) }

	bin, err := servicetest.Build(t.TempDir(), servicetest.Package, false, "pprof")
	if err != nil {
		t.Fatalf("build the profiling binary: %v", err)
	}
	t.Setenv("TXENGINE_BENCH_BIN", bin)
	b := build(t)

	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	st := startGethStack(t, b.txengine, []string{"TXENGINE_PPROF=" + pprofAddr, "TXENGINE_LOG_LEVEL=" + envOr("TXENGINE_PROFILE_LOG_LEVEL", "warn")},
		"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all")
	defer st.svc.stop()
	db := st.db
	if _, err := db.Exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatalf("pg_stat_statements: %v", err)
	}
	var started time.Time
	var machineCPU string
	m := measure(t, b.txload, st.svc, shape{accounts, per}, func() {
		if _, err := db.Exec("SELECT pg_stat_statements_reset()"); err != nil {
			t.Fatalf("reset statement counts: %v", err)
		}
		started = time.Now()
		logf("load started; CPU profile for %ds", seconds)
		machineBefore := cpuByCommand(t)
		fetch(t, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, seconds), filepath.Join(out, "cpu.pprof"))
		machineCPU = machineShares(machineBefore, cpuByCommand(t), time.Since(started))
	}, "--concurrency", itoa(p1Clients), "--timeout", "10m")
	r, before, after, cpu := m.r, m.before, m.after, m.cpu
	logBlocks(st.ec, started, r.FirstBlock, r.LastBlock, logf)
	for _, p := range []string{"mutex", "block", "allocs", "goroutine"} {
		fetch(t, fmt.Sprintf("http://%s/debug/pprof/%s", pprofAddr, p), filepath.Join(out, p+".pprof"))
	}

	completed := after.completed - before.completed
	var sum strings.Builder
	fmt.Fprintf(&sum, "shape %s on PostgreSQL (fsync on) + geth --dev (1 s blocks), defaults, %d clients; %s\n", shapeArg, p1Clients, machine())
	fmt.Fprintf(&sum, "accepted %d at %.0f/s (p50 %.1f ms, p99 %.1f ms); drain %.1fs; completed %.0f since the first accept; check %s\n",
		r.Accepted, r.AcceptedPerSec, r.LatencyMs.P50, r.LatencyMs.P99, r.LastCompletedSeconds, completed, verdict(r))
	fmt.Fprintf(&sum, "service CPU %.1fs = %.2f ms per completed transfer\n", cpu, 1000*cpu/completed)
	fmt.Fprintf(&sum, "machine CPU while profiling (cores busy, by command): %s\n", machineCPU)
	fmt.Fprintf(&sum, "JSON-RPC requests %.0f = %.3f per completed transfer; top: %s\n", after.rpc-before.rpc, (after.rpc-before.rpc)/completed, after.top(before, 8))
	rows, err := db.Query(`SELECT calls, total_exec_time, left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements ORDER BY calls DESC LIMIT 25`)
	if err != nil {
		t.Fatalf("statement counts: %v", err)
	}
	var total int64
	var lines []string
	for rows.Next() {
		var calls int64
		var ms float64
		var q string
		if err := rows.Scan(&calls, &ms, &q); err != nil {
			t.Fatal(err)
		}
		total += calls
		lines = append(lines, fmt.Sprintf("  %8d  %6.3f/transfer  %8.0f ms (%6.2f each)  %s", calls, float64(calls)/completed, ms, ms/float64(calls), q))
	}
	rows.Close()
	fmt.Fprintf(&sum, "SQL statements (top 25: %d = %.2f per completed transfer; execution time in the database):\n%s\n", total, float64(total)/completed, strings.Join(lines, "\n"))
	for _, p := range []string{"cpu", "mutex", "block"} {
		top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=30", filepath.Join(out, p+".pprof")).Output()
		if err != nil {
			t.Fatalf("pprof %s: %v", p, err)
		}
		fmt.Fprintf(&sum, "\n== %s (flat) ==\n%s", p, top)
	}
	cum, _ := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=60", filepath.Join(out, "cpu.pprof")).Output()
	fmt.Fprintf(&sum, "\n== cpu (cumulative) ==\n%s", cum)
	if err := os.WriteFile(filepath.Join(out, "summary.txt"), []byte(sum.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fmt.Print(sum.String())
}

// fetch saves the body of url (a pprof endpoint) to path.
func fetch(t *testing.T, url, path string) {
	t.Helper()
	res, err := (&http.Client{Timeout: 5 * time.Minute}).Get(url)
	if err != nil {
		t.Fatalf("get %s: %v", url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("get %s: %d %v", url, res.StatusCode, err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// processCPU is the CPU time (user + system) pid used so far, in seconds.
func processCPU(t *testing.T, pid int) float64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/stat: %v", pid, err)
	}
	_, sec, ok := procStatCPU(raw)
	if !ok {
		t.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	return sec
}

// procStatCPU parses a /proc/<pid>/stat line: the command name and the
// CPU seconds (user + system) the process used.
func procStatCPU(raw []byte) (comm string, sec float64, ok bool) {
	s := string(raw)
	// The command (which may hold spaces) is in parentheses.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return "", 0, false
	}
	fields := strings.Fields(s[end+2:])
	if len(fields) < 13 {
		return "", 0, false
	}
	var utime, stime float64
	fmt.Sscan(fields[11], &utime)
	fmt.Sscan(fields[12], &stime)
	return s[open+1 : end], (utime + stime) / 100, true // clock ticks (USER_HZ = 100)
}

// cpuByCommand returns the CPU seconds used so far by the processes of
// each command name (txengine, geth, postgres, txload...), from /proc.
func cpuByCommand(t *testing.T) map[string]float64 {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, p := range dirs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended
		}
		if comm, sec, ok := procStatCPU(raw); ok {
			out[comm] += sec
		}
	}
	return out
}

// machineShares describes the cores each command kept busy between two
// cpuByCommand readings over elapsed, busiest first.
func machineShares(before, after map[string]float64, elapsed time.Duration) string {
	type share struct {
		name  string
		cores float64
	}
	var shares []share
	total := 0.0
	for name, sec := range after {
		if d := (sec - before[name]) / elapsed.Seconds(); d >= 0.01 {
			shares = append(shares, share{name, d})
			total += d
		}
	}
	sort.Slice(shares, func(i, j int) bool { return shares[i].cores > shares[j].cores })
	parts := []string{fmt.Sprintf("%.2f in all", total)}
	for _, s := range shares {
		parts = append(parts, fmt.Sprintf("%s %.2f", s.name, s.cores))
	}
	return strings.Join(parts, ", ")
}

// envOr is the environment variable name, or def when unset.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

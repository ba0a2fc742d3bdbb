package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pid is the id of the node's running process (0 when it is down).
func (n *node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.PID()
}

// processCPU is the CPU time (user + system) process pid used so far, in
// seconds, from /proc/<pid>/stat.
func processCPU(pid int) (float64, error) {
	st, err := readStat(pid)
	return st.cpu, err
}

// procStat is what the benchmark reads of /proc/<pid>/stat: the parent,
// the process's CPU seconds (user + system) and those of its children
// that ended and were waited for.
type procStat struct {
	ppid          int
	cpu, children float64
}

func readStat(pid int) (procStat, error) {
	var st procStat
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, fmt.Errorf("process CPU: %w", err)
	}
	s := string(raw)
	// The command (which may hold spaces) is in parentheses; after it come
	// state, ppid (4th field of the line) ... utime, stime, cutime, cstime
	// (14th to 17th).
	end := strings.LastIndexByte(s, ')')
	if end < 0 || end+2 > len(s) {
		return st, fmt.Errorf("process CPU: /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[end+2:])
	if len(f) < 15 {
		return st, fmt.Errorf("process CPU: /proc/%d/stat: %q", pid, s)
	}
	var v [4]float64
	for i := range v {
		if _, err := fmt.Sscan(f[11+i], &v[i]); err != nil {
			return st, fmt.Errorf("process CPU: /proc/%d/stat field %d: %w", pid, 14+i, err)
		}
	}
	if _, err := fmt.Sscan(f[1], &st.ppid); err != nil {
		return st, fmt.Errorf("process CPU: /proc/%d/stat ppid: %w", pid, err)
	}
	st.cpu, st.children = (v[0]+v[1])/100, (v[2]+v[3])/100 // clock ticks (USER_HZ = 100)
	return st, nil
}

// serverCPU is the CPU seconds the PostgreSQL server of db used so far:
// its postmaster (the parent of db's backend), the postmaster's children
// that run (backends, WAL writer, checkpointer...) and those that ended.
func serverCPU(ctx context.Context, db *sql.DB) (float64, error) {
	var backend int
	if err := db.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0, fmt.Errorf("server CPU: %w", err)
	}
	b, err := readStat(backend)
	if err != nil {
		return 0, err
	}
	pm, err := readStat(b.ppid)
	if err != nil {
		return 0, err
	}
	total := pm.cpu + pm.children
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscan(filepath.Base(d), &pid); err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.ppid == b.ppid {
			total += st.cpu
		}
	}
	return total, nil
}

// nodesCPU is the CPU seconds every node's process used so far, summed.
func (s *stack) nodesCPU() float64 {
	s.t.Helper()
	total := 0.0
	for _, n := range s.nodes {
		sec, err := processCPU(n.pid())
		if err != nil {
			s.t.Fatalf("%s: %v", n.name, err)
		}
		total += sec
	}
	return total
}

// dbStats are the database's counters at one moment: statements executed
// (pg_stat_statements, -1 when it is not loaded), committed transactions,
// rows inserted and updated, and the WAL position in bytes.
type dbStats struct {
	statements, commits, inserted, updated, wal int64
}

// readDBStats reads the counters of the database db is connected to (the
// WAL position is the whole server's: the benchmark's server serves only it).
func readDBStats(ctx context.Context, db *sql.DB) (dbStats, error) {
	var st dbStats
	// Counters are flushed by the backends at most once a second.
	if _, err := db.ExecContext(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		return st, fmt.Errorf("flush statistics: %w", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT xact_commit, tup_inserted, tup_updated,
			pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&st.commits, &st.inserted, &st.updated, &st.wal); err != nil {
		return st, fmt.Errorf("pg_stat_database: %w", err)
	}
	st.statements = -1
	var n sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT sum(calls)::bigint FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	if err == nil && n.Valid {
		st.statements = n.Int64
	}
	return st, nil
}

// topStatements lists the statements pg_stat_statements counted most
// often, with calls per transfer (empty when it is not loaded).
func topStatements(ctx context.Context, db *sql.DB, transfers float64, limit int) string {
	rows, err := db.QueryContext(ctx, `SELECT calls, rows, left(regexp_replace(query, '\s+', ' ', 'g'), 120)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY calls DESC LIMIT $1`, limit)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var calls, nrows int64
		var q string
		if err := rows.Scan(&calls, &nrows, &q); err != nil {
			return b.String()
		}
		fmt.Fprintf(&b, "  %8d calls %6.3f/transfer %8d rows  %s\n", calls, float64(calls)/transfers, nrows, q)
	}
	return b.String()
}

// sample is what the benchmark reads at one moment: the nodes' CPU and the
// database's counters.
type sample struct {
	at  time.Time
	cpu float64
	// pgCPU is the database server's CPU seconds.
	pgCPU float64
	db    dbStats
}

func (s *stack) sample(ctx context.Context, db *sql.DB) sample {
	s.t.Helper()
	st, err := readDBStats(ctx, db)
	if err != nil {
		s.t.Fatal(err)
	}
	pg, err := serverCPU(ctx, db)
	if err != nil {
		s.t.Fatal(err)
	}
	return sample{at: time.Now(), cpu: s.nodesCPU(), pgCPU: pg, db: st}
}

// costs is what a span of the benchmark cost per accepted transfer.
type costs struct {
	// cpuMs is the nodes' process CPU, summed, in ms per transfer; pgMs
	// the database server's.
	cpuMs, pgMs float64
	// statements, commits, inserted, updated and walBytes are per
	// transfer; statements < 0 when pg_stat_statements is not loaded.
	statements, commits, inserted, updated, walBytes float64
}

func between(a, b sample, transfers int) costs {
	n := float64(transfers)
	c := costs{
		cpuMs:    1000 * (b.cpu - a.cpu) / n,
		pgMs:     1000 * (b.pgCPU - a.pgCPU) / n,
		commits:  float64(b.db.commits-a.db.commits) / n,
		inserted: float64(b.db.inserted-a.db.inserted) / n,
		updated:  float64(b.db.updated-a.db.updated) / n,
		walBytes: float64(b.db.wal-a.db.wal) / n,
	}
	c.statements = -1
	if a.db.statements >= 0 && b.db.statements >= 0 {
		c.statements = float64(b.db.statements-a.db.statements) / n
	}
	return c
}

func (c costs) String() string {
	st := "n/a"
	if c.statements >= 0 {
		st = fmt.Sprintf("%.2f", c.statements)
	}
	return fmt.Sprintf("CPU %.3f ms (PostgreSQL %.3f ms), statements %s, commits %.2f, rows inserted %.2f, updated %.2f, WAL %.0f B",
		c.cpuMs, c.pgMs, st, c.commits, c.inserted, c.updated, c.walBytes)
}

// waitEnded polls the database (not the API, whose listing would cost the
// node that answers more CPU than the transfers) until want transactions
// are stored and all of them completed or failed.
func waitEnded(ctx context.Context, t *testing.T, db *sql.DB, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var all, open int
		err := db.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE status NOT IN ('completed', 'failed')) FROM transactions`).Scan(&all, &open)
		if err != nil {
			t.Fatalf("count the transactions: %v", err)
		}
		if all >= want && open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d transactions stored, %d not ended (want %d ended)", timeout, all, open, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// profiler takes each node's CPU profile over a span, then its mutex and
// block profiles, into dir (TXENGINE_BENCH_PROFILE), when the nodes serve
// pprof (a pprof build with TXENGINE_PPROF set).
type profiler struct {
	dir   string
	addrs []string
	wg    sync.WaitGroup
}

// start fetches every node's CPU profile for seconds, in the background.
func (p *profiler) start(t *testing.T, label string, seconds int) {
	if p == nil {
		return
	}
	for i, addr := range p.addrs {
		p.wg.Go(func() {
			fetchProfile(t, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds),
				filepath.Join(p.dir, fmt.Sprintf("%s-node%d-cpu.pprof", label, i)))
		})
	}
}

// finish waits for the CPU profiles and fetches the contention profiles.
func (p *profiler) finish(t *testing.T, label string) {
	if p == nil {
		return
	}
	p.wg.Wait()
	for i, addr := range p.addrs {
		for _, kind := range []string{"mutex", "block"} {
			fetchProfile(t, fmt.Sprintf("http://%s/debug/pprof/%s", addr, kind),
				filepath.Join(p.dir, fmt.Sprintf("%s-node%d-%s.pprof", label, i, kind)))
		}
	}
}

func fetchProfile(t *testing.T, url, path string) {
	res, err := (&http.Client{Timeout: 5 * time.Minute}).Get(url)
	if err != nil {
		t.Errorf("profile %s: %v", url, err)
		return
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("profile %s: %d %v", url, res.StatusCode, err)
		return
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Error(err)
	}
}

package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// TestClusterThroughput (benchmark; `make bench-cluster`, skipped unless
// TXENGINE_BENCH=1): the same burst — 1,000 accounts × 10 transfers (the
// breadth shape of make bench's shape rows; TXENGINE_BENCH_SHAPE=300x10
// for a shorter one) from 64 concurrent clients spread over the listeners —
// against one node in single-node mode, one node in cluster mode and three
// nodes in cluster mode (TXENGINE_BENCH_CONFIGS=single,1,3 picks some),
// each on its own database of one PostgreSQL server (test settings, with
// pg_stat_statements) and its own geth --dev. It logs accepted/s, the time
// until every accepted transfer completed, and per accepted transfer: the
// nodes' process CPU summed over the nodes (/proc/<pid>/stat), during the
// burst and until the last transfer completed, and the database's
// statements, commits, rows written and WAL bytes. It checks exactly-once
// as the other cluster tests do. With TXENGINE_BENCH_PROFILE=<dir> it
// writes each node's CPU profile of the burst (and the mutex and block
// profiles) there. All runs share this machine's cores with the load
// generator, the database and geth.
func TestClusterThroughput(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "1" {
		t.Skip("benchmark: run with `make bench-cluster` (TXENGINE_BENCH=1)")
	}
	accounts, per := 1000, 10
	if v := os.Getenv("TXENGINE_BENCH_SHAPE"); v != "" {
		if _, err := fmt.Sscanf(v, "%dx%d", &accounts, &per); err != nil || accounts < 1 || per < 1 {
			t.Fatalf("TXENGINE_BENCH_SHAPE=%q: want accounts x transfers, e.g. 300x10", v)
		}
	}
	const clients = 64
	type config struct {
		key, name, provider string
		nodes               int
	}
	all := []config{
		{"single", "1 node, single-node mode", single, 1},
		{"1", "1 node, cluster mode", automanaged, 1},
		{"3", "3 nodes, cluster mode", automanaged, 3},
	}
	var configs []config
	want := strings.Split(envOr("TXENGINE_BENCH_CONFIGS", "single,1,3"), ",")
	for _, c := range all {
		for _, w := range want {
			if strings.TrimSpace(w) == c.key {
				configs = append(configs, c)
			}
		}
	}
	profDir := os.Getenv("TXENGINE_BENCH_PROFILE")
	pg := pgtest.StartClusterWith(t, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=top")

	type result struct {
		name                 string
		acceptedPerSec       float64
		drain, burstTime     time.Duration
		burst, whole         costs
		idleCoresPerNode     float64
		acceptedOf, sentJobs int
	}
	var results []result
	for i, c := range configs {
		t.Run(fmt.Sprintf("%d-%s", c.nodes, c.name), func(t *testing.T) {
			ctx := context.Background()
			dbURL, db := benchDatabase(t, pg.URL(), fmt.Sprintf("bench%d", i))
			o := stackOptions{dbURL: dbURL}
			var prof *profiler
			if profDir != "" {
				prof = &profiler{dir: profDir}
				for range c.nodes {
					prof.addrs = append(prof.addrs, fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)))
				}
				o.nodeEnv = func(i int) []string { return []string{"TXENGINE_PPROF=" + prof.addrs[i]} }
			}
			s := newStackWith(t, c.provider, c.nodes, o)
			accts := s.createAccounts(accounts, 12)
			s.waitFunded(accts, 5*time.Minute)
			jobs := newJobs(accts, per, len(s.nodes))

			idle := s.sample(ctx, db)
			time.Sleep(3 * time.Second)
			before := s.sample(ctx, db)
			idleCores := (before.cpu - idle.cpu) / before.at.Sub(idle.at).Seconds() / float64(c.nodes)
			if before.db.statements >= 0 {
				// The statements listed are those of the burst and the drain.
				if _, err := db.Exec(`SELECT pg_stat_statements_reset()`); err != nil {
					t.Fatalf("reset pg_stat_statements: %v", err)
				}
				before.db.statements = 0
			}

			prof.start(t, c.key, envInt(t, "TXENGINE_BENCH_PROFILE_SECONDS", 10))
			b := s.startBurst(t, accts, jobs, clients)
			b.wait()
			afterBurst := s.sample(ctx, db)
			logBurst(t, "burst", jobs, b.elapsed)
			accepted, _, _, _ := summary(jobs)
			waitEnded(ctx, t, db, accepted, 5*time.Minute)
			ended := s.sample(ctx, db)
			drain := ended.at.Sub(afterBurst.at)
			prof.finish(t, c.key)
			if accepted != len(jobs) {
				t.Errorf("%d of %d transfers accepted, want all (no node went away)", accepted, len(jobs))
			}
			t.Logf("statements most often run (burst and drain):\n%s", topStatements(ctx, db, float64(accepted), 25))
			rows := s.waitDrained(jobs, time.Minute)
			s.checkExactlyOnce(accts, jobs, rows, min(2, c.nodes))
			results = append(results, result{name: c.name, acceptedPerSec: float64(accepted) / b.elapsed.Seconds(), drain: drain, burstTime: b.elapsed,
				burst: between(before, afterBurst, accepted), whole: between(before, ended, accepted), idleCoresPerNode: idleCores,
				acceptedOf: accepted, sentJobs: len(jobs)})
		})
	}
	t.Logf("shape %d x %d, %d clients; per accepted transfer, nodes' CPU summed over the nodes", accounts, per, clients)
	for _, r := range results {
		t.Logf("%-26s accepted %d of %d at %7.0f/s (burst %s), all completed %s after the burst; idle CPU before the burst %.3f cores per node",
			r.name, r.acceptedOf, r.sentJobs, r.acceptedPerSec, r.burstTime.Round(time.Millisecond), r.drain.Round(time.Millisecond), r.idleCoresPerNode)
		t.Logf("%-26s   burst:            %s", "", r.burst)
		t.Logf("%-26s   burst and drain:  %s", "", r.whole)
	}
	if len(results) == len(all) {
		t.Logf("3 nodes / 1 node (single-node mode): accepts %.2f, CPU per transfer in the burst %.2f, burst and drain %.2f",
			results[2].acceptedPerSec/results[0].acceptedPerSec, results[2].burst.cpuMs/results[0].burst.cpuMs, results[2].whole.cpuMs/results[0].whole.cpuMs)
		t.Logf("3 nodes / 1 node (cluster mode):     accepts %.2f, CPU per transfer in the burst %.2f, burst and drain %.2f",
			results[2].acceptedPerSec/results[1].acceptedPerSec, results[2].burst.cpuMs/results[1].burst.cpuMs, results[2].whole.cpuMs/results[1].whole.cpuMs)
	}
}

// benchDatabase creates database name on the server of adminURL, with
// pg_stat_statements, and returns its URL and a connection to it.
func benchDatabase(t *testing.T, adminURL, name string) (string, *sql.DB) {
	t.Helper()
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := sql.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		t.Fatalf("pg_stat_statements: %v", err)
	}
	return u.String(), db
}

// envOr is the environment variable name, or def when unset.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envInt is the environment variable name as a number, or def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

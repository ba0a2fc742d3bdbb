package cluster

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestClusterThroughput (benchmark; `make bench-cluster`, skipped unless
// TXENGINE_BENCH=1): the same burst — 1,000 accounts × 10 transfers (the
// breadth shape of make bench's shape rows) from 64
// concurrent clients spread over the listeners — against one node in
// single-node mode, one node in cluster mode and three nodes in cluster
// mode, each on its own PostgreSQL database and geth --dev. It logs
// accepted/s and the time until every accepted transfer completed, and
// checks exactly-once as the other cluster tests do. All runs share this
// machine's cores with the load generator, the database and geth.
func TestClusterThroughput(t *testing.T) {
	if os.Getenv("TXENGINE_BENCH") != "1" {
		t.Skip("benchmark: run with `make bench-cluster` (TXENGINE_BENCH=1)")
	}
	const accounts, per, clients = 1000, 10, 64
	type result struct {
		name             string
		acceptedPerSec   float64
		drain, burstTime time.Duration
	}
	var results []result
	for _, c := range []struct {
		name     string
		provider string
		nodes    int
	}{
		{"1 node, single-node mode", single, 1},
		{"1 node, cluster mode", automanaged, 1},
		{"3 nodes, cluster mode", automanaged, 3},
	} {
		t.Run(fmt.Sprintf("%d-%s", c.nodes, c.name), func(t *testing.T) {
			s := newStack(t, c.provider, c.nodes)
			accts := s.createAccounts(accounts, 12)
			s.waitFunded(accts, 5*time.Minute)
			jobs := newJobs(accts, per, len(s.nodes))
			b := s.startBurst(t, accts, jobs, clients)
			b.wait()
			logBurst(t, "burst", jobs, b.elapsed)
			began := time.Now()
			rows := s.waitDrained(jobs, 5*time.Minute)
			drain := time.Since(began)
			accepted, _, _, _ := summary(jobs)
			if accepted != len(jobs) {
				t.Errorf("%d of %d transfers accepted, want all (no node went away)", accepted, len(jobs))
			}
			s.checkExactlyOnce(accts, jobs, rows, min(2, c.nodes))
			results = append(results, result{c.name, float64(accepted) / b.elapsed.Seconds(), drain, b.elapsed})
		})
	}
	for _, r := range results {
		t.Logf("%-26s accepted %7.0f/s (burst %s), all completed %s after the burst",
			r.name, r.acceptedPerSec, r.burstTime.Round(time.Millisecond), r.drain.Round(time.Millisecond))
	}
}

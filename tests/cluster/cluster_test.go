package cluster

import (
	"testing"
	"time"
)

// TestSingleNodeBaseline runs the harness with one node and cluster mode
// off (the default): the same burst and checks as the cluster tests, at a
// small size. It is the baseline of their timings and checks the harness
// itself.
func TestSingleNodeBaseline(t *testing.T) {
	s := newStack(t, single, 1)
	accts := s.createAccounts(50, 4)
	s.waitFunded(accts, 60*time.Second)
	jobs := newJobs(accts, 4, 1)
	b := s.startBurst(t, accts, jobs, 8)
	b.wait()
	logBurst(t, "burst", jobs, b.elapsed)
	began := time.Now()
	rows := s.waitDrained(jobs, 3*time.Minute)
	t.Logf("drained in %s after the burst", time.Since(began).Round(time.Millisecond))
	if n := countAccepted(jobs); n != len(jobs) {
		t.Errorf("%d of %d transfers accepted by the only node, want all", n, len(jobs))
	}
	s.checkExactlyOnce(accts, jobs, rows, 1)
}

// TestClusterBurstKill: three nodes (automanaged membership, static peers)
// share PostgreSQL and geth --dev. 200 accounts are created over the three
// listeners; a burst of 5 transfers per account (1,000) is sent by
// concurrent clients round-robin over the listeners, and one node is
// killed with SIGKILL once a third of them are accepted. Requests to the
// dead node fail; the client tries the next node with the same
// Idempotency-Key. Every accepted transfer completes exactly once (see
// checkExactlyOnce), the work of the dead node included, and an events
// subscription on the token, processed by the lease holder, delivers each
// one's Transfer once, without gaps, across the kill. The killed node
// then starts again, rejoins, and a second small burst completes too.
func TestClusterBurstKill(t *testing.T) {
	s := newStack(t, automanaged, 3)
	accts := s.createAccounts(200, 12)
	s.waitFunded(accts, 90*time.Second)
	jobs := newJobs(accts, 5, len(s.nodes))
	sub := s.subscribe()

	// The victim is the node that runs the network's watcher (it holds the
	// network's lease), the most work to take over; node1 if none does.
	holder := s.leaseHolder()
	victim := holder
	if victim == nil {
		victim = s.nodes[1]
	}
	b := s.startBurst(t, accts, jobs, 24)
	for b.accepted.Load() < int64(len(jobs)/3) {
		select {
		case <-b.done:
			t.Fatalf("the burst ended before a third was accepted (%d of %d)", b.accepted.Load(), len(jobs))
		case <-time.After(10 * time.Millisecond):
		}
	}
	victim.kill()
	killed := time.Now()
	t.Logf("%s (holder of the network's lease: %v) killed (SIGKILL) %s into the burst, after %d of %d transfers were accepted",
		victim.name, victim == holder, killed.Sub(b.began).Round(time.Millisecond), b.accepted.Load(), len(jobs))
	b.wait()
	logBurst(t, "burst", jobs, b.elapsed)

	drain := time.Now()
	rows := s.waitDrained(jobs, 6*time.Minute)
	t.Logf("drained: every accepted transfer ended %s after the burst, %s after the kill",
		time.Since(drain).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	s.checkExactlyOnce(accts, jobs, rows, 2)
	sub.check(t, rows, 2*time.Minute)
	if t.Failed() {
		return
	}

	// The killed node comes back on its ports and data dir and rejoins.
	back := time.Now()
	victim.start()
	victim.waitReady(90 * time.Second)
	t.Logf("%s restarted and ready in %s", victim.name, time.Since(back).Round(time.Millisecond))
	more := newJobs(accts[:60], 1, len(s.nodes))
	b2 := s.startBurst(t, accts, more, 12)
	b2.wait()
	logBurst(t, "burst after the rejoin", more, b2.elapsed)
	if n := countAccepted(more); n != len(more) {
		t.Errorf("after the rejoin %d of %d transfers accepted, want all", n, len(more))
	}
	drain = time.Now()
	all := append(jobs, more...)
	rows = s.waitDrained(all, 3*time.Minute)
	t.Logf("drained the burst after the rejoin in %s", time.Since(drain).Round(time.Millisecond))
	s.checkExactlyOnce(accts, all, rows, 2)
}

// TestClusterRollingRestart: three nodes under a steady load over all their
// listeners (clients retry a refused request on another node, with the same
// Idempotency-Key); each node in turn is stopped with SIGTERM, exits, is
// started again and becomes ready, while the load runs. Nothing accepted is
// lost: every accepted transfer completes exactly once.
func TestClusterRollingRestart(t *testing.T) {
	s := newStack(t, automanaged, 3)
	accts := s.createAccounts(60, 8)
	s.waitFunded(accts, 90*time.Second)

	l := s.startLoad(t, accts, 6, 100*time.Millisecond)
	time.Sleep(5 * time.Second)
	if l.acceptedCount() == 0 {
		t.Fatal("no transfer accepted in the first 5 s of the load")
	}
	for _, n := range s.nodes {
		before := l.acceptedCount()
		began := time.Now()
		n.stop()
		stopped := time.Now()
		n.start()
		n.waitReady(90 * time.Second)
		t.Logf("%s restarted: exited %s after SIGTERM, ready %s after start; %d transfers accepted meanwhile",
			n.name, stopped.Sub(began).Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond), l.acceptedCount()-before)
		time.Sleep(5 * time.Second)
	}
	jobs := l.stop()
	logBurst(t, "load", jobs, time.Since(l.began))

	drain := time.Now()
	rows := s.waitDrained(jobs, 5*time.Minute)
	t.Logf("drained: every accepted transfer ended %s after the load stopped", time.Since(drain).Round(time.Millisecond))
	s.checkExactlyOnce(accts, jobs, rows, 2)
}

// TestClusterEtcd: three nodes whose membership is kept in etcd (provider
// etcd, a throwaway etcd server on loopback); a burst of 3 transfers for
// each of 30 accounts spread over the nodes completes exactly once.
func TestClusterEtcd(t *testing.T) {
	s := newStack(t, etcdProv, 3)
	accts := s.createAccounts(30, 6)
	s.waitFunded(accts, 60*time.Second)
	jobs := newJobs(accts, 3, len(s.nodes))
	b := s.startBurst(t, accts, jobs, 12)
	b.wait()
	logBurst(t, "burst", jobs, b.elapsed)
	if n := countAccepted(jobs); n != len(jobs) {
		t.Errorf("%d of %d transfers accepted, want all (no node went away)", n, len(jobs))
	}
	drain := time.Now()
	rows := s.waitDrained(jobs, 3*time.Minute)
	t.Logf("drained in %s after the burst", time.Since(drain).Round(time.Millisecond))
	s.checkExactlyOnce(accts, jobs, rows, 2)
}

// logBurst logs what a burst or a load did: sent, accepted, accepted/s,
// refused, tries that failed in transit, and who accepted.
func logBurst(t *testing.T, what string, jobs []*job, elapsed time.Duration) {
	t.Helper()
	accepted, refused, ambiguous, perNode := summary(jobs)
	tries := 0
	for _, j := range jobs {
		tries += j.tries
	}
	t.Logf("%s: %d transfers sent (%d requests) in %s: %d accepted (%.1f/s), %d not accepted, %d with a try failed in transit; accepted per node %v",
		what, len(jobs), tries, elapsed.Round(time.Millisecond), accepted, float64(accepted)/elapsed.Seconds(), refused, ambiguous, perNode)
}

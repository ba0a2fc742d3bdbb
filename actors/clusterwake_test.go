package actors_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// pumpCounter is a log handler that counts the submitters' pumps (their
// debug line "pump") and drops everything else.
type pumpCounter struct{ n *atomic.Int64 }

func (h pumpCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h pumpCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "pump" {
		h.n.Add(1)
	}
	return nil
}

func (h pumpCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h pumpCounter) WithGroup(string) slog.Handler      { return h }

// TestClusterAcceptedWakeSkipsFullWindow: in cluster mode, as in
// single-node mode, the wake that follows a group commit does not make the
// account grain pump (read the store for nothing) while its in-flight
// window is full; the block that frees the window does. Before the wake
// carried Accepted across nodes, every group commit of either member made
// the grain pump: 40 transfers accepted one by one, 20 pumps (wakes that
// met in the request queue merge).
func TestClusterAcceptedWakeSkipsFullWindow(t *testing.T) {
	var pumps atomic.Int64
	// Blocks every 4 s: the window (16) stays full while the test counts.
	f := newClusterFixtureWith(t, 2, fixtureOptions{blocks: 4 * time.Second, log: pumpCounter{&pumps}, maxWindow: 16})
	ids := f.submitOn(0, 16)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var submitted int
		if err := f.db.QueryRow(`SELECT count(*) FROM transactions WHERE account_id = $1 AND status <> 'new'`, f.account.ID).Scan(&submitted); err != nil {
			t.Fatal(err)
		}
		if submitted == 16 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 16 transactions left the queue in 30 s", submitted)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := pumps.Load()
	const more = 80
	for i := range more {
		ids = append(ids, f.submitOn(i%2, 1)...)
		time.Sleep(5 * time.Millisecond) // each its own group commit and wake
	}
	time.Sleep(300 * time.Millisecond) // the wakes reach the grain
	// A block, the periodic check or the recovery sweep (every second
	// here) may fall within the count: some pumps, not one per accept.
	if got := pumps.Load() - before; got > more/4 {
		t.Errorf("%d pumps for %d transfers accepted one by one while the window was full, want at most %d", got, more, more/4)
	}
	f.checkNonces(f.waitCompleted(ids, 90*time.Second))
}

// TestClusterWakesCrossInBatches: once a node knows where an account's
// grain is (the cluster's PID cache, filled by its first wake), the wakes
// of its accepts reach the grain on the other node in WakeBatch messages
// (one per node and round), not one cluster request per group commit; the
// grain's node sends none for its own grain; the transactions complete.
func TestClusterWakesCrossInBatches(t *testing.T) {
	f := newClusterFixture(t, 2)
	// The grain's placement follows the membership: let both members agree
	// on it first, or a member that joins late can move the grain onto the
	// node this test takes for the one without it.
	settle := time.Now().Add(30 * time.Second)
	for !f.systems[0].MembershipSettled() || !f.systems[1].MembershipSettled() {
		if time.Now().After(settle) {
			t.Fatal("the members' views of the cluster did not settle in 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ids := f.submitOn(0, 1)
	f.waitCompleted(ids, 60*time.Second)
	var owner string
	if err := f.db.QueryRow(`SELECT node FROM tx_attempts WHERE account_id = $1 LIMIT 1`, f.account.ID).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	other := 0
	if f.nodes[0] == owner {
		other = 1
	}
	// The membership converges within seconds (automanaged polls every
	// 2 s); until the other member located the grain, its wakes go alone.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ids = append(ids, f.submitOn(other, 5)...)
		time.Sleep(100 * time.Millisecond)
		if b, _ := f.systems[other].WakeBatches(); b > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member without the grain sent no wake batch in 30 s")
		}
	}
	before, _ := f.systems[other].WakeBatches()
	ids = append(ids, f.submitOn(other, 20)...)
	f.checkNonces(f.waitCompleted(ids, 60*time.Second))
	after, wakes := f.systems[other].WakeBatches()
	if after-before < 1 || wakes < after {
		t.Errorf("wake batches %d before 20 more accepts, %d after (%d wakes): want the accepts' wakes in batches", before, after, wakes)
	}
	if b, _ := f.systems[1-other].WakeBatches(); b != 0 {
		t.Errorf("the member with the grain sent %d wake batches, want none (its own grain is reached locally)", b)
	}
}

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
// the grain pump: 40 transfers accepted one by one, about 40 pumps.
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
	const more = 40
	for i := range more {
		ids = append(ids, f.submitOn(i%2, 1)...)
		time.Sleep(5 * time.Millisecond) // each its own group commit and wake
	}
	time.Sleep(300 * time.Millisecond) // the wakes reach the grain
	// A block or the periodic check may fall within the count: a few pumps.
	if got := pumps.Load() - before; got > 8 {
		t.Errorf("%d pumps for %d transfers accepted one by one while the window was full, want at most 8", got, more)
	}
	f.checkNonces(f.waitCompleted(ids, 90*time.Second))
}

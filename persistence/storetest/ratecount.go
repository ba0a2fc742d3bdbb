package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// testRateCounters: a request counts in both sliding windows only when both
// are under their limits; no period of a window's length holds more than
// its limit, across bucket boundaries and concurrently; keys are
// independent; pruning forgets only buckets no window counts in any more.
func testRateCounters(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	hour := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	sec := hour.Add(25*time.Minute + 31*time.Second)
	minute := sec.Truncate(time.Minute)
	count := func(key string, at time.Time, perSec, perHour, wantSec, wantHour int, wantAllowed bool) (engine.RateWindowCount, engine.RateWindowCount) {
		t.Helper()
		second, hr, allowed, err := s.CountRequest(ctx, key, at, perSec, perHour)
		must(t, err)
		if second.Count != wantSec || hr.Count != wantHour || allowed != wantAllowed {
			t.Fatalf("CountRequest(%s, %s) = %d, %d, %v; want %d, %d, %v",
				key, at.Format("15:04:05.000"), second.Count, hr.Count, allowed, wantSec, wantHour, wantAllowed)
		}
		return second, hr
	}
	wantOldest := func(what string, w engine.RateWindowCount, want time.Time) {
		t.Helper()
		if !w.Oldest.Equal(want) {
			t.Fatalf("%s: oldest bucket %s, want %s", what, w.Oldest.Format("15:04:05.000"), want.Format("15:04:05.000"))
		}
	}
	secW, hourW := count("u1", sec, 2, 3, 1, 1, true)
	wantOldest("first request, second", secW, sec)
	wantOldest("first request, hour", hourW, minute)
	secW, _ = count("u1", sec.Add(50*time.Millisecond), 2, 3, 2, 2, true)
	wantOldest("second request", secW, sec)
	count("u1", sec.Add(150*time.Millisecond), 2, 3, 2, 2, false) // the second is full; not counted
	count("u2", sec, 2, 3, 1, 1, true)                            // another key
	// One second later the first bucket still overlaps the window (it
	// ends 100 ms later): refused; once it has left, one more fits.
	count("u1", sec.Add(time.Second), 2, 3, 2, 2, false)
	secW, hourW = count("u1", sec.Add(1100*time.Millisecond), 2, 3, 1, 3, true)
	wantOldest("after the first bucket left", secW, sec.Add(1100*time.Millisecond))
	wantOldest("the hour", hourW, minute)
	count("u1", sec.Add(2500*time.Millisecond), 2, 3, 0, 3, false) // the hour is full
	count("u1", sec.Add(59*time.Minute), 2, 3, 0, 3, false)        // and slides: still full 59 min later

	// No double burst at a boundary: 10 at x.9 s fill the second; 10 at
	// (x+1).1 s are all refused (a period of one second holds all of
	// them); at (x+2).0 s the first ten have left and ten more fit.
	base := sec.Truncate(time.Second)
	for i := range 10 {
		count("u5", base.Add(900*time.Millisecond), 10, 100, i+1, i+1, true)
	}
	for range 10 {
		count("u5", base.Add(1100*time.Millisecond), 10, 100, 10, 10, false)
	}
	count("u5", base.Add(1999*time.Millisecond), 10, 100, 10, 10, false)
	for i := range 10 {
		count("u5", base.Add(2*time.Second), 10, 100, i+1, 11+i, true)
	}

	// Concurrent requests of one key, half of them in the next bucket:
	// exactly the limit passes.
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	errs := make(chan error, 20)
	for i := range 20 {
		at := sec.Add(time.Duration(i%2) * engine.RateSecondBucket)
		wg.Go(func() {
			_, _, ok, err := s.CountRequest(ctx, "u3", at, 5, 100)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if allowed != 5 {
		t.Fatalf("%d of 20 concurrent requests allowed, want 5", allowed)
	}

	// Pruning at sec + 90 min: u1's second buckets are forgotten, its hour
	// buckets are not (they are younger than two hours).
	at := sec.Add(1300 * time.Millisecond)
	must(t, s.PruneRateCounters(ctx, sec.Add(90*time.Minute)))
	count("u1", at, 2, 3, 0, 3, false) // the hour was not forgotten: still full
	must(t, s.PruneRateCounters(ctx, hour.Add(3*time.Hour)))
	count("u1", at, 2, 3, 1, 1, true) // both forgotten
	// A recent bucket survives pruning.
	recent := hour.Add(3 * time.Hour)
	count("u4", recent, 2, 3, 1, 1, true)
	must(t, s.PruneRateCounters(ctx, recent.Add(30*time.Second)))
	count("u4", recent, 2, 3, 2, 2, true)
}

// Backfill0008 checks what migration 0008 does to the broadcast versions
// recorded before it: they get their transaction's account and nonce, no
// node, epoch 0 and no signing time. old is a store migrated up to version
// 7 only; exec runs a statement on its database (placeholders ?); migrate
// closes old and returns the store on the same database with every
// migration applied.
func Backfill0008(t *testing.T, old engine.Store, exec func(query string, args ...any) error, migrate func() engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, old)
	tx := f.tx("dev", 1)
	insert(t, old, tx)
	first, second := randomHash(t), randomHash(t)
	must(t, exec(`UPDATE transactions SET status = 'submitted', nonce = 4, hash = ? WHERE id = ?`, second.Hex(), tx.ID))
	for _, h := range []common.Hash{first, second} {
		must(t, exec(`INSERT INTO tx_attempts (network, hash, tx_id) VALUES (?, ?, ?)`, "dev", h.Hex(), tx.ID))
	}
	s := migrate()
	got, err := s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	want := []engine.Attempt{{TxID: tx.ID, Nonce: 4, Hash: first}, {TxID: tx.ID, Nonce: 4, Hash: second}}
	if first.Hex() > second.Hex() {
		want[0], want[1] = want[1], want[0]
	}
	wantAttempts(t, got, want, f.account.ID, "dev")
	// The transaction goes on under a lease.
	fence, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	got0 := get(t, s, tx.ID)
	must(t, s.MarkReplaced(ctx, fence, replacement(t, got0, 50)))
}

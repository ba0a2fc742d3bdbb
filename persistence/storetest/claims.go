package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// testClaimDueCallbacks: claimers get disjoint rows in due order; a node
// may claim its own rows again; an expired claim, or one the Mark methods
// cleared, is claimable by another node.
func testClaimDueCallbacks(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	var txs []*engine.Transaction
	for i := range 6 {
		tx := f.tx("dev", i)
		tx.Callbacks = []string{"https://example.com/cb"}
		insert(t, s, tx)
		must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(300+i)))
		txs = append(txs, tx)
	}
	txOf := func(rows []engine.Callback) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, r.TxID)
		}
		return out
	}
	claim := func(node string, now time.Time, limit int) []engine.Callback {
		t.Helper()
		rows, err := s.ClaimDueCallbacks(ctx, node, now, 10*time.Second, limit)
		must(t, err)
		return rows
	}
	now := at(400)
	if rows := claim("a", at(299), 10); len(rows) != 0 {
		t.Fatalf("claimed %v before any row is due", txOf(rows))
	}
	ra := claim("a", now, 2)
	if got, want := txOf(ra), txIDs(txs[:2]); !slices.Equal(got, want) {
		t.Fatalf("a claimed %v, want %v", got, want)
	}
	rb := claim("b", now, 3)
	if got, want := txOf(rb), txIDs(txs[2:5]); !slices.Equal(got, want) {
		t.Fatalf("b claimed %v, want %v (disjoint from a's)", got, want)
	}
	// a claims again: its own rows and the one left, none of b's.
	if got, want := txOf(claim("a", now.Add(time.Second), 10)), append(txIDs(txs[:2]), txs[5].ID); !slices.Equal(got, want) {
		t.Fatalf("a claimed again %v, want %v", got, want)
	}
	if rows := claim("c", now.Add(time.Second), 10); len(rows) != 0 {
		t.Fatalf("c claimed %v while every row is claimed", txOf(rows))
	}
	// The Mark methods clear the claim: a retry due at once is d's to take.
	must(t, s.MarkCallbackRetry(ctx, ra[0].ID, 1, now.Add(2*time.Second), "HTTP status 500"))
	must(t, s.MarkCallbackDelivered(ctx, ra[1].ID, 1, now.Add(2*time.Second)))
	must(t, s.MarkCallbackAbandoned(ctx, rb[0].ID, 1, "refused"))
	if got, want := txOf(claim("d", now.Add(2*time.Second), 10)), txIDs(txs[:1]); !slices.Equal(got, want) {
		t.Fatalf("d claimed %v after the Mark methods, want %v", got, want)
	}
	// b's claims (until now+10 s) expire: c takes them; a's last claim
	// (until now+11 s) holds a second more, d's (now+12 s) two.
	if got, want := txOf(claim("c", now.Add(10*time.Second), 10)), txIDs(txs[3:5]); !slices.Equal(got, want) {
		t.Fatalf("c claimed %v at b's expiry, want %v", got, want)
	}
	if got, want := txOf(claim("b", now.Add(11*time.Second), 10)), txIDs(txs[5:]); !slices.Equal(got, want) {
		t.Fatalf("b claimed %v at a's expiry, want %v", got, want)
	}
	if rows := claim("c", now.Add(11*time.Second), 0); len(rows) != 0 {
		t.Fatalf("limit 0 claimed %v", txOf(rows))
	}
}

// testConcurrentClaims: claimers racing over the same due rows get
// disjoint sets that together are all the rows.
func testConcurrentClaims(t *testing.T, s engine.Store) {
	const rows, claimers = 40, 4
	ctx := ctxOf(t)
	f := newFixture(t, s)
	for i := range rows / 2 {
		tx := f.tx("dev", i)
		tx.Callbacks = []string{"https://example.com/a", "https://example.com/b"}
		insert(t, s, tx)
		must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(300)))
	}
	var (
		mu     sync.Mutex
		owner  = map[string]string{}
		errs   = make(chan error, claimers)
		wg     sync.WaitGroup
		start  = make(chan struct{})
		dupErr error
	)
	for c := range claimers {
		node := fmt.Sprintf("node-%d", c)
		wg.Go(func() {
			<-start
			owned := 0
			for {
				// Its own rows come again (as for a dispatcher, whose
				// deliveries in flight renew their claims): ask for more.
				got, err := s.ClaimDueCallbacks(ctx, node, at(400), time.Minute, owned+3)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", node, err)
					return
				}
				fresh := 0
				mu.Lock()
				for _, r := range got {
					switch prev, ok := owner[r.ID]; {
					case !ok:
						owner[r.ID] = node
						fresh++
					case prev != node && dupErr == nil:
						dupErr = fmt.Errorf("row %s claimed by %s and %s", r.ID, prev, node)
					}
				}
				mu.Unlock()
				owned += fresh
				if fresh == 0 {
					return // only its own rows are left to it
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if dupErr != nil {
		t.Fatal(dupErr)
	}
	if len(owner) != rows {
		t.Fatalf("%d rows claimed, want %d", len(owner), rows)
	}
}

// testNetworkLease: the holder renews, another node cannot take the lease
// before it expires and takes it after; the epoch goes up with each new
// tenure; a release lets another node take it at once.
func testNetworkLease(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	acquire := func(node string, wantHeld bool, wantEpoch int64) {
		t.Helper()
		held, epoch, err := s.AcquireNetworkLease(ctx, "dev", node, networkLeaseTTL)
		must(t, err)
		if held != wantHeld || epoch != wantEpoch {
			t.Fatalf("AcquireNetworkLease(dev, %s) = %v, %d; want %v, %d", node, held, epoch, wantHeld, wantEpoch)
		}
	}
	if _, _, err := s.AcquireNetworkLease(ctx, "dev", "a", 0); err == nil {
		t.Fatal("AcquireNetworkLease with ttl 0 succeeded")
	}
	acquire("a", true, 1)
	acquire("a", true, 1) // renewal
	acquire("b", false, 0)
	// Another network is another lease.
	if held, epoch, err := s.AcquireNetworkLease(ctx, "main", "b", time.Minute); err != nil || !held || epoch != 1 {
		t.Fatalf("lease of another network = %v, %d, %v", held, epoch, err)
	}
	// a keeps renewing past the first ttl: b still cannot take it.
	time.Sleep(networkLeaseTTL / 2)
	acquire("a", true, 1)
	time.Sleep(networkLeaseTTL/2 + 20*time.Millisecond)
	acquire("b", false, 0)
	// a stops renewing: after the ttl, b takes it.
	time.Sleep(networkLeaseTTL + 50*time.Millisecond)
	acquire("b", true, 2)
	acquire("a", false, 0)
	// Only the holder releases; b's release frees it for a at once.
	must(t, s.ReleaseNetworkLease(ctx, "dev", "a"))
	acquire("a", false, 0)
	must(t, s.ReleaseNetworkLease(ctx, "dev", "b"))
	acquire("a", true, 3)
	// A tenure that expired without a taker is a new tenure, too.
	time.Sleep(networkLeaseTTL + 50*time.Millisecond)
	acquire("a", true, 4)
}

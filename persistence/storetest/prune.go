package storetest

import (
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// testPruneOutbox: PruneCallbacks deletes ended outbox rows (delivered,
// abandoned) created before the cutoff, a batch at a time, never a pending
// one nor a newer one; PruneSubscriptionEvents deletes the stored
// deliveries created before the cutoff once no outbox row refers to them,
// so the pull API pages from the oldest one kept.
func testPruneOutbox(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	url := "https://a.example/1"
	sub := createSub(t, s, newSubscription(t, f.user.ID, "dev", 1, url))
	h := randomHash(t)
	// Deliveries 1-3 are old (at(10)..), 4 is new (at(1000)).
	evs := []engine.SubscriptionEvent{delivery(t, sub, 1, 10, h, 0, 10), delivery(t, sub, 2, 10, h, 1, 11),
		delivery(t, sub, 3, 11, h, 0, 12), delivery(t, sub, 4, 12, h, 0, 1000)}
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev", Events: evs}))
	// Three old transactions' rows: one delivered, one abandoned, one
	// pending; a new one delivered.
	var txRows []string
	for _, sec := range []int{20, 21, 22, 1001} {
		tx := f.tx("dev", sec)
		tx.Callbacks = []string{url}
		insert(t, s, tx)
		must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(sec)))
		txRows = append(txRows, outbox(t, s)[tx.ID][0].ID)
	}
	must(t, s.MarkCallbackDelivered(ctx, txRows[0], 1, at(30)))
	must(t, s.MarkCallbackAbandoned(ctx, txRows[1], 39, "HTTP status 500"))
	must(t, s.MarkCallbackDelivered(ctx, txRows[3], 1, at(1002)))
	// Deliveries 1 and 2 delivered, 3 still pending (behind nothing: due).
	rows, err := s.DueCallbacks(ctx, farFuture, 100)
	must(t, err)
	byEvent := map[string]string{}
	for _, r := range rows {
		if r.EventID != "" {
			byEvent[r.EventID] = r.ID
		}
	}
	must(t, s.MarkCallbackDelivered(ctx, byEvent[evs[0].ID], 1, at(31)))
	rows, err = s.DueCallbacks(ctx, farFuture, 100)
	must(t, err)
	for _, r := range rows {
		if r.EventID == evs[1].ID {
			must(t, s.MarkCallbackDelivered(ctx, r.ID, 1, at(32)))
		}
	}
	cutoff := at(500)
	// Ended and old: txRows[0], txRows[1], the rows of deliveries 1 and 2.
	n, err := s.PruneCallbacks(ctx, cutoff, 3)
	if err != nil || n != 3 {
		t.Fatalf("PruneCallbacks(batch 3) = %d, %v; want 3", n, err)
	}
	if n, err = s.PruneCallbacks(ctx, cutoff, 3); err != nil || n != 1 {
		t.Fatalf("second PruneCallbacks = %d, %v; want 1", n, err)
	}
	if n, err = s.PruneCallbacks(ctx, cutoff, 3); err != nil || n != 0 {
		t.Fatalf("third PruneCallbacks = %d, %v; want 0", n, err)
	}
	wantPending(t, s, 3) // txRows[2] and the rows of deliveries 3 and 4 are kept
	if n, err = s.PruneCallbacks(ctx, farFuture, 10); err != nil || n != 1 {
		t.Fatalf("PruneCallbacks of every ended row = %d, %v; want 1 (the new delivered one)", n, err)
	}
	wantPending(t, s, 3)

	// Deliveries 1 and 2 have no outbox row left; 3 has a pending one; 4
	// is new.
	if n, err = s.PruneSubscriptionEvents(ctx, cutoff, 1); err != nil || n != 1 {
		t.Fatalf("PruneSubscriptionEvents(batch 1) = %d, %v; want 1", n, err)
	}
	if n, err = s.PruneSubscriptionEvents(ctx, cutoff, 10); err != nil || n != 1 {
		t.Fatalf("second PruneSubscriptionEvents = %d, %v; want 1", n, err)
	}
	kept, err := s.SubscriptionEvents(ctx, sub.ID, 0, 10)
	must(t, err)
	if len(kept) != 2 || kept[0].Seq != 3 || kept[1].Seq != 4 {
		t.Fatalf("deliveries kept = %+v, want seq 3 (pending callback) and 4 (new)", kept)
	}
	var p engine.Pruned
	if p, err = engine.PruneStep(ctx, s, farFuture, 10, time.Minute); err != nil || p != (engine.Pruned{}) {
		t.Fatalf("PruneStep with pending rows left = %+v, %v; want nothing pruned", p, err)
	}
}

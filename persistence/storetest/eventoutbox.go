package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// The callback outbox's rows of subscription deliveries: their ordering
// rule, a race of steps and deliveries, and the migration that added them.

// testEventOutboxOrder: the rows of one subscription and URL are due one
// at a time, in seq order, in DueCallbacks and ClaimDueCallbacks; another
// URL, another subscription and transactions' rows are independent.
func testEventOutboxOrder(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	u1, u2 := "https://a.example/1", "https://b.example/2"
	sub := createSub(t, s, newSubscription(t, f.user.ID, "dev", 1, u1, u2))
	solo := createSub(t, s, newSubscription(t, f.user.ID, "dev", 2, u1))
	h := randomHash(t)
	e1, e2, e3 := delivery(t, sub, 1, 10, h, 0, 5), delivery(t, sub, 2, 10, h, 1, 5), delivery(t, sub, 3, 11, h, 0, 6)
	s1 := delivery(t, solo, 1, 10, h, 2, 5)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{e1, e2, e3, s1}}))
	tx := f.tx("dev", 3)
	tx.Callbacks = []string{u1}
	insert(t, s, tx)
	must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(4)))
	wantPending(t, s, 8)

	// due returns the (delivery seq of sub, URL) pairs due, and whether
	// the rows of solo and tx are among them.
	type key struct {
		seq int64
		url string
	}
	due := func(rows []engine.Callback) (map[key]string, bool, bool) {
		out := map[key]string{}
		soloDue, txDue := false, false
		for _, r := range rows {
			switch {
			case r.TxID == tx.ID:
				txDue = true
			case r.SubscriptionID == solo.ID:
				soloDue = true
			case r.SubscriptionID == sub.ID:
				out[key{r.EventSeq, r.URL}] = r.ID
			}
		}
		return out, soloDue, txDue
	}
	check := func(what string, want ...key) map[key]string {
		t.Helper()
		rows, err := s.DueCallbacks(ctx, farFuture, 100)
		must(t, err)
		got, soloDue, txDue := due(rows)
		if !soloDue || !txDue {
			t.Fatalf("%s: the rows of another subscription (%v) or of a transaction (%v) are not due", what, soloDue, txDue)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: due %v, want %v", what, got, want)
		}
		for _, k := range want {
			if got[k] == "" {
				t.Fatalf("%s: due %v, want %v", what, got, want)
			}
		}
		return got
	}
	rows := check("at first", key{1, u1}, key{1, u2})
	firstToU1 := rows[key{1, u1}]
	// A failed attempt of seq 1 to u1 (retry later) still holds back seq 2
	// to u1, even while that retry is not due.
	must(t, s.MarkCallbackRetry(ctx, firstToU1, 1, farFuture.Add(time.Hour), "HTTP status 500"))
	check("after a retry of 1 to u1", key{1, u2})
	must(t, s.MarkCallbackDelivered(ctx, rows[key{1, u2}], 1, at(7)))
	rows = check("after 1 to u2 was delivered", key{2, u2})

	// ClaimDueCallbacks follows the same rule.
	claimed, err := s.ClaimDueCallbacks(ctx, "node-a", farFuture, time.Minute, 100)
	must(t, err)
	got, _, _ := due(claimed)
	if len(got) != 1 || got[key{2, u2}] == "" {
		t.Fatalf("claimed %v, want only 2 to u2", got)
	}
	must(t, s.MarkCallbackAbandoned(ctx, firstToU1, 2, "gave up"))
	rows = check("after 1 to u1 was abandoned", key{2, u1}, key{2, u2})
	claimed, err = s.ClaimDueCallbacks(ctx, "node-b", farFuture, time.Minute, 100)
	must(t, err)
	got, _, _ = due(claimed)
	if len(got) != 1 || got[key{2, u1}] == "" {
		t.Fatalf("node-b claimed %v, want only 2 to u1 (2 to u2 is node-a's)", got)
	}
	must(t, s.MarkCallbackDelivered(ctx, rows[key{2, u1}], 1, at(8)))
	must(t, s.MarkCallbackDelivered(ctx, rows[key{2, u2}], 1, at(8)))
	rows = check("after 2 was delivered", key{3, u1}, key{3, u2})

	// A later step's rows wait behind the pending ones too, and are due
	// once those are delivered; a pair without pending rows is due at once.
	e4 := delivery(t, sub, 4, 12, h, 0, 9)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{e4}}))
	check("after a step added 4", key{3, u1}, key{3, u2})
	must(t, s.MarkCallbackDelivered(ctx, rows[key{3, u1}], 1, at(10)))
	check("after 3 to u1 was delivered", key{4, u1}, key{3, u2})
	pending, err := s.PendingCallbacks(ctx)
	must(t, err)
	all, err := s.DueCallbacks(ctx, farFuture, 100)
	must(t, err)
	for _, r := range all {
		if r.SubscriptionID == solo.ID {
			must(t, s.MarkCallbackDelivered(ctx, r.ID, 1, at(10)))
		}
	}
	s2 := delivery(t, solo, 2, 12, h, 1, 11)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{s2}}))
	if rows := eventRows(t, s); len(rows[s2.ID]) != 1 {
		t.Fatalf("the row of a subscription without pending rows is not due: %+v", rows)
	}
	wantPending(t, s, pending)
}

// Outbox0013 is the migration test of 0013: an outbox row of a transaction
// stored before (with its attempts, error and claim) survives the rebuild
// of the table; new rows of transactions and deliveries go in after it.
// old is the store at version 12, exec runs a statement on it, reopen
// returns it migrated.
func Outbox0013(t *testing.T, old engine.Store, exec func(q string, args ...any) error, reopen func() engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, old)
	tx := f.tx("dev", 1)
	tx.Callbacks = []string{"https://a.example/cb"}
	insert(t, old, tx)
	// The row as 0005 and 0008 wrote it (the times those of the
	// transaction, in the database's encoding).
	must(t, exec(`INSERT INTO callback_outbox (id, tx_id, url, status, attempts, next_attempt, last_error, created, claimed_by, claimed_until)
		SELECT 'row-0013', id, 'https://a.example/cb', 'pending', 2, created, 'HTTP status 500', created, 'node-x', created
		FROM transactions WHERE id = ?`, tx.ID))
	must(t, exec(`INSERT INTO callback_outbox (id, tx_id, url, status, attempts, next_attempt, last_error, created, delivered)
		SELECT 'done-0013', id, 'https://b.example/cb', 'delivered', 1, created, '', created, created
		FROM transactions WHERE id = ?`, tx.ID))
	s := reopen()
	rows, err := s.DueCallbacks(ctx, farFuture, 10)
	must(t, err)
	if len(rows) != 1 {
		t.Fatalf("due rows after 0013 = %+v, want the pending one", rows)
	}
	r := rows[0]
	if r.ID != "row-0013" || r.TxID != tx.ID || r.EventID != "" || r.SubscriptionID != "" || r.EventSeq != 0 ||
		r.URL != "https://a.example/cb" || r.Status != engine.CallbackPending || r.Attempts != 2 || r.LastError != "HTTP status 500" {
		t.Fatalf("row after 0013 = %+v", r)
	}
	wantTime(t, "migrated NextAttempt", r.NextAttempt, tx.Created)
	// Its claim survived: another node cannot take it before it ends (it
	// ended at the transaction's creation, so it can now).
	claimed, err := s.ClaimDueCallbacks(ctx, "node-y", farFuture, time.Minute, 10)
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != "row-0013" {
		t.Fatalf("claimed after 0013 = %+v", claimed)
	}
	wantCode(t, s.MarkCallbackDelivered(ctx, "done-0013", 2, at(9)), engine.CodeConflict, "the delivered row stays delivered")
	must(t, s.MarkCallbackDelivered(ctx, "row-0013", 3, at(9)))
	// New rows go in after the migration, of both kinds.
	must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(10)))
	sub := createSub(t, s, newSubscription(t, f.user.ID, "dev", 11, "https://c.example/cb"))
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{delivery(t, sub, 1, 10, randomHash(t), 0, 12)}}))
	wantPending(t, s, 2)
}

// testEventOutboxRace: steps that add rows of a subscription and URL while
// its pending row is delivered concurrently never leave a row held without
// one to release it: after each round exactly the lowest pending row of the
// pair is due, and the queue drains.
func testEventOutboxRace(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	sub := createSub(t, s, newSubscription(t, u.ID, "dev", 1, "https://a.example/cb"))
	h := randomHash(t)
	seq := int64(1)
	must(t, s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
		Events: []engine.SubscriptionEvent{delivery(t, sub, seq, 10, h, 0, 2)}}))
	lowestDue := func(what string) (engine.Callback, bool) {
		t.Helper()
		n, err := s.PendingCallbacks(ctx)
		must(t, err)
		rows := eventRows(t, s)
		if n == 0 {
			if len(rows) != 0 {
				t.Fatalf("%s: due rows %+v without pending ones", what, rows)
			}
			return engine.Callback{}, false
		}
		if len(rows) != 1 {
			t.Fatalf("%s: %d pending rows, due %+v: want exactly the lowest", what, n, rows)
		}
		for _, r := range rows {
			return r[0], true
		}
		return engine.Callback{}, false
	}
	for round := range 25 {
		head, ok := lowestDue(fmt.Sprintf("round %d", round))
		seq++
		ev := delivery(t, sub, seq, 10+uint64(seq), h, 0, 3)
		errs := make(chan error, 2)
		go func() {
			errs <- s.SaveSubscriptionStep(ctx, engine.NetworkFence{}, engine.SubscriptionStep{Network: "dev",
				Events: []engine.SubscriptionEvent{ev}})
		}()
		go func() {
			if !ok {
				errs <- nil
				return
			}
			errs <- s.MarkCallbackDelivered(ctx, head.ID, 1, at(4))
		}()
		must(t, <-errs)
		must(t, <-errs)
	}
	var last int64
	for range 100 {
		head, ok := lowestDue("draining")
		if !ok {
			return
		}
		if head.EventSeq <= last {
			t.Fatalf("due seq %d after %d", head.EventSeq, last)
		}
		last = head.EventSeq
		must(t, s.MarkCallbackDelivered(ctx, head.ID, 1, at(5)))
	}
	t.Fatal("the queue does not drain")
}

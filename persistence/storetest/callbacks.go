package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// farFuture is a "now" at which every pending outbox row is due.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// outbox returns the pending outbox rows, grouped by transaction id.
func outbox(t *testing.T, s engine.Store) map[string][]engine.Callback {
	t.Helper()
	rows, err := s.DueCallbacks(ctxOf(t), farFuture, 1000)
	must(t, err)
	out := map[string][]engine.Callback{}
	for _, r := range rows {
		out[r.TxID] = append(out[r.TxID], r)
	}
	return out
}

// wantOutbox checks that transaction tx has exactly one pending, fresh row
// per URL of urls (in any order), due at ended, and returns them.
func wantOutbox(t *testing.T, rows map[string][]engine.Callback, tx *engine.Transaction, ended time.Time, urls ...string) []engine.Callback {
	t.Helper()
	got := rows[tx.ID]
	var gotURLs []string
	for _, r := range got {
		gotURLs = append(gotURLs, r.URL)
		if r.ID == "" || r.Status != engine.CallbackPending || r.Attempts != 0 || r.LastError != "" || r.Delivered != nil {
			t.Errorf("tx %s: outbox row %+v is not a fresh pending row", tx.ID, r)
		}
		wantTime(t, "outbox row NextAttempt", r.NextAttempt, ended)
		wantTime(t, "outbox row Created", r.Created, ended)
	}
	slices.Sort(gotURLs)
	want := slices.Clone(urls)
	slices.Sort(want)
	if !slices.Equal(gotURLs, want) {
		t.Fatalf("tx %s: outbox URLs = %v, want %v", tx.ID, gotURLs, want)
	}
	return got
}

func wantPending(t *testing.T, s engine.Store, want int) {
	t.Helper()
	n, err := s.PendingCallbacks(ctxOf(t))
	must(t, err)
	if n != want {
		t.Fatalf("PendingCallbacks = %d, want %d", n, want)
	}
}

// testCallbacksOnTerminal: every transition to completed or failed adds one
// outbox row per callback URL in its database transaction, and nothing else
// does.
func testCallbacksOnTerminal(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	urls := []string{"https://a.example/cb", "https://b.example/cb?x=1"}
	withCB := func(sec int) *engine.Transaction {
		tx := f.tx("dev", sec)
		tx.Callbacks = slices.Clone(urls)
		return tx
	}
	failed, plain, mined, minedFailed, released, rejected, cancelled, waiting :=
		withCB(1), f.tx("dev", 2), withCB(3), withCB(4), withCB(5), withCB(6), withCB(7), withCB(8)
	waiting.Status = engine.StatusWaiting
	insert(t, s, failed, plain, mined, minedFailed, released, rejected, cancelled, waiting)
	submit(t, s, mined, 0)
	submit(t, s, minedFailed, 1)
	submit(t, s, released, 2)
	submit(t, s, rejected, 3)
	if n := len(outbox(t, s)); n != 0 {
		t.Fatalf("outbox has rows of %d transactions before any ended", n)
	}
	wantPending(t, s, 0)

	reverted := &engine.TxError{Code: engine.TxReverted, Message: "execution reverted"}
	must(t, s.MarkFailed(ctx, failed.ID, reverted, at(200)))
	must(t, s.MarkFailed(ctx, plain.ID, reverted, at(200)))
	// A repeated MarkFailed conflicts and adds nothing.
	wantCode(t, s.MarkFailed(ctx, failed.ID, reverted, at(201)), engine.CodeConflict, "mark a failed transaction failed")
	must(t, s.MarkMined(ctx, []engine.Mined{
		{ID: mined.ID, Status: engine.StatusCompleted, BlockNumber: 7, BlockHash: randomHash(t), GasUsed: 1, Events: []engine.Event{}, Ended: at(210)},
		{ID: minedFailed.ID, Status: engine.StatusFailed, BlockNumber: 7, BlockHash: randomHash(t), GasUsed: 1, Error: reverted, Ended: at(211)},
	}))
	// Released for reuse (back to new): not terminal, no rows.
	must(t, s.ReleaseNonce(ctx, engine.Fence{}, released.ID, nil, at(220)))
	must(t, s.ReleaseNonce(ctx, engine.Fence{}, rejected.ID, &engine.TxError{Code: engine.TxInsufficientFunds, Message: "no gas"}, at(221)))
	_, err := s.CancelTransaction(ctx, cancelled.ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(230))
	must(t, err)
	_, err = s.CancelTransaction(ctx, cancelled.ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(231))
	wantCode(t, err, engine.CodeConflict, "cancel twice")

	rows := outbox(t, s)
	wantOutbox(t, rows, failed, at(200), urls...)
	wantOutbox(t, rows, plain, at(200))
	wantOutbox(t, rows, mined, at(210), urls...)
	wantOutbox(t, rows, minedFailed, at(211), urls...)
	wantOutbox(t, rows, released, at(0))
	wantOutbox(t, rows, rejected, at(221), urls...)
	wantOutbox(t, rows, cancelled, at(230), urls...)
	wantOutbox(t, rows, waiting, at(0))
	if len(rows) != 5 {
		t.Fatalf("outbox has rows of %d transactions, want 5", len(rows))
	}
	wantPending(t, s, 10)
	ids := map[string]bool{}
	for _, rs := range rows {
		for _, r := range rs {
			if ids[r.ID] {
				t.Fatalf("outbox id %s used twice", r.ID)
			}
			ids[r.ID] = true
		}
	}

	// A reorg takes mined back to submitted (no rows), and completing it
	// again adds new ones: at least once.
	_, err = s.Unmine(ctx, "dev", 7)
	must(t, err)
	wantPending(t, s, 10)
	must(t, s.MarkMined(ctx, []engine.Mined{
		{ID: mined.ID, Status: engine.StatusCompleted, BlockNumber: 8, BlockHash: randomHash(t), GasUsed: 1, Events: []engine.Event{}, Ended: at(240)},
	}))
	again := outbox(t, s)[mined.ID]
	if len(again) != 2*len(urls) {
		t.Fatalf("after completing again, %d rows for the transaction, want %d", len(again), 2*len(urls))
	}
	wantPending(t, s, 10+len(urls))

	// A MarkMined that fails (unknown id) adds no row.
	other := withCB(9)
	insert(t, s, other)
	submit(t, s, other, 4)
	err = s.MarkMined(ctx, []engine.Mined{
		{ID: other.ID, Status: engine.StatusCompleted, BlockNumber: 9, GasUsed: 1, Ended: at(250)},
		{ID: newID(), Status: engine.StatusCompleted, BlockNumber: 9, GasUsed: 1, Ended: at(250)},
	})
	wantCode(t, err, engine.CodeNotFound, "mark an unknown transaction mined")
	wantPending(t, s, 10+len(urls))
}

// testDueCallbacks: only pending rows that are due, most overdue first, at
// most limit.
func testDueCallbacks(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	var txs []*engine.Transaction
	// Ended in the order 3, 1, 2 (seconds 303, 301, 302).
	for i, sec := range []int{303, 301, 302} {
		tx := f.tx("dev", i)
		tx.Callbacks = []string{"https://example.com/" + string(rune('a'+i))}
		insert(t, s, tx)
		must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(sec)))
		txs = append(txs, tx)
	}
	order := func(rows []engine.Callback) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.TxID)
		}
		return out
	}
	due, err := s.DueCallbacks(ctx, at(300), 10)
	must(t, err)
	if len(due) != 0 {
		t.Fatalf("due before any is: %v", order(due))
	}
	due, err = s.DueCallbacks(ctx, at(302), 10)
	must(t, err)
	if got, want := order(due), []string{txs[1].ID, txs[2].ID}; !slices.Equal(got, want) {
		t.Fatalf("due at 302 = %v, want %v", got, want)
	}
	due, err = s.DueCallbacks(ctx, at(400), 2)
	must(t, err)
	if got, want := order(due), []string{txs[1].ID, txs[2].ID}; !slices.Equal(got, want) {
		t.Fatalf("due at 400, limit 2 = %v, want %v", got, want)
	}
	due, err = s.DueCallbacks(ctx, at(400), 0)
	must(t, err)
	if len(due) != 0 {
		t.Fatalf("limit 0 returned %d rows", len(due))
	}

	// Postponing the oldest puts it last; delivered and abandoned rows
	// are never due.
	all, err := s.DueCallbacks(ctx, at(400), 10)
	must(t, err)
	must(t, s.MarkCallbackRetry(ctx, all[0].ID, 1, at(350), "HTTP status 500"))
	due, err = s.DueCallbacks(ctx, at(400), 10)
	must(t, err)
	if got, want := order(due), []string{txs[2].ID, txs[0].ID, txs[1].ID}; !slices.Equal(got, want) {
		t.Fatalf("due after a retry = %v, want %v", got, want)
	}
	must(t, s.MarkCallbackDelivered(ctx, due[0].ID, 1, at(401)))
	must(t, s.MarkCallbackAbandoned(ctx, due[1].ID, 3, "gone"))
	due, err = s.DueCallbacks(ctx, at(400), 10)
	must(t, err)
	if got, want := order(due), []string{txs[1].ID}; !slices.Equal(got, want) {
		t.Fatalf("due after delivery and abandonment = %v, want %v", got, want)
	}
}

// testCallbackTransitions: retry, delivery and abandonment of a row, and
// that only pending rows change.
func testCallbackTransitions(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	tx := f.tx("dev", 1)
	tx.Callbacks = []string{"https://example.com/1", "https://example.com/2"}
	insert(t, s, tx)
	must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(10)))
	rows := outbox(t, s)[tx.ID]
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	a, b := rows[0], rows[1]
	wantPending(t, s, 2)

	must(t, s.MarkCallbackRetry(ctx, a.ID, 1, at(11), "no answer within 10s"))
	must(t, s.MarkCallbackRetry(ctx, a.ID, 2, at(13), "HTTP status 503 Service Unavailable"))
	got := outbox(t, s)[tx.ID]
	i := slices.IndexFunc(got, func(c engine.Callback) bool { return c.ID == a.ID })
	if i < 0 {
		t.Fatal("retried row is not pending")
	}
	r := got[i]
	if r.Status != engine.CallbackPending || r.Attempts != 2 || r.LastError != "HTTP status 503 Service Unavailable" ||
		r.URL != a.URL || r.TxID != tx.ID || r.Delivered != nil {
		t.Fatalf("after retries: %+v", r)
	}
	wantTime(t, "NextAttempt", r.NextAttempt, at(13))
	wantTime(t, "Created", r.Created, at(10))
	due, err := s.DueCallbacks(ctx, at(12), 10)
	must(t, err)
	if len(due) != 1 || due[0].ID != b.ID {
		t.Fatalf("due at 12 = %+v, want only %s", due, b.ID)
	}

	must(t, s.MarkCallbackDelivered(ctx, a.ID, 3, at(14)))
	wantPending(t, s, 1)
	must(t, s.MarkCallbackAbandoned(ctx, b.ID, 39, "refused: private address"))
	wantPending(t, s, 0)
	if n := len(outbox(t, s)); n != 0 {
		t.Fatalf("pending rows left: %d", n)
	}

	for _, c := range []struct {
		what string
		err  error
	}{
		{"retry a delivered row", s.MarkCallbackRetry(ctx, a.ID, 4, at(20), "x")},
		{"deliver a delivered row", s.MarkCallbackDelivered(ctx, a.ID, 4, at(20))},
		{"abandon a delivered row", s.MarkCallbackAbandoned(ctx, a.ID, 4, "x")},
		{"deliver an abandoned row", s.MarkCallbackDelivered(ctx, b.ID, 40, at(20))},
		{"retry an abandoned row", s.MarkCallbackRetry(ctx, b.ID, 40, at(20), "x")},
	} {
		wantCode(t, c.err, engine.CodeConflict, c.what)
	}
	for _, c := range []struct {
		what string
		err  error
	}{
		{"retry an unknown row", s.MarkCallbackRetry(ctx, newID(), 1, at(20), "x")},
		{"deliver an unknown row", s.MarkCallbackDelivered(ctx, newID(), 1, at(20))},
		{"abandon an unknown row", s.MarkCallbackAbandoned(ctx, newID(), 1, "x")},
	} {
		wantCode(t, c.err, engine.CodeNotFound, c.what)
	}
}

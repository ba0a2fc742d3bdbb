package storetest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// testConditions covers what the engine needs to hold transactions back:
// waiting and ready transitions, dependents, statuses, the deadline.
func testConditions(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := &engine.User{ID: "u", Created: time.Now()}
	a := &engine.Account{ID: "a", Owner: "u", Address: common.HexToAddress("0x01"), Created: time.Now()}
	if err := s.CreateUser(ctx, u, nil, a); err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	tx := func(id string, deps ...string) *engine.Transaction {
		return &engine.Transaction{ID: id, Owner: "u", AccountID: "a", Network: "dev", Status: engine.StatusNew,
			DependsOn: deps, Created: time.Now()}
	}
	t1, t2, t3 := tx("t1"), tx("t2", "t1"), tx("t3", "t1", "t2")
	t3.WaitUntil = &until
	if err := s.InsertTransactions(ctx, []*engine.Transaction{t1, t2, t3}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TransactionByID(ctx, "t3"); err != nil || got.WaitUntil == nil || !got.WaitUntil.Equal(until) {
		t.Fatalf("t3 = %+v, %v", got, err)
	}
	for _, id := range []string{"t2", "t3"} {
		if err := s.MarkWaiting(ctx, engine.Fence{}, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkWaiting(ctx, engine.Fence{}, "t2"); !errors.Is(err, engine.ErrConflict) {
		t.Fatalf("MarkWaiting of a waiting transaction: %v", err)
	}
	if err := s.MarkWaiting(ctx, engine.Fence{}, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("MarkWaiting of nothing: %v", err)
	}
	ids := func(txs []*engine.Transaction) []string {
		var out []string
		for _, t := range txs {
			out = append(out, t.ID)
		}
		return out
	}
	if deps, err := s.Dependents(ctx, []string{"t1"}); err != nil || !slices.Equal(ids(deps), []string{"t2", "t3"}) {
		t.Fatalf("dependents of t1 = %v, %v", ids(deps), err)
	}
	if deps, err := s.Dependents(ctx, []string{"t2", "t1"}); err != nil || !slices.Equal(ids(deps), []string{"t2", "t3"}) {
		t.Fatalf("dependents of t1, t2 = %v, %v", ids(deps), err)
	}
	if w, err := s.Waiting(ctx, "dev", "", 1); err != nil || !slices.Equal(ids(w), []string{"t2"}) {
		t.Fatalf("waiting = %v, %v", ids(w), err)
	}
	st, err := s.Statuses(ctx, []string{"t1", "t2", "nope"})
	if err != nil || len(st) != 2 || st["t1"] != engine.StatusNew || st["t2"] != engine.StatusWaiting {
		t.Fatalf("statuses = %v, %v", st, err)
	}
	moved, err := s.MarkReady(ctx, []string{"t3", "t1", "t3", "nope"})
	if err != nil || !slices.Equal(moved, []string{"t3"}) {
		t.Fatalf("MarkReady = %v, %v", moved, err)
	}
	if w, err := s.Waiting(ctx, "dev", "", -1); err != nil || !slices.Equal(ids(w), []string{"t2"}) {
		t.Fatalf("waiting after MarkReady = %v, %v", ids(w), err)
	}
}

// testResolveLeavesSubmitted: when a dependency fails, Conditions.Resolve
// fails the dependents that still wait, but never one that its sender
// submitted meanwhile (it is in a pool; failing it would lose track of it).
func testResolveLeavesSubmitted(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := &engine.User{ID: "u", Created: time.Now()}
	a := &engine.Account{ID: "a", Owner: "u", Address: common.HexToAddress("0x01"), Created: time.Now()}
	if err := s.CreateUser(ctx, u, nil, a); err != nil {
		t.Fatal(err)
	}
	tx := func(id string, deps ...string) *engine.Transaction {
		return &engine.Transaction{ID: id, Owner: "u", AccountID: "a", Network: "dev", Status: engine.StatusNew,
			DependsOn: deps, Created: time.Now()}
	}
	dep, waiting, sent := tx("dep"), tx("waiting", "dep"), tx("sent", "dep")
	must(t, s.InsertTransactions(ctx, []*engine.Transaction{dep, waiting, sent}))
	must(t, s.MarkWaiting(ctx, engine.Fence{}, "waiting"))
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signed(t, sent, 0, 10)}))
	must(t, s.MarkFailed(ctx, "dep", &engine.TxError{Code: engine.TxReverted, Message: "boom"}, time.Now()))

	conds := engine.NewConditions(s, engine.SystemClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := conds.Resolve(ctx, []string{"dep"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TransactionByID(ctx, "waiting"); err != nil || got.Status != engine.StatusFailed || got.Error == nil || got.Error.Code != engine.TxDependencyFailed {
		t.Fatalf("waiting dependent = %+v, %v; want failed with dependency_failed", got, err)
	}
	if got, err := s.TransactionByID(ctx, "sent"); err != nil || got.Status != engine.StatusSubmitted || got.Nonce == nil || *got.Nonce != 0 {
		t.Fatalf("submitted dependent = %+v, %v; want still submitted with nonce 0", got, err)
	}
}

// testSweepExpiresPastAStarvingUser: one user's 5,001 waiting transactions
// that never become ready (a dependency that stays new) come first; another
// user's transaction whose waitTimeout passed is failed as expired (with
// its callback queued) by the first Sweep, and the next Sweep looks at the
// waiting transactions after the first batch (the one it did not reach).
func testSweepExpiresPastAStarvingUser(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	now := time.Now()
	for _, u := range []string{"a", "b"} {
		must(t, s.CreateUser(ctx, &engine.User{ID: u, Created: now}, nil,
			&engine.Account{ID: u, Owner: u, Address: common.HexToAddress("0x0" + u), Created: now}))
	}
	tx := func(id, owner string, status engine.TxStatus, deps ...string) *engine.Transaction {
		return &engine.Transaction{ID: id, Owner: owner, AccountID: owner, Network: "dev", Status: status,
			DependsOn: deps, Created: now}
	}
	txs := []*engine.Transaction{tx("never", "a", engine.StatusNew)}
	const many = 5001
	for i := range many {
		txs = append(txs, tx(fmt.Sprintf("a-%05d", i), "a", engine.StatusWaiting, "never"))
	}
	late, notYet := tx("late", "b", engine.StatusWaiting, "never"), tx("not-yet", "b", engine.StatusWaiting, "never")
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	late.WaitUntil, late.Callbacks = &past, []string{"https://example.com/cb"}
	notYet.WaitUntil = &future
	txs = append(txs, late, notYet)
	for i := 0; i < len(txs); i += 1000 {
		must(t, s.InsertTransactions(ctx, txs[i:min(i+1000, len(txs))]))
	}
	if w, err := s.Waiting(ctx, "dev", "", -1); err != nil || len(w) != many+2 {
		t.Fatalf("waiting: %d, %v; want %d", len(w), err, many+2)
	}
	conds := engine.NewConditions(s, engine.SystemClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, failed, err := conds.Sweep(ctx, &engine.Network{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(failed, []string{"late"}) {
		t.Fatalf("first sweep failed %v, want [late]", failed)
	}
	got, err := s.TransactionByID(ctx, "late")
	if err != nil || got.Status != engine.StatusFailed || got.Error == nil || got.Error.Code != engine.TxExpired || got.Ended == nil {
		t.Fatalf("late = %+v, %v; want failed expired", got, err)
	}
	if cbs, err := s.DueCallbacks(ctx, now.Add(time.Minute), 10); err != nil || len(cbs) != 1 || cbs[0].TxID != "late" {
		t.Fatalf("callbacks due = %+v, %v; want late's", cbs, err)
	}
	if got, err := s.TransactionByID(ctx, "not-yet"); err != nil || got.Status != engine.StatusWaiting {
		t.Fatalf("not-yet = %+v, %v; want still waiting", got, err)
	}
	// The sweep goes on where the last one stopped: the rest of a's, then
	// not-yet, then from the first again.
	if w, err := s.Waiting(ctx, "dev", "a-04999", -1); err != nil || !slices.Equal(idsOf(w), []string{"a-05000", "not-yet"}) {
		t.Fatalf("waiting after a-04999 = %v, %v", idsOf(w), err)
	}
	if w, err := s.Waiting(ctx, "dev", "not-yet", 10); err != nil || len(w) != 0 {
		t.Fatalf("waiting after the last = %v, %v", idsOf(w), err)
	}
	if ids, err := s.ExpireWaiting(ctx, "dev", now.Add(2*time.Hour), 10); err != nil || !slices.Equal(ids, []string{"not-yet"}) {
		t.Fatalf("expire two hours later = %v, %v; want [not-yet]", ids, err)
	}
}

func idsOf(txs []*engine.Transaction) []string {
	out := []string{}
	for _, t := range txs {
		out = append(out, t.ID)
	}
	return out
}

package storetest

import (
	"errors"
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
	if w, err := s.Waiting(ctx, "dev", 1); err != nil || !slices.Equal(ids(w), []string{"t2"}) {
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
	if w, err := s.Waiting(ctx, "dev", -1); err != nil || !slices.Equal(ids(w), []string{"t2"}) {
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

package account

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// hungStore is a Store whose reads hang until their context ends (a
// database connection that hung).
type hungStore struct {
	Store
	calls atomic.Int64
}

func (s *hungStore) hang(ctx context.Context) error {
	s.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

func (s *hungStore) InFlightSummary(ctx context.Context, _, _ string) (engine.InFlightSummary, error) {
	return engine.InFlightSummary{}, s.hang(ctx)
}

func (s *hungStore) ReadyTransactions(ctx context.Context, _, _ string, _ int) ([]*engine.Transaction, error) {
	return nil, s.hang(ctx)
}

func (s *hungStore) Dependents(ctx context.Context, _ []string) ([]*engine.Transaction, error) {
	return nil, s.hang(ctx)
}

// returnsWithin fails t unless fn returns within d.
func returnsWithin(t *testing.T, what string, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still waits on a hung database after %s", what, d)
	}
}

// TestStoreCallsOutsideAPumpHaveADeadline: the reads that decide a
// passivation and the resolution of failed transactions' dependents end at
// StoreTimeout when the database does not answer, instead of freezing the
// account's actors.
func TestStoreCallsOutsideAPumpHaveADeadline(t *testing.T) {
	store := &hungStore{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{Store: store, Log: log, StoreTimeout: 50 * time.Millisecond,
		Conditions: engine.NewConditions(store, engine.SystemClock{}, log)}
	net := &engine.Network{Name: "dev"}
	a := &Actor{cfg: cfg, accountID: "a", net: net, key: Key("a", "dev"), ctx: context.Background()}
	returnsWithin(t, "passivation", time.Second, func() { a.maybePassivate(nil) })
	s := &submitter{cfg: cfg, accountID: "a", net: net, ctx: context.Background()}
	returnsWithin(t, "resolving dependents", time.Second, func() { s.resolve([]string{"failed"}) })
	if n := store.calls.Load(); n != 2 {
		t.Fatalf("%d store calls, want 2 (one each)", n)
	}
}

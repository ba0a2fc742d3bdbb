package http

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// testStore is the handlers' store in tests: the embedded default (SQLite
// in a temporary directory), with what the tests need to look inside it.
type testStore struct {
	*sqlite.Store
	// pingErr, when set, is the error of Ping (a database that is down).
	pingErr atomic.Pointer[error]
	// poolReads, statusReads and topUpReads count the calls of PoolByID,
	// Statuses and PoolTopUps.
	poolReads, statusReads, topUpReads atomic.Int64
}

// PoolByID counts the read (poolReads).
func (s *testStore) PoolByID(ctx context.Context, id string) (*engine.Pool, error) {
	s.poolReads.Add(1)
	return s.Store.PoolByID(ctx, id)
}

// Statuses counts the read (statusReads).
func (s *testStore) Statuses(ctx context.Context, ids []string) (map[string]engine.TxStatus, error) {
	s.statusReads.Add(1)
	return s.Store.Statuses(ctx, ids)
}

// PoolTopUps counts the read (topUpReads).
func (s *testStore) PoolTopUps(ctx context.Context, poolID string) (engine.PoolTopUps, error) {
	s.topUpReads.Add(1)
	return s.Store.PoolTopUps(ctx, poolID)
}

var _ Store = (*testStore)(nil)

// newTestStore opens a fresh store, closed when the test ends.
func newTestStore(t testing.TB) *testStore {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "txengine.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return &testStore{Store: s}
}

// Ping fails with the error set by failPing, if any.
func (s *testStore) Ping(ctx context.Context) error {
	if err := s.pingErr.Load(); err != nil {
		return *err
	}
	return s.Store.Ping(ctx)
}

// failPing makes Ping fail with err (nil: answer again).
func (s *testStore) failPing(err error) {
	if err == nil {
		s.pingErr.Store(nil)
		return
	}
	s.pingErr.Store(&err)
}

// count returns the result of a COUNT query.
func (s *testStore) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Reader().Get(context.Background(), &n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// rows returns how many rows the tables that requests write hold: an
// unchanged count after a refused request is "nothing stored".
func (s *testStore) rows(t testing.TB) int {
	t.Helper()
	return s.count(t, `SELECT (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM api_tokens) +
		(SELECT COUNT(*) FROM accounts) + (SELECT COUNT(*) FROM contracts) +
		(SELECT COUNT(*) FROM transactions) + (SELECT COUNT(*) FROM idempotency_keys) +
		(SELECT COUNT(*) FROM faucet_grants) + (SELECT COUNT(*) FROM subscriptions) +
		(SELECT COUNT(*) FROM pools) + (SELECT COUNT(*) FROM pool_members)`)
}

// exec runs a statement on the store (a change no API makes, such as a
// contract's deployment block).
func (s *testStore) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := s.Writer().Exec(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// putTransaction stores tx as the account actor does, in its status.
func (s *testStore) putTransaction(t testing.TB, tx *engine.Transaction) {
	t.Helper()
	if err := s.InsertTransactions(context.Background(), []*engine.Transaction{tx}); err != nil {
		t.Fatalf("store transaction %s: %v", tx.ID, err)
	}
}

// pools returns how many pools are stored and not deleted.
func (s *testStore) pools(t testing.TB) int {
	t.Helper()
	return s.count(t, `SELECT COUNT(*) FROM pools WHERE deleted IS NULL`)
}

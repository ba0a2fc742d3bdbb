package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// AppliedMigrations returns the versions recorded in schema_migrations.
func AppliedMigrations(ctx context.Context, s *Store) ([]int, error) {
	var vs []int
	err := s.db.SelectContext(ctx, &vs, `SELECT version FROM schema_migrations ORDER BY version`)
	return vs, err
}

// EmbeddedMigrations returns the versions of the embedded migrations.
func EmbeddedMigrations() ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	vs := make([]int, len(ms))
	for i, m := range ms {
		vs[i] = m.Version
	}
	return vs, nil
}

// ExplainListTransactions returns the plan of the ListTransactions query of
// f, with sequential scans disabled so that the plan shows whether an index
// serves the query at all (a test table is too small for the planner to
// prefer one on cost).
func ExplainListTransactions(ctx context.Context, s *Store, f engine.TxFilter) (string, error) {
	q, args := s.Store.ListTransactionsQuery(f)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		return "", err
	}
	var lines []string
	if err := tx.SelectContext(ctx, &lines, `EXPLAIN `+q, args...); err != nil {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

// Hook points of the fencing tests.
const (
	HookFenced        = sqlstore.HookFenced
	HookAccountLease  = sqlstore.HookAccountLease
	HookNetworkFenced = sqlstore.HookNetworkFenced
)

// SetHook makes s call fn at the hook points of sqlstore/lease.go. Set it before
// the store is used concurrently.
func SetHook(s *Store, fn func(point string)) { s.Store.SetHook(fn) }

// LockWaiters returns how many sessions of s's database wait for a lock.
func LockWaiters(ctx context.Context, s *Store) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	return n, err
}

// OpenAt opens the store at url with the migrations up to version only.
func OpenAt(ctx context.Context, url string, version int) (*Store, error) {
	return open(ctx, url, version)
}

// ExecForTest runs a statement.
func ExecForTest(ctx context.Context, s *Store, query string, args ...any) error {
	_, err := s.db.ExecContext(ctx, query, args...)
	return err
}

// ReadyOfStatement is readyOfStatement with PostgreSQL's placeholders, for
// EXPLAIN in tests.
var ReadyOfStatement = sqlx.Rebind(sqlx.DOLLAR, readyOfStatement)

// QueryRowForTest scans the one column of the one row of query into dest.
func QueryRowForTest(ctx context.Context, s *Store, query string, dest any) error {
	return s.db.QueryRowContext(ctx, query).Scan(dest)
}

// ExplainPoolQueries returns the plans of the statements of PoolLoads,
// OrderingKeyMember and PendingPools (sqlstore.PoolQueries) by method,
// with sequential scans disabled as in ExplainListTransactions.
func ExplainPoolQueries(ctx context.Context, s *Store) (map[string]string, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		return nil, err
	}
	plans := map[string]string{}
	for name, q := range s.Store.PoolQueries() {
		args := []any{"p"}
		if name == "OrderingKeyMember" || strings.HasPrefix(name, "TopUps") {
			args = append(args, "k")
		}
		var lines []string
		if err := tx.SelectContext(ctx, &lines, `EXPLAIN `+q, args...); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		plans[name] = strings.Join(lines, "\n")
	}
	return plans, nil
}

package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
)

// txStmts prepares each statement that one database transaction runs row
// after row once, and runs it with each row's arguments. The SQLite driver
// (modernc.org/sqlite, v1.62 and later keep a prepared statement compiled)
// parses a statement every time it is run without being prepared; a merged
// write of the submit stage ran two statements per row, each parsed: about
// a quarter of that write's CPU (profile of 400 accounts × 10 transfers on
// the embedded default). BenchmarkMarkSubmittedBreadth and
// BenchmarkReadyOfBreadth (persistence/sqlite) measure the two loops that
// use it. On PostgreSQL a prepare is one more round trip; the loops that
// use it run there only as the fallback of a bulk statement.
//
// Close releases the statements; the transaction must still be open.
type txStmts struct {
	tx Conn
	m  map[string]*sqlx.Stmt
}

// stmts returns the statement memo of the transaction c.
func (c Conn) stmts() *txStmts { return &txStmts{tx: c} }

func (t *txStmts) get(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if st, ok := t.m[query]; ok {
		return st, nil
	}
	st, err := t.tx.Prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	if t.m == nil {
		t.m = map[string]*sqlx.Stmt{}
	}
	t.m[query] = st
	return st, nil
}

// Exec runs query, prepared once, with args.
func (t *txStmts) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// Select scans the rows of query, prepared once, into the slice dest.
func (t *txStmts) Select(ctx context.Context, dest any, query string, args ...any) error {
	st, err := t.get(ctx, query)
	if err != nil {
		return err
	}
	return st.SelectContext(ctx, dest, args...)
}

// Close closes the statements and returns the first error.
func (t *txStmts) Close() error {
	var errs []error
	for _, st := range t.m {
		errs = append(errs, st.Close())
	}
	t.m = nil
	return errors.Join(errs...)
}

// stmtExecer runs one statement: a Conn (parsed at each run) or a txStmts
// (prepared once per transaction).
type stmtExecer interface {
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
}

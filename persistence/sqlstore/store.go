// Package sqlstore is txengine's engine.Store on a SQL database, written
// once for the two databases it runs on: SQLite (persistence/sqlite, the
// embedded default) and PostgreSQL (persistence/postgres, production).
//
// Every query is written once, with ? placeholders, and bound to the
// database's placeholder style when it runs (sqlx.Rebind). What truly
// differs between the two databases is the Dialect, which the database's
// package implements: how a timestamp is encoded, how a list of ids is
// passed (an IN list per chunk on SQLite, one array on PostgreSQL), the row
// locks (PostgreSQL's FOR SHARE, FOR NO KEY UPDATE; SQLite has one writer
// at a time and needs none), how a driver error maps to the engine's
// sentinels. Where the fast path of one database has no equivalent in the
// other (PostgreSQL sends many rows as arrays in one statement, unnest, or
// COPY; SQLite runs one prepared statement per row in process, where a
// statement costs no round trip), the store runs the portable statement
// unless the dialect implements the optional interface declared next to
// the code that uses it (IdempotencyWriter, TxInserter, SubmitWriter,
// MinedWriter, OutboxWriter, ReadyReader, IndexWriter, Resealer,
// RequestCounter, LatestTransfersQuery, DeliveryWriter).
//
// Semantics: a unique key that is taken is engine.ErrConflict, a missing
// row or a reference to one (foreign key) is engine.ErrNotFound, every
// write that touches several rows is one database transaction, and
// idempotency records are written in the transaction of what they came
// with. persistence/storetest is the contract both databases pass.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// Dialect is what differs between the databases the store runs on. The
// database's package implements it; the store calls nothing else of it.
type Dialect interface {
	// Name names the database in the store's errors ("sqlite").
	Name() string
	// BindType is the placeholder style of the driver (sqlx.QUESTION,
	// sqlx.DOLLAR).
	BindType() int
	// Time encodes t for a timestamp column, at millisecond precision.
	Time(t time.Time) any
	// Bool is the SQL literal of v ("TRUE"; "1" where booleans are
	// integers and partial indexes name them so).
	Bool(v bool) string
	// Seq is the column that orders the rows of a table by insertion
	// (the identity column seq, SQLite's rowid).
	Seq() string
	// Find is the name of the SQL function of (haystack, needle) that
	// returns the 1-based position of needle in haystack, 0 when absent.
	Find() string
	// Now is a SQL expression of the current time in the encoding of
	// Time: the database's clock where it has one that every node shares.
	Now() string
	// Later is a SQL expression of Now plus the milliseconds of its one
	// placeholder.
	Later() string
	// Lock is the row-locking clause of mode appended to a SELECT of rows
	// that the transaction's next writes depend on ("" where writers are
	// serialised anyway).
	Lock(mode LockMode) string
	// List returns the condition that column is one of values and its
	// arguments, in chunks of at most as many values as one statement
	// takes (one chunk where an array parameter takes them all).
	List(column string, values []string) []Chunk
	// Classify maps a driver error: engine.ErrConflict for a taken unique
	// key, engine.ErrNotFound for a reference to a missing row, an
	// error with engine.CodeUnavailable when the database cannot be
	// reached, or nil; detail describes the error on one line.
	Classify(err error) (kind error, detail string)
	// RolledBack reports whether err, returned by COMMIT, means the
	// database rolled the transaction back (rather than that the outcome
	// is unknown).
	RolledBack(err error) bool
}

// LockMode is a row lock of Dialect.Lock.
type LockMode int

// The row locks of the store.
const (
	// LockShare lets other sharers through and blocks writers: fenced
	// writes of one epoch run side by side, an acquisition waits for them.
	LockShare LockMode = iota
	// LockNoKeyUpdate serialises writers of the row without blocking the
	// foreign key checks of rows that reference it.
	LockNoKeyUpdate
	// LockUpdate serialises writers of the row.
	LockUpdate
	// LockUpdateSkipLocked is LockUpdate that skips rows another
	// transaction holds (a claim).
	LockUpdateSkipLocked
)

// Chunk is one list condition of Dialect.List with its arguments.
type Chunk struct {
	Cond string
	Args []any
}

// Store is an engine.Store on a SQL database. It is safe for concurrent
// use. The database's package creates it with New, on its connection pools,
// after applying its migrations.
type Store struct {
	d Dialect
	// w runs writes (and reads that must see them); r runs reads. They are
	// the same pool where readers and writers share connections.
	w, r Conn
	// hook, when set by a test (SetHook), runs at the points of cluster.go.
	hook func(point string)
	// yes, no and seq are the dialect's Bool(true), Bool(false) and Seq.
	yes, no, seq string
	// bound caches the queries bound to the placeholder style (string to
	// string) when it is not ?.
	bound sync.Map
	// stmts holds the statements of Conn.Prepared (query to *sqlx.Stmt),
	// closed by Close.
	stmtMu sync.Mutex
	stmts  map[string]*sqlx.Stmt
	// closers release the pools, in order.
	closers []func() error
}

// New returns the store over the write pool w and the read pool r (the same
// pool where readers and writers share connections), with dialect d.
// Close closes the pools.
func New(d Dialect, w, r *sqlx.DB) *Store {
	s := &Store{d: d, yes: d.Bool(true), no: d.Bool(false), seq: d.Seq()}
	s.w = Conn{x: w, s: s}
	s.r = Conn{x: r, s: s}
	s.closers = append(s.closers, w.Close)
	if r != w {
		s.closers = append(s.closers, r.Close)
	}
	return s
}

// Writer returns the write pool.
func (s *Store) Writer() Conn { return s.w }

// Reader returns the read pool.
func (s *Store) Reader() Conn { return s.r }

// Close releases the connection pools.
func (s *Store) Close() error {
	var errs []error
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		_ = st.Close() // the pools close next: their connections with it
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	for _, c := range s.closers {
		if err := c(); err != nil {
			errs = append(errs, fmt.Errorf("%s: close: %w", s.d.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Ping checks that the database answers on every pool.
func (s *Store) Ping(ctx context.Context) error {
	for _, c := range []Conn{s.w, s.r} {
		if db, ok := c.x.(*sqlx.DB); ok {
			if err := db.PingContext(ctx); err != nil {
				return s.wrap(err, "ping")
			}
		}
	}
	return nil
}

// SetHook makes s call fn at its test hook points (cluster.go). Tests set
// it before the store is used concurrently.
func (s *Store) SetHook(fn func(point string)) { s.hook = fn }

// at runs the test hook at point, if one is set.
func (s *Store) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// bind returns query with its ? placeholders in the dialect's style.
func (s *Store) bind(query string) string {
	bt := s.d.BindType()
	if bt == sqlx.QUESTION {
		return query
	}
	if q, ok := s.bound.Load(query); ok {
		return q.(string)
	}
	q := sqlx.Rebind(bt, query)
	s.bound.Store(query, q)
	return q
}

// execer is what a Conn runs statements on: a pool or a transaction.
type execer interface {
	sqlx.ExtContext
	PreparexContext(ctx context.Context, query string) (*sqlx.Stmt, error)
}

// Conn is a pool or a transaction whose queries are written with ?
// placeholders.
type Conn struct {
	x execer
	s *Store
}

// Get scans the one row of query into dest (sql.ErrNoRows when none).
func (c Conn) Get(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, c.x, dest, c.s.bind(query), args...)
}

// Select scans the rows of query into the slice dest.
func (c Conn) Select(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, c.x, dest, c.s.bind(query), args...)
}

// Exec runs a statement.
func (c Conn) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.x.ExecContext(ctx, c.s.bind(query), args...)
}

// Prepare prepares a statement, bound to the dialect's placeholders.
func (c Conn) Prepare(ctx context.Context, query string) (*sqlx.Stmt, error) {
	return c.x.PreparexContext(ctx, c.s.bind(query))
}

// Prepared returns the statement of query prepared on the pool c once and
// kept until the store closes (database/sql prepares it again on each
// connection that runs it): a statement run on its own saves its parse on
// every call. c must be a pool, not a transaction.
func (c Conn) Prepared(ctx context.Context, query string) (*sqlx.Stmt, error) {
	db, ok := c.x.(*sqlx.DB)
	if !ok {
		return nil, fmt.Errorf("%s: prepare: not a pool", c.s.d.Name())
	}
	s := c.s
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[query]; ok {
		return st, nil
	}
	st, err := db.PreparexContext(ctx, s.bind(query))
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[string]*sqlx.Stmt{}
	}
	s.stmts[query] = st
	return st, nil
}

// Raw returns the pool or transaction itself, for the dialect's bulk
// statements (written in its own placeholders).
func (c Conn) Raw() sqlx.ExtContext { return c.x }

// inTx runs fn in a write transaction and commits it when fn returns nil;
// otherwise it rolls back and returns fn's error (engine.NotCommitted).
func (s *Store) inTx(ctx context.Context, fn func(tx Conn) error) error {
	db, ok := s.w.x.(*sqlx.DB)
	if !ok {
		return fmt.Errorf("%s: begin: the write pool is a transaction", s.d.Name())
	}
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return engine.NotCommitted(s.wrap(err, "begin"))
	}
	if err := fn(Conn{x: tx, s: s}); err != nil {
		_ = tx.Rollback()
		return engine.NotCommitted(err)
	}
	if err := tx.Commit(); err != nil {
		if s.d.RolledBack(err) {
			return engine.NotCommitted(s.wrap(err, "commit"))
		}
		return s.wrap(err, "commit")
	}
	return nil
}

// readTx runs fn in a transaction of the read pool (one snapshot of the
// database) and rolls it back.
func (s *Store) readTx(ctx context.Context, fn func(tx Conn) error) error {
	db, ok := s.r.x.(*sqlx.DB)
	if !ok {
		return fmt.Errorf("%s: begin: the read pool is a transaction", s.d.Name())
	}
	tx, err := db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.wrap(err, "begin")
	}
	defer func() { _ = tx.Rollback() }() // read only: nothing to commit
	return fn(Conn{x: tx, s: s})
}

// list runs fn for each chunk of the condition that column is one of
// values (nothing when values is empty).
func (s *Store) list(column string, values []string, fn func(c Chunk) error) error {
	if len(values) == 0 {
		return nil
	}
	for _, c := range s.d.List(column, values) {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// in is the condition that column is one of values (not empty) as one
// condition of one statement: the chunks of Dialect.List or'ed.
func (s *Store) in(column string, values []string) (string, []any) {
	chunks := s.d.List(column, values)
	if len(chunks) == 1 {
		return chunks[0].Cond, chunks[0].Args
	}
	conds := make([]string, len(chunks))
	var args []any
	for i, c := range chunks {
		conds[i] = c.Cond
		args = append(args, c.Args...)
	}
	return `(` + strings.Join(conds, ` OR `) + `)`, args
}

// Wrap is wrap for the database's package.
func (s *Store) Wrap(err error, format string, args ...any) error {
	return s.wrap(err, format, args...)
}

// wrap adds context to a database error and maps it to the engine's
// sentinels (Dialect.Classify); sql.ErrNoRows is engine.ErrNotFound.
func (s *Store) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %s: %w", s.d.Name(), what, engine.ErrNotFound)
	}
	kind, detail := s.d.Classify(err)
	switch {
	case kind == nil:
		return fmt.Errorf("%s: %s: %w", s.d.Name(), what, err)
	case errors.Is(kind, engine.ErrNotFound):
		return fmt.Errorf("%s: %s: references a missing row (%s): %w", s.d.Name(), what, detail, kind)
	case errors.Is(kind, engine.ErrConflict):
		return fmt.Errorf("%s: %s: %s: %w", s.d.Name(), what, detail, kind)
	default:
		return fmt.Errorf("%s: %s: %w (%w)", s.d.Name(), what, kind, err)
	}
}

// notFound returns engine.ErrNotFound wrapped with context.
func (s *Store) notFound(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", s.d.Name(), fmt.Sprintf(format, args...), engine.ErrNotFound)
}

// conflict returns engine.ErrConflict wrapped with context.
func (s *Store) conflict(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", s.d.Name(), fmt.Sprintf(format, args...), engine.ErrConflict)
}

// errorf returns an error with context, naming the database.
func (s *Store) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", s.d.Name(), fmt.Errorf(format, args...))
}

// decoded says where the error of a row conversion (v, err) comes from.
func decoded[V any](v V, err error) (V, error) {
	if err != nil {
		var zero V
		return zero, fmt.Errorf("decode a row: %w", err)
	}
	return v, nil
}

// from is the condition that a transaction may take transition t (its
// status is one of engine.TransitionFrom(t)), with its arguments: every
// update of transactions.status checks the engine's table through it.
func from(t engine.Transition) (string, []any) { return fromCol("status", t) }

// fromCol is from on the status column col (qualified, "t.status", where
// a statement joins another row source).
func fromCol(col string, t engine.Transition) (string, []any) {
	statuses := engine.TransitionFrom(t)
	if len(statuses) == 0 {
		// An unknown transition matches no row.
		return `1 = 0`, nil
	}
	args := make([]any, len(statuses))
	for i, st := range statuses {
		args[i] = st
	}
	return col + ` IN (?` + strings.Repeat(`, ?`, len(args)-1) + `)`, args
}

// Package postgres is the production store of txengine: an engine.Store on
// PostgreSQL, through sqlx and the driver github.com/lib/pq.
//
// Semantics are those of persistence/sqlite (both pass persistence/storetest):
// a unique key that is taken is engine.ErrConflict, a missing row or a
// reference to one (foreign key) is engine.ErrNotFound, every write that
// touches several rows is one database transaction; idempotency records are
// written in the transaction of what they came with (for InsertTransactions,
// after the COPY, on the same connection).
//
// Schema: embedded numbered migrations (migrations/NNNN_name.sql), applied
// by Open, each in its own transaction together with its row in
// schema_migrations. Every migration transaction first takes a transaction
// level advisory lock (pg_advisory_xact_lock), so processes that start at
// the same time on the same database apply each migration once and the
// others wait, then find it recorded.
//
// Connections: one pool of at most MaxOpenConns connections, shared by
// readers and writers (PostgreSQL's MVCC lets readers run beside writers).
// Transactions run at READ COMMITTED; writes whose outcome depends on other
// rows of the same owner (the default account) lock the owner's users row
// first, so that concurrent callers queue instead of failing on the unique
// index as they would never do on SQLite, whose writers are serialised.
//
// Acceptance order: transactions.seq is an identity column. It is taken
// when a row is inserted, not when its transaction commits, so batches of
// different accounts inserted concurrently may become visible out of seq
// order. ReadyTransactions serves one account, whose rows are written by
// its one actor one batch after the other: within an account, seq order is
// acceptance order, which is the engine's first come, first served promise.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/schema"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// driverName is the database/sql name of lib/pq.
const driverName = "postgres"

// Pool sizing. A group commit holds one connection for the length of one
// database transaction; the HTTP lookups and the watcher take the others.
// 16 stays well below PostgreSQL's default max_connections (100), so a few
// replicas of the service fit on one server.
const (
	// MaxOpenConns bounds the connections of one Store.
	MaxOpenConns = 16
	// maxIdleConns keeps the whole pool warm under load.
	maxIdleConns = MaxOpenConns
	// connMaxIdleTime returns idle connections to the server after a while.
	connMaxIdleTime = 5 * time.Minute
	// connMaxLifetime recycles connections, so that a failover or a change
	// behind a connection pooler or DNS name reaches every connection.
	connMaxLifetime = 30 * time.Minute
)

// migrationLockKey is the pg_advisory_xact_lock key that serialises
// migrations on one database ("txengine" in ASCII, as an int64).
const migrationLockKey int64 = 0x7478656e67696e65

//go:embed migrations/*.sql
var migrationFS embed.FS

var _ engine.Store = (*Store)(nil)

// Store is an engine.Store on a PostgreSQL database. It is safe for
// concurrent use. Create it with Open and release it with Close.
type Store struct {
	*sqlstore.Store
	db *sqlx.DB
}

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// lib/pq key=value connection string) and applies the pending migrations.
func Open(ctx context.Context, url string) (*Store, error) {
	return open(ctx, url, math.MaxInt)
}

// oneRoundTrip adds binary_parameters=yes to a connection string that does
// not set it. Without it lib/pq sends a query with arguments in two round
// trips (Parse and Describe, then Bind and Execute); with it, in one, and
// []byte arguments go as binary (what BYTEA columns take). Every query of
// the store has arguments: a profile of 8,000 accounts sending once had a
// quarter of the service's CPU in pq's writes and reads.
func oneRoundTrip(url string) string { return withDefault(url, "binary_parameters", "yes") }

// DefaultStatementTimeout is the statement_timeout of the store's sessions
// unless the connection string sets one (statement_timeout=5000 in
// milliseconds, or 5s; 0 turns it off): a statement that runs longer (a
// lock never released, a plan gone wrong, a server that stalls) is
// cancelled by the server and fails with SQLSTATE 57014, so the actor
// that waits for it gets its error instead of waiting for ever beside its
// own deadline. Migrations run without it (SET LOCAL statement_timeout = 0):
// an index built on a large table may take longer.
const DefaultStatementTimeout = 30 * time.Second

// withStatementTimeout adds statement_timeout=DefaultStatementTimeout to a
// connection string that does not set it (lib/pq sends it as a run-time
// parameter when the session starts).
func withStatementTimeout(url string) string {
	return withDefault(url, "statement_timeout", fmt.Sprint(DefaultStatementTimeout.Milliseconds()))
}

// withDefault adds key=value to a connection string (URL or key=value
// form) that does not set key.
func withDefault(url, key, value string) string {
	if strings.Contains(url, key) {
		return url
	}
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		if strings.Contains(url, "?") {
			return url + "&" + key + "=" + value
		}
		return url + "?" + key + "=" + value
	}
	return url + " " + key + "=" + value
}

// open is Open applying the migrations up to version upTo only.
func open(ctx context.Context, url string, upTo int) (*Store, error) {
	db, err := sqlx.Open(driverName, withStatementTimeout(oneRoundTrip(url)))
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db.SetMaxOpenConns(MaxOpenConns)
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(connMaxIdleTime)
	db.SetConnMaxLifetime(connMaxLifetime)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{Store: sqlstore.New(dialect{}, db, db), db: db}
	if err := s.migrate(ctx, upTo); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// migrations returns the embedded migrations ordered by version.
func migrations() ([]schema.Migration, error) {
	ms, err := schema.Load(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return ms, nil
}

// Migrate applies the embedded migrations that the database has not seen
// yet, each in its own database transaction together with its row in
// schema_migrations, under the migration advisory lock. Open calls it;
// calling it again is a no-op. Concurrent callers (other processes) wait for
// each other.
func (s *Store) Migrate(ctx context.Context) error { return s.migrate(ctx, math.MaxInt) }

// migrate is Migrate of the migrations up to version upTo, each under the
// migration advisory lock.
func (s *Store) migrate(ctx context.Context, upTo int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return s.ApplyMigrations(ctx, sqlstore.Migrations{
		List: ms,
		Table: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER     PRIMARY KEY,
			name    TEXT        NOT NULL,
			applied TIMESTAMPTZ NOT NULL
		)`,
		// No statement_timeout in a migration's transaction: building an
		// index on a large table, or waiting for another process's
		// migration, may take longer than a query should.
		Lock: fmt.Sprintf(`SET LOCAL statement_timeout = 0; SELECT pg_advisory_xact_lock(%d)`, migrationLockKey),
	}, upTo)
}

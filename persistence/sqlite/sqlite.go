// Package sqlite is the embedded default store of txengine: an engine.Store
// on one SQLite file, through sqlx and the pure-Go driver modernc.org/sqlite.
//
// Durability: every connection runs in WAL mode with synchronous=FULL, so a
// committed transaction (a 202 of the API) survives kill -9 and power loss.
//
// Connections: SQLite allows one writer at a time. The store keeps two pools
// on the same file:
//
//   - a write pool of exactly one connection whose transactions begin with
//     BEGIN IMMEDIATE (the _txlock DSN parameter). Writers of this process
//     queue in database/sql for that connection instead of failing with
//     SQLITE_BUSY; BEGIN IMMEDIATE plus busy_timeout covers writers of other
//     processes, and a read-then-write transaction never has to upgrade its
//     lock (the classic deadlock of deferred transactions).
//   - a read pool of several connections opened with query_only. In WAL mode
//     readers never block the writer nor wait for it, so lookups from the HTTP
//     layer keep flowing during a long group commit.
//
// A write is visible to the read pool as soon as it is committed. Reads that
// must be consistent with a write (existence checks) run inside the write
// transaction.
//
// Path must name a file: ":memory:" would give each connection its own
// database.
package sqlite

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/schema"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// driverName is the database/sql name of modernc.org/sqlite.
const driverName = "sqlite"

// busyTimeoutMillis is how long a connection waits for a lock held by
// another connection (another process, or a checkpoint) before SQLITE_BUSY.
const busyTimeoutMillis = 5000

//go:embed migrations/*.sql
var migrationFS embed.FS

var _ engine.Store = (*Store)(nil)

// Store is an engine.Store on one SQLite file. It is safe for concurrent use.
// Create it with Open and release it with Close.
type Store struct {
	*sqlstore.Store
	// w is the write pool (one connection, BEGIN IMMEDIATE).
	w *sqlx.DB
	// r is the read pool (several query_only connections).
	r *sqlx.DB
}

// Open opens (creating it if needed) the SQLite database file at path and
// applies the pending migrations. The directory of path must exist.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, math.MaxInt)
}

// open is Open applying the migrations up to version upTo only.
func open(ctx context.Context, path string, upTo int) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open %q: path must be a plain file path", path)
	}
	w, err := sqlx.Open(driverName, dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The first connection creates the file and switches it to WAL, which
	// the read pool's connections then find in place.
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}

	r, err := sqlx.Open(driverName, dsn(path, true))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	n := max(4, runtime.NumCPU())
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(5 * time.Minute)

	s := &Store{Store: sqlstore.New(dialect{}, w, r), w: w, r: r}
	if err := s.migrate(ctx, upTo); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := r.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", path, err)
	}
	return s, nil
}

// dsn returns the data source name of path with the pragmas every pooled
// connection applies when it opens. The driver runs busy_timeout first and
// the others in lexicographic order, so query_only comes after journal_mode.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeoutMillis)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// migrations returns the embedded migrations ordered by version.
func migrations() ([]schema.Migration, error) {
	ms, err := schema.Load(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
}

// Migrate applies the embedded migrations that the database has not seen
// yet, each in its own database transaction together with its row in
// schema_migrations. Open calls it; calling it again is a no-op.
func (s *Store) Migrate(ctx context.Context) error { return s.migrate(ctx, math.MaxInt) }

// migrate is Migrate of the migrations up to version upTo. Each runs in
// an immediate transaction that checks schema_migrations first, so two
// processes opening the same file apply each migration once.
func (s *Store) migrate(ctx context.Context, upTo int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return s.ApplyMigrations(ctx, sqlstore.Migrations{
		List: ms,
		Table: `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY,
			name    TEXT    NOT NULL,
			applied INTEGER NOT NULL
		)`,
		Check: migrationCheck,
	}, upTo)
}

// migrationCheck returns the precondition of the migration of version, or
// nil: run in the migration's transaction before its SQL, it refuses data
// the migration must not change silently.
func migrationCheck(version int) func(ctx context.Context, tx sqlstore.Conn) error {
	switch version {
	case 9:
		return checkNonceDuplicates
	}
	return nil
}

// ErrDuplicateNonces is the error (wrapped) of migration 0009 when
// transactions share an (account, network, nonce): the unique index it
// creates cannot hold, and which row keeps the nonce is an operator's call.
var ErrDuplicateNonces = errors.New("transactions share an (account, network, nonce)")

// checkNonceDuplicates fails when some (account, network, nonce) is held
// by more than one transaction, naming how many such keys there are.
func checkNonceDuplicates(ctx context.Context, tx sqlstore.Conn) error {
	var dups int64
	if err := tx.Get(ctx, &dups, `SELECT COUNT(*) FROM (SELECT 1 FROM transactions
		WHERE nonce IS NOT NULL GROUP BY account_id, network, nonce HAVING COUNT(*) > 1)`); err != nil {
		return fmt.Errorf("count duplicate nonces: %w", err)
	}
	if dups > 0 {
		return fmt.Errorf("%d (account, network, nonce) keys are held by more than one transaction; resolve them before upgrading: %w",
			dups, ErrDuplicateNonces)
	}
	return nil
}

// SingleWriter implements engine.SingleWriter: one connection writes, so
// the submit stage's writes and the group commits of accepts queue for it.
func (s *Store) SingleWriter() bool { return true }

package postgres

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// dialect is PostgreSQL's sqlstore.Dialect: timestamps as TIMESTAMPTZ, a
// list of ids as one text[] parameter, row locks, the database's clock
// (shared by every node of a cluster).
type dialect struct{}

var _ sqlstore.Dialect = dialect{}

// Name implements sqlstore.Dialect.
func (dialect) Name() string { return "postgres" }

// BindType implements sqlstore.Dialect.
func (dialect) BindType() int { return sqlx.DOLLAR }

// Time implements sqlstore.Dialect: UTC, sub-millisecond precision dropped
// as the SQLite store and the API's timestamps do.
func (dialect) Time(t time.Time) any { return ts(t) }

// Bool implements sqlstore.Dialect.
func (dialect) Bool(v bool) string {
	if v {
		return "TRUE"
	}
	return "FALSE"
}

// Seq implements sqlstore.Dialect: the identity column of every table.
func (dialect) Seq() string { return "seq" }

// Find implements sqlstore.Dialect.
func (dialect) Find() string { return "strpos" }

// Now implements sqlstore.Dialect: the database's clock at the time of
// the statement (not of the transaction's start).
func (dialect) Now() string { return `clock_timestamp()` }

// Later implements sqlstore.Dialect.
func (dialect) Later() string { return `(clock_timestamp() + ? * interval '1 millisecond')` }

// Lock implements sqlstore.Dialect.
func (dialect) Lock(mode sqlstore.LockMode) string {
	switch mode {
	case sqlstore.LockShare:
		return ` FOR SHARE`
	case sqlstore.LockNoKeyUpdate:
		return ` FOR NO KEY UPDATE`
	case sqlstore.LockUpdateSkipLocked:
		return ` FOR UPDATE SKIP LOCKED`
	default:
		return ` FOR UPDATE`
	}
}

// List implements sqlstore.Dialect: one text[] parameter.
func (dialect) List(column string, values []string) []sqlstore.Chunk {
	return []sqlstore.Chunk{{Cond: column + ` = ANY(?::text[])`, Args: []any{pq.StringArray(values)}}}
}

// ErrUnavailable is what the store's errors carry (besides the driver's
// error) when the database cannot be reached or is shutting down or
// starting: the caller may try again later. Its code is
// engine.CodeUnavailable (HTTP 503).
var ErrUnavailable = &engine.Error{Code: engine.CodeUnavailable, Message: "the database is unavailable; try again later"}

// Classify implements sqlstore.Dialect: a unique key that is taken is
// engine.ErrConflict, a reference to a missing row (foreign key)
// engine.ErrNotFound, a lost or refused connection (see unreachable)
// ErrUnavailable.
func (dialect) Classify(err error) (error, string) {
	if pe := pq.As(err, pqerror.UniqueViolation); pe != nil {
		return engine.ErrConflict, detail(pe)
	}
	if pe := pq.As(err, pqerror.ForeignKeyViolation); pe != nil {
		return engine.ErrNotFound, detail(pe)
	}
	if unreachable(err) {
		return ErrUnavailable, ""
	}
	return nil, ""
}

// RolledBack implements sqlstore.Dialect: the server answered COMMIT with
// an error.
func (dialect) RolledBack(err error) bool { return pq.As(err) != nil }

// unreachable reports whether err says that the database could not be
// reached or went away rather than that the statement is wrong: a refused,
// reset or broken connection (lib/pq reports a connection it had to give up
// as driver.ErrBadConn, database/sql a transaction whose connection is gone
// as sql.ErrConnDone), a server that is shutting down, starting up or
// crashed (SQLSTATE 57P01..57P03), a connection exception (class 08), or
// too many connections (53300).
func unreachable(err error) bool {
	if pe := pq.As(err); pe != nil {
		switch pe.Code {
		case pqerror.AdminShutdown, pqerror.CrashShutdown, pqerror.CannotConnectNow, pqerror.TooManyConnections:
			return true
		}
		return pe.Code.Class() == pqerror.ClassConnectionException
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// detail is the message of a constraint violation with its detail (which
// names the key), on one line.
func detail(pe *pq.Error) string {
	if pe.Detail == "" {
		return pe.Message
	}
	return pe.Message + ": " + pe.Detail
}

// ts encodes t for a TIMESTAMPTZ column (Dialect.Time).
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// SumAmount implements sqlstore.AmountSummer: NUMERIC sums exactly.
func (dialect) SumAmount(column string) string { return `SUM(` + column + `)::text` }

package postgres

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Column encodings: those of sqlrow (see migrations/0001_init.sql), with
// timestamps as TIMESTAMPTZ (INTEGER milliseconds on SQLite) and amounts as
// NUMERIC (decimal TEXT on SQLite; both written and read as decimal text).

// fromTS decodes a TIMESTAMPTZ column into a UTC time.
func fromTS(t time.Time) time.Time { return t.UTC() }

// timeCol scans a TIMESTAMPTZ column (or NULL); it is the sqlrow.TimeColumn
// of the row types.
type timeCol struct{ sql.NullTime }

// At implements sqlrow.TimeColumn.
func (c timeCol) At() (time.Time, bool) { return fromTS(c.Time), c.Valid }

// The rows of the tables, with timestamps scanned into timeCol.
type (
	txRow          = sqlrow.Tx[timeCol]
	userRow        = sqlrow.User[timeCol]
	accountRow     = sqlrow.Account[timeCol]
	contractRow    = sqlrow.Contract[timeCol]
	idempotencyRow = sqlrow.Idempotency[timeCol]
)

// decoded names the store in the error of a row conversion (v, err).
func decoded[V any](v V, err error) (V, error) {
	if err != nil {
		var zero V
		return zero, fmt.Errorf("postgres: %w", err)
	}
	return v, nil
}

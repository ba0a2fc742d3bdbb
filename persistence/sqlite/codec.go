package sqlite

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Column encodings: those of sqlrow (see migrations/0001_init.sql), with
// timestamps as INTEGER unix milliseconds.

// millis encodes t as unix milliseconds; sub-millisecond precision is
// dropped, as the API's timestamps have none.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis decodes a timestamp column into a UTC time.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// timeCol scans a timestamp column (unix milliseconds or NULL); it is the
// sqlrow.TimeColumn of the row types.
type timeCol struct{ sql.NullInt64 }

// At implements sqlrow.TimeColumn.
func (c timeCol) At() (time.Time, bool) { return fromMillis(c.Int64), c.Valid }

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
		return zero, fmt.Errorf("sqlite: %w", err)
	}
	return v, nil
}

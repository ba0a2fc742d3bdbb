package sqlstore

import (
	"fmt"
	"time"

	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// timeCol scans a timestamp column of either database, NULL included:
// SQLite's hold unix milliseconds (INTEGER), PostgreSQL's TIMESTAMPTZ. It is
// the sqlrow.TimeColumn of the row types.
type timeCol struct {
	t  time.Time
	ok bool
}

// Scan implements sql.Scanner.
func (c *timeCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c = timeCol{}
	case int64:
		*c = timeCol{t: time.UnixMilli(v).UTC(), ok: true}
	case time.Time:
		*c = timeCol{t: v.UTC(), ok: true}
	default:
		return fmt.Errorf("timestamp column holds a %T", src)
	}
	return nil
}

// At implements sqlrow.TimeColumn.
func (c timeCol) At() (time.Time, bool) { return c.t, c.ok }

// The rows of the tables, with timestamps scanned into timeCol.
type (
	txRow          = sqlrow.Tx[timeCol]
	userRow        = sqlrow.User[timeCol]
	accountRow     = sqlrow.Account[timeCol]
	contractRow    = sqlrow.Contract[timeCol]
	callbackRow    = sqlrow.Callback[timeCol]
	idempotencyRow = sqlrow.Idempotency[timeCol]
)

// ts encodes t for a timestamp column (Dialect.Time).
func (s *Store) ts(t time.Time) any { return s.d.Time(t) }

// nullTS encodes an optional timestamp; nil is NULL. It is the store's
// sqlrow.TimeValue.
func (s *Store) nullTS(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.d.Time(*t)
}

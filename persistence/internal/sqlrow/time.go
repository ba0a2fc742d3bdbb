package sqlrow

import (
	"fmt"
	"time"
)

// TimeColumn is the type a store scans a timestamp column into, NULL
// included: SQLite's holds unix milliseconds, PostgreSQL's a TIMESTAMPTZ.
// A pointer to it must implement sql.Scanner (embedding sql.NullInt64 or
// sql.NullTime does).
type TimeColumn interface {
	// At returns the time the column holds, in UTC, and false for NULL.
	At() (time.Time, bool)
}

// TimeValue encodes an optional timestamp as a value of the store's
// timestamp columns (an argument of a statement); nil is NULL.
type TimeValue func(t *time.Time) any

// nullTime decodes an optional timestamp.
func nullTime[T TimeColumn](c T) *time.Time {
	t, ok := c.At()
	if !ok {
		return nil
	}
	return &t
}

// requiredTime decodes a timestamp of a NOT NULL column.
func requiredTime[T TimeColumn](field string, c T) (time.Time, error) {
	t, ok := c.At()
	if !ok {
		return time.Time{}, fmt.Errorf("%s is NULL", field)
	}
	return t, nil
}

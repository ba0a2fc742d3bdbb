package sqlite

import (
	"errors"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// listChunk bounds the values of one IN list (SQLite bounds the bound
// parameters of a statement).
const listChunk = 500

// dialect is SQLite's sqlstore.Dialect: timestamps as INTEGER unix
// milliseconds, IN lists of at most listChunk values, no row locks (one
// writer at a time, BEGIN IMMEDIATE), this process's clock.
type dialect struct{}

var _ sqlstore.Dialect = dialect{}

// Name implements sqlstore.Dialect.
func (dialect) Name() string { return "sqlite" }

// BindType implements sqlstore.Dialect.
func (dialect) BindType() int { return sqlx.QUESTION }

// Time implements sqlstore.Dialect: unix milliseconds.
func (dialect) Time(t time.Time) any { return t.UnixMilli() }

// Bool implements sqlstore.Dialect: integers, as the partial indexes name
// them.
func (dialect) Bool(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// Seq implements sqlstore.Dialect: the rowid (transactions' seq is it).
func (dialect) Seq() string { return "rowid" }

// Find implements sqlstore.Dialect.
func (dialect) Find() string { return "instr" }

// Now implements sqlstore.Dialect: the clock of this process (the only one
// that writes the file's leases), in milliseconds.
func (dialect) Now() string { return `CAST(unixepoch('subsec') * 1000 AS INTEGER)` }

// Later implements sqlstore.Dialect.
func (d dialect) Later() string { return `(` + d.Now() + ` + ?)` }

// Lock implements sqlstore.Dialect: none, writers are serialised.
func (dialect) Lock(sqlstore.LockMode) string { return "" }

// List implements sqlstore.Dialect: IN lists of at most listChunk values.
func (dialect) List(column string, values []string) []sqlstore.Chunk {
	var out []sqlstore.Chunk
	for start := 0; start < len(values); start += listChunk {
		chunk := values[start:min(start+listChunk, len(values))]
		args := make([]any, len(chunk))
		for i, v := range chunk {
			args[i] = v
		}
		out = append(out, sqlstore.Chunk{
			Cond: column + ` IN (?` + strings.Repeat(`, ?`, len(chunk)-1) + `)`,
			Args: args,
		})
	}
	return out
}

// Classify implements sqlstore.Dialect.
func (dialect) Classify(err error) (error, string) {
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return engine.ErrConflict, se.Error()
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return engine.ErrNotFound, se.Error()
		}
	}
	return nil, ""
}

// RolledBack implements sqlstore.Dialect: a failed COMMIT leaves the
// outcome unknown to the caller.
func (dialect) RolledBack(error) bool { return false }

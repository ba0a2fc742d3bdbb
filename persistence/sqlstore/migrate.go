package sqlstore

import (
	"context"
	"time"

	"github.com/txengine/txengine/persistence/internal/schema"
)

// Migrations is what ApplyMigrations applies: the numbered migrations of the
// database's package, and how that database records and serialises them.
type Migrations struct {
	// List is the migrations, ordered by version.
	List []schema.Migration
	// Table creates schema_migrations when it is missing (its applied
	// column in the database's timestamp type).
	Table string
	// Lock, when set, is run first in every migration's transaction: a lock
	// that makes processes starting at the same time apply each migration
	// once (where BEGIN IMMEDIATE does not already).
	Lock string
	// Check returns the precondition of the migration of a version, or
	// nil: run in the migration's transaction before its SQL, it refuses
	// data the migration must not change silently.
	Check func(version int) func(ctx context.Context, tx Conn) error
}

// ApplyMigrations applies the migrations of m up to version upTo that the
// database has not seen yet, each in its own database transaction together
// with its row in schema_migrations (checked inside that transaction, under
// m.Lock). Calling it again is a no-op.
func (s *Store) ApplyMigrations(ctx context.Context, m Migrations, upTo int) error {
	// CREATE TABLE IF NOT EXISTS is not safe against a concurrent creator
	// (both may pass the check): it runs under the lock too.
	err := s.migrationTx(ctx, m, func(tx Conn) error {
		if _, err := tx.Raw().ExecContext(ctx, m.Table); err != nil {
			return s.errorf("create schema_migrations: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, mig := range m.List {
		if mig.Version > upTo {
			break
		}
		if err := s.migrationTx(ctx, m, func(tx Conn) error { return s.applyMigration(ctx, tx, m, mig) }); err != nil {
			return err
		}
	}
	return nil
}

// migrationTx runs fn in a write transaction that first takes m.Lock.
func (s *Store) migrationTx(ctx context.Context, m Migrations, fn func(tx Conn) error) error {
	return s.inTx(ctx, func(tx Conn) error {
		if m.Lock != "" {
			if _, err := tx.Raw().ExecContext(ctx, m.Lock); err != nil {
				return s.errorf("take the migration lock: %w", err)
			}
		}
		return fn(tx)
	})
}

// applyMigration runs mig unless schema_migrations records it already.
func (s *Store) applyMigration(ctx context.Context, tx Conn, m Migrations, mig schema.Migration) error {
	var n int
	if err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, mig.Version); err != nil {
		return s.errorf("migration %s: %w", mig.Name, err)
	}
	if n > 0 {
		return nil
	}
	if m.Check != nil {
		if check := m.Check(mig.Version); check != nil {
			if err := check(ctx, tx); err != nil {
				return s.errorf("migration %s: %w", mig.Name, err)
			}
		}
	}
	// Run as written (no placeholders to bind): without arguments lib/pq
	// uses the simple query protocol, which runs a file of several
	// statements.
	if _, err := tx.Raw().ExecContext(ctx, mig.SQL); err != nil {
		return s.errorf("migration %s: %w", mig.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)`,
		mig.Version, mig.Name, s.ts(time.Now())); err != nil {
		return s.errorf("record migration %s: %w", mig.Name, err)
	}
	return nil
}

package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Cursor returns the last block the watcher processed on network, and false
// when it never processed one.
func (s *Store) Cursor(ctx context.Context, network string) (uint64, bool, error) {
	var b int64
	err := s.db.GetContext(ctx, &b, `SELECT block FROM network_cursors WHERE network = $1`, network)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap(err, "cursor of %s", network)
	}
	u, err := uint64Of("block", b)
	if err != nil {
		return 0, false, fmt.Errorf("postgres: cursor of %s: %w", network, err)
	}
	return u, true, nil
}

// SetCursor records the last processed block of network (it may go back,
// after a reorg).
func (s *Store) SetCursor(ctx context.Context, network string, block uint64) error {
	b, err := int64Of("block", block)
	if err != nil {
		return fmt.Errorf("postgres: set cursor of %s: %w", network, err)
	}
	// One statement: no explicit transaction needed.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO network_cursors (network, block) VALUES ($1, $2)
		ON CONFLICT (network) DO UPDATE SET block = excluded.block`, network, b); err != nil {
		return wrap(err, "set cursor of %s", network)
	}
	return nil
}

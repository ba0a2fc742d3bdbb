package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Cursor returns the last block the watcher processed on network, and false
// when it never processed one.
func (s *Store) Cursor(ctx context.Context, network string) (uint64, bool, error) {
	var b int64
	err := s.r.GetContext(ctx, &b, `SELECT block FROM network_cursors WHERE network = ?`, network)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap(err, "cursor of %s", network)
	}
	u, err := sqlrow.Uint64Of("block", b)
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: cursor of %s: %w", network, err)
	}
	return u, true, nil
}

// SetCursor implements engine.NetworkStore.
func (s *Store) SetCursor(ctx context.Context, network string, block uint64, hash common.Hash) error {
	return s.SetCursorFenced(ctx, engine.NetworkFence{Network: network}, block, hash)
}

// SetCursorFenced implements engine.FencedFollowerStore.
func (s *Store) SetCursorFenced(ctx context.Context, f engine.NetworkFence, block uint64, hash common.Hash) error {
	network := f.Network
	b, err := sqlrow.Int64Of("block", block)
	if err != nil {
		return fmt.Errorf("sqlite: set cursor of %s: %w", network, err)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkNetworkFence(ctx, tx, f); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO network_cursors (network, block) VALUES (?, ?)
			ON CONFLICT (network) DO UPDATE SET block = excluded.block`, network, b); err != nil {
			return wrap(err, "set cursor of %s", network)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO processed_blocks (network, number, hash) VALUES (?, ?, ?)
			ON CONFLICT (network, number) DO UPDATE SET hash = excluded.hash`, network, b, hash.Hex()); err != nil {
			return wrap(err, "record block %d of %s", block, network)
		}
		// Forget what lies above the cursor (a reorg went back) and what is
		// older than the retention.
		if _, err := tx.ExecContext(ctx, `DELETE FROM processed_blocks WHERE network = ? AND (number > ? OR number < ?)`,
			network, b, b-engine.ProcessedRetention); err != nil {
			return wrap(err, "prune processed blocks of %s", network)
		}
		return nil
	})
}

// ProcessedHash implements engine.NetworkStore.
func (s *Store) ProcessedHash(ctx context.Context, network string, number uint64) (common.Hash, bool, error) {
	n, err := sqlrow.Int64Of("number", number)
	if err != nil {
		return common.Hash{}, false, fmt.Errorf("sqlite: processed hash of %s: %w", network, err)
	}
	var h string
	err = s.r.GetContext(ctx, &h, `SELECT hash FROM processed_blocks WHERE network = ? AND number = ?`, network, n)
	if errors.Is(err, sql.ErrNoRows) {
		return common.Hash{}, false, nil
	}
	if err != nil {
		return common.Hash{}, false, wrap(err, "processed hash of block %d of %s", number, network)
	}
	return common.HexToHash(h), true, nil
}

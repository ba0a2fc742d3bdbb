package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Cursor returns the last block the watcher processed on network, and false
// when it never processed one.
func (s *Store) Cursor(ctx context.Context, network string) (uint64, bool, error) {
	var b int64
	err := s.r.Get(ctx, &b, `SELECT block FROM network_cursors WHERE network = ?`, network)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.wrap(err, "cursor of %s", network)
	}
	u, err := sqlrow.Uint64Of("block", b)
	if err != nil {
		return 0, false, s.errorf("cursor of %s: %w", network, err)
	}
	return u, true, nil
}

// SetCursor implements engine.NetworkStore.
func (s *Store) SetCursor(ctx context.Context, network string, block uint64, hash common.Hash) error {
	return s.SetCursorFenced(ctx, engine.NetworkFence{Network: network}, block, hash)
}

// SetCursorFenced implements engine.FencedFollowerStore: the cursor, the
// block's hash and the pruning of processed hashes in one transaction,
// after the network lease is checked (lockNetworkFence).
func (s *Store) SetCursorFenced(ctx context.Context, f engine.NetworkFence, block uint64, hash common.Hash) error {
	network := f.Network
	b, err := sqlrow.Int64Of("block", block)
	if err != nil {
		return s.errorf("set cursor of %s: %w", network, err)
	}
	return s.inTx(ctx, func(tx Conn) error {
		if err := s.lockNetworkFence(ctx, tx, f); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO network_cursors (network, block) VALUES (?, ?)
			ON CONFLICT (network) DO UPDATE SET block = excluded.block`, network, b); err != nil {
			return s.wrap(err, "set cursor of %s", network)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO processed_blocks (network, number, hash) VALUES (?, ?, ?)
			ON CONFLICT (network, number) DO UPDATE SET hash = excluded.hash`, network, b, hash.Hex()); err != nil {
			return s.wrap(err, "record block %d of %s", block, network)
		}
		// Forget what lies above the cursor (a reorg went back) and what is
		// older than the retention.
		if _, err := tx.Exec(ctx, `DELETE FROM processed_blocks WHERE network = ? AND (number > ? OR number < ?)`,
			network, b, b-engine.ProcessedRetention); err != nil {
			return s.wrap(err, "prune processed blocks of %s", network)
		}
		return nil
	})
}

// ProcessedHash implements engine.NetworkStore.
func (s *Store) ProcessedHash(ctx context.Context, network string, number uint64) (common.Hash, bool, error) {
	n, err := sqlrow.Int64Of("number", number)
	if err != nil {
		return common.Hash{}, false, s.errorf("processed hash of %s: %w", network, err)
	}
	var h string
	err = s.r.Get(ctx, &h, `SELECT hash FROM processed_blocks WHERE network = ? AND number = ?`, network, n)
	if errors.Is(err, sql.ErrNoRows) {
		return common.Hash{}, false, nil
	}
	if err != nil {
		return common.Hash{}, false, s.wrap(err, "processed hash of block %d of %s", number, network)
	}
	return common.HexToHash(h), true, nil
}

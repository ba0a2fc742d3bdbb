package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// FailSubmitted implements engine.TxStore: submitted to failed, nonce,
// hashes and attempts kept, callbacks enqueued; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) FailSubmitted(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return s.failFrom(ctx, f, engine.StatusSubmitted, id, txErr, ended)
}

// failFrom moves transaction id from status from to failed with txErr and
// ended in one conditional update (ErrConflict in another status), with
// its callbacks, after checking the fence as MarkSubmittedMany does.
func (s *Store) failFrom(ctx context.Context, f engine.Fence, from engine.TxStatus, id string, txErr *engine.TxError, ended time.Time) error {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return fmt.Errorf("postgres: fail %s %s: %w", from, id, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = $1, error = $2, ended = $3
			WHERE id = $4 AND status = $5`,
			string(engine.StatusFailed), errJSON, ts(ended), id, string(from))
		if err != nil {
			return wrap(err, "fail %s %s", from, id)
		}
		if err := s.checkUpdated(ctx, dbtx, res, id, "fail %s", "not "+string(from)); err != nil {
			return err
		}
		return enqueueCallbacks(ctx, dbtx, id, ended)
	})
}

// NoteError implements engine.TxStore.
func (s *Store) NoteError(ctx context.Context, id string, status engine.TxStatus, txErr *engine.TxError) error {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return fmt.Errorf("postgres: note error on %s: %w", id, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET error = $1 WHERE id = $2 AND status = $3`,
			errJSON, id, string(status))
		if err != nil {
			return wrap(err, "note error on %s", id)
		}
		return s.checkUpdated(ctx, dbtx, res, id, "note error on %s", "not "+string(status))
	})
}

// HashesOf implements engine.TxStore.
func (s *Store) HashesOf(ctx context.Context, ids []string) (map[string][]common.Hash, error) {
	out := map[string][]common.Hash{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		TxID string `db:"tx_id"`
		Hash string `db:"hash"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT tx_id, hash FROM tx_attempts
		WHERE tx_id = ANY($1::text[]) ORDER BY created, hash`, pq.StringArray(ids)); err != nil {
		return nil, wrap(err, "versions of %d transactions", len(ids))
	}
	for _, r := range rows {
		out[r.TxID] = append(out[r.TxID], common.HexToHash(r.Hash))
	}
	return out, nil
}

package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

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
		return fmt.Errorf("sqlite: fail %s %s: %w", from, id, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := checkFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ?, error = ?, ended = ?
			WHERE id = ? AND status = ?`,
			string(engine.StatusFailed), errJSON, millis(ended), id, string(from))
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
		return fmt.Errorf("sqlite: note error on %s: %w", id, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET error = ? WHERE id = ? AND status = ?`,
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
	err := inChunks(ids, func(in string, args []any) error {
		var rows []struct {
			TxID string `db:"tx_id"`
			Hash string `db:"hash"`
		}
		if err := s.r.SelectContext(ctx, &rows, `SELECT tx_id, hash FROM tx_attempts
			WHERE tx_id IN `+in+` ORDER BY created, hash`, args...); err != nil {
			return wrap(err, "versions of %d transactions", len(args))
		}
		for _, r := range rows {
			out[r.TxID] = append(out[r.TxID], common.HexToHash(r.Hash))
		}
		return nil
	})
	return out, err
}

// inChunks calls fn for each chunk of at most hashChunk ids with the
// chunk's placeholder list "(?, ?, ...)" and its arguments.
func inChunks(ids []string, fn func(in string, args []any) error) error {
	for start := 0; start < len(ids); start += hashChunk {
		chunk := ids[start:min(start+hashChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		if err := fn(`(?`+strings.Repeat(`, ?`, len(chunk)-1)+`)`, args); err != nil {
			return err
		}
	}
	return nil
}

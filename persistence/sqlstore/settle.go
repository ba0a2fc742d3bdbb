package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The ends of a transaction short of being mined: failed (with its
// callbacks enqueued in the same database transaction) or back to new.

// MarkFailed moves a transaction that is not terminal to failed with txErr
// and ended, and enqueues its callbacks. It fails with engine.ErrConflict
// if the transaction is already completed or failed and engine.ErrNotFound
// if there is none.
func (s *Store) MarkFailed(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) error {
	return s.failFrom(ctx, engine.Fence{}, engine.TxFail, "mark %s failed", id, txErr, ended)
}

// FailQueued implements engine.TxStore: MarkFailed for the Sender, only
// from new, with the fence checked as in MarkSubmittedMany. The callbacks
// are enqueued in the same database transaction.
func (s *Store) FailQueued(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return s.failFrom(ctx, f, engine.TxFailQueued, "fail %s", id, txErr, ended)
}

// FailSubmitted implements engine.TxStore: submitted to failed, nonce,
// hashes and attempts kept, callbacks enqueued; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) FailSubmitted(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return s.failFrom(ctx, f, engine.TxFailSubmitted, "fail %s", id, txErr, ended)
}

// failFrom moves transaction id to failed with txErr and ended by
// transition t, in one conditional update (ErrConflict in a status t does
// not leave from), with its callbacks, after checking the fence as
// MarkSubmittedMany does. what (of id) names the call in errors.
func (s *Store) failFrom(ctx context.Context, f engine.Fence, t engine.Transition, what, id string, txErr *engine.TxError, ended time.Time) error {
	not := "not " + strings.Join(engine.TransitionFrom(t), " or ")
	if t == engine.TxFail {
		not = "terminal"
	}
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return s.errorf(what+": %w", id, err)
	}
	cond, args := from(t)
	return s.inTx(ctx, func(dbtx Conn) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.Exec(ctx, `UPDATE transactions SET status = ?, error = ?, ended = ? WHERE id = ? AND `+cond,
			append([]any{string(engine.StatusFailed), errJSON, s.ts(ended), id}, args...)...)
		if err != nil {
			return s.wrap(err, what, id)
		}
		if err := s.checkUpdated(ctx, dbtx, res, id, what, not); err != nil {
			return err
		}
		return s.enqueueCallbacks(ctx, dbtx, id, ended)
	})
}

// NoteError implements engine.TxStore. It leaves the status as it is (the
// update is conditional on it).
func (s *Store) NoteError(ctx context.Context, id string, status engine.TxStatus, txErr *engine.TxError) error {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return s.errorf("note error on %s: %w", id, err)
	}
	return s.inTx(ctx, func(dbtx Conn) error {
		res, err := dbtx.Exec(ctx, `UPDATE transactions SET error = ? WHERE id = ? AND status = ?`,
			errJSON, id, string(status))
		if err != nil {
			return s.wrap(err, "note error on %s", id)
		}
		return s.checkUpdated(ctx, dbtx, res, id, "note error on %s", "not "+string(status))
	})
}

// ReleaseNonce implements engine.TxStore: submitted back to new without
// its nonce and versions, or to failed (with its callbacks) when txErr is
// not nil; the fence is checked as in MarkSubmittedMany.
func (s *Store) ReleaseNonce(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return s.ReleaseNonces(ctx, f, []engine.NonceRelease{{ID: id, Err: txErr}}, ended)
}

// ReleaseNonces implements engine.NonceBatchReleaser: each of rs as
// ReleaseNonce does, all in one database transaction (all or none), the
// fence checked once.
func (s *Store) ReleaseNonces(ctx context.Context, f engine.Fence, rs []engine.NonceRelease, ended time.Time) error {
	cond, args := from(engine.TxRelease)
	return s.inTx(ctx, func(dbtx Conn) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		for _, r := range rs {
			if err := s.releaseOne(ctx, dbtx, r, ended, cond, args); err != nil {
				return err
			}
		}
		return nil
	})
}

// releaseOne releases the nonce of r.ID in dbtx (ReleaseNonces).
func (s *Store) releaseOne(ctx context.Context, dbtx Conn, r engine.NonceRelease, ended time.Time, cond string, condArgs []any) error {
	id := r.ID
	status, errJSON, endedAt := string(engine.StatusNew), sql.NullString{}, any(nil)
	if r.Err != nil {
		j, err := sqlrow.NullJSON("error", r.Err, false)
		if err != nil {
			return s.errorf("release nonce of %s: %w", id, err)
		}
		status, errJSON, endedAt = string(engine.StatusFailed), j, s.ts(ended)
	}
	res, err := dbtx.Exec(ctx, `UPDATE transactions SET status = ?, error = ?, ended = ?,
		nonce = NULL, gas_limit = NULL, hash = NULL, raw_tx = NULL, submitted = NULL
		WHERE id = ? AND `+cond, append([]any{status, errJSON, endedAt, id}, condArgs...)...)
	if err != nil {
		return s.wrap(err, "release nonce of %s", id)
	}
	if err := s.checkUpdated(ctx, dbtx, res, id, "release nonce of %s", "not submitted"); err != nil {
		return err
	}
	if _, err := dbtx.Exec(ctx, `DELETE FROM tx_attempts WHERE tx_id = ?`, id); err != nil {
		return s.wrap(err, "forget hashes of %s", id)
	}
	if r.Err == nil {
		return nil
	}
	return s.enqueueCallbacks(ctx, dbtx, id, ended)
}

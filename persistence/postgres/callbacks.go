package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The callback outbox (migrations/0005_callbacks.sql). Rows are inserted by
// enqueueCallbacks inside the write transaction of every method that moves a
// transaction to completed or failed (engine.TxStore's outbox rule).

// enqueueCallbacks inserts one pending outbox row, due at ended, per
// callback URL of transaction id. The caller has just moved the transaction
// from a non-terminal status to completed or failed in dbtx.
func enqueueCallbacks(ctx context.Context, dbtx *sqlx.Tx, id string, ended time.Time) error {
	var raw sql.NullString
	if err := dbtx.GetContext(ctx, &raw, `SELECT callbacks FROM transactions WHERE id = $1`, id); err != nil {
		return wrap(err, "callbacks of %s", id)
	}
	return insertCallbacks(ctx, dbtx, id, raw, ended)
}

// insertCallbacks inserts the outbox rows of transaction id whose
// callbacks column holds raw.
func insertCallbacks(ctx context.Context, dbtx *sqlx.Tx, id string, raw sql.NullString, ended time.Time) error {
	rows, err := outboxRows(id, raw, ended)
	if err != nil {
		return err
	}
	return insertOutbox(ctx, dbtx, rows)
}

// DueCallbacks implements engine.CallbackStore.
func (s *Store) DueCallbacks(ctx context.Context, now time.Time, limit int) ([]engine.Callback, error) {
	out := []engine.Callback{}
	if limit <= 0 {
		return out, nil
	}
	var rows []callbackRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+sqlrow.CallbackColumns+` FROM callback_outbox
		WHERE status = $1 AND next_attempt <= $2 ORDER BY next_attempt, created, seq LIMIT $3`,
		string(engine.CallbackPending), ts(now), limit); err != nil {
		return nil, wrap(err, "due callbacks")
	}
	return decoded(sqlrow.Callbacks(rows))
}

// ClaimDueCallbacks implements engine.CallbackStore: one UPDATE claims the
// rows its subquery locks (FOR UPDATE SKIP LOCKED: a row another claimer is
// claiming is skipped, not waited for), and the claimed rows are returned
// in due order.
func (s *Store) ClaimDueCallbacks(ctx context.Context, node string, now time.Time, claimFor time.Duration, limit int) ([]engine.Callback, error) {
	out := []engine.Callback{}
	if limit <= 0 {
		return out, nil
	}
	var rows []callbackRow
	if err := s.db.SelectContext(ctx, &rows, `WITH claimed AS (
			UPDATE callback_outbox SET claimed_by = $1, claimed_until = $2
			WHERE id IN (
				SELECT id FROM callback_outbox
				WHERE status = $3 AND next_attempt <= $4
					AND (claimed_by IS NULL OR claimed_by = $1 OR claimed_until <= $4)
				ORDER BY next_attempt, created, seq
				LIMIT $5
				FOR UPDATE SKIP LOCKED)
			RETURNING seq, `+sqlrow.CallbackColumns+`)
		SELECT `+sqlrow.CallbackColumns+` FROM claimed ORDER BY next_attempt, created, seq`,
		node, ts(now.Add(claimFor)), string(engine.CallbackPending), ts(now), limit); err != nil {
		return nil, wrap(err, "claim due callbacks for %q", node)
	}
	return decoded(sqlrow.Callbacks(rows))
}

// MarkCallbackDelivered implements engine.CallbackStore.
func (s *Store) MarkCallbackDelivered(ctx context.Context, id string, attempts int, at time.Time) error {
	return s.updateCallback(ctx, id, "mark callback %s delivered",
		`status = $1, attempts = $2, delivered = $3, claimed_by = NULL, claimed_until = NULL`, string(engine.CallbackDelivered), attempts, ts(at))
}

// MarkCallbackRetry implements engine.CallbackStore.
func (s *Store) MarkCallbackRetry(ctx context.Context, id string, attempts int, next time.Time, lastErr string) error {
	return s.updateCallback(ctx, id, "mark callback %s for retry",
		`attempts = $1, next_attempt = $2, last_error = $3, claimed_by = NULL, claimed_until = NULL`, attempts, ts(next), lastErr)
}

// MarkCallbackAbandoned implements engine.CallbackStore.
func (s *Store) MarkCallbackAbandoned(ctx context.Context, id string, attempts int, lastErr string) error {
	return s.updateCallback(ctx, id, "abandon callback %s",
		`status = $1, attempts = $2, last_error = $3, claimed_by = NULL, claimed_until = NULL`, string(engine.CallbackAbandoned), attempts, lastErr)
}

// updateCallback sets the columns of set (with args, placeholders $1..$3)
// on pending row id, whose claim set clears:
// engine.ErrNotFound without such a row, engine.ErrConflict when it is no
// longer pending.
func (s *Store) updateCallback(ctx context.Context, id, what, set string, args ...any) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE callback_outbox SET `+set+` WHERE id = $4 AND status = $5`,
			append(args, id, string(engine.CallbackPending))...)
		if err != nil {
			return wrap(err, what, id)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return wrap(err, what, id)
		}
		if n > 0 {
			return nil
		}
		var status string
		err = dbtx.GetContext(ctx, &status, `SELECT status FROM callback_outbox WHERE id = $1`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(what+": no such callback", id)
		}
		if err != nil {
			return wrap(err, what, id)
		}
		return conflict(what+": status is %s, not pending", id, status)
	})
}

// PendingCallbacks implements engine.CallbackStore.
func (s *Store) PendingCallbacks(ctx context.Context) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT COUNT(*) FROM callback_outbox WHERE status = $1`,
		string(engine.CallbackPending)); err != nil {
		return 0, wrap(err, "pending callbacks")
	}
	return n, nil
}

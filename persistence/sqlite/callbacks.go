package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
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
	if err := dbtx.GetContext(ctx, &raw, `SELECT callbacks FROM transactions WHERE id = ?`, id); err != nil {
		return wrap(err, "callbacks of %s", id)
	}
	return insertCallbacks(ctx, dbtx, id, raw, ended)
}

// insertCallbacks inserts the outbox rows of transaction id whose
// callbacks column holds raw.
func insertCallbacks(ctx context.Context, dbtx *sqlx.Tx, id string, raw sql.NullString, ended time.Time) error {
	var urls []string
	if err := sqlrow.FromNullJSON("callbacks", raw, &urls); err != nil {
		return fmt.Errorf("sqlite: callbacks of %s: %w", id, err)
	}
	at := millis(ended)
	for _, u := range urls {
		if _, err := dbtx.ExecContext(ctx, `INSERT INTO callback_outbox
			(id, tx_id, url, status, attempts, next_attempt, last_error, created)
			VALUES (?, ?, ?, ?, 0, ?, '', ?)`,
			uuid.NewString(), id, u, string(engine.CallbackPending), at, at); err != nil {
			return wrap(err, "enqueue callback of %s", id)
		}
	}
	return nil
}

// DueCallbacks implements engine.CallbackStore.
func (s *Store) DueCallbacks(ctx context.Context, now time.Time, limit int) ([]engine.Callback, error) {
	out := []engine.Callback{}
	if limit <= 0 {
		return out, nil
	}
	var rows []callbackRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT `+sqlrow.CallbackColumns+` FROM callback_outbox
		WHERE status = ? AND next_attempt <= ? ORDER BY next_attempt, created, rowid LIMIT ?`,
		string(engine.CallbackPending), millis(now), limit); err != nil {
		return nil, wrap(err, "due callbacks")
	}
	return decoded(sqlrow.Callbacks(rows))
}

// ClaimDueCallbacks implements engine.CallbackStore: the rows are chosen and
// claimed in one write transaction (writers are serialised, so concurrent
// claimers get disjoint rows).
func (s *Store) ClaimDueCallbacks(ctx context.Context, node string, now time.Time, claimFor time.Duration, limit int) ([]engine.Callback, error) {
	out := []engine.Callback{}
	if limit <= 0 {
		return out, nil
	}
	err := s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		var rows []callbackRow
		if err := dbtx.SelectContext(ctx, &rows, `SELECT `+sqlrow.CallbackColumns+` FROM callback_outbox
			WHERE status = ? AND next_attempt <= ? AND (claimed_by IS NULL OR claimed_by = ? OR claimed_until <= ?)
			ORDER BY next_attempt, created, rowid LIMIT ?`,
			string(engine.CallbackPending), millis(now), node, millis(now), limit); err != nil {
			return wrap(err, "due callbacks for %q", node)
		}
		stmt, err := dbtx.PreparexContext(ctx, `UPDATE callback_outbox SET claimed_by = ?, claimed_until = ? WHERE id = ?`)
		if err != nil {
			return wrap(err, "claim callbacks: prepare")
		}
		defer stmt.Close()
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, node, millis(now.Add(claimFor)), r.ID); err != nil {
				return wrap(err, "claim callback %s for %q", r.ID, node)
			}
		}
		cbs, err := decoded(sqlrow.Callbacks(rows))
		out = cbs
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarkCallbackDelivered implements engine.CallbackStore.
func (s *Store) MarkCallbackDelivered(ctx context.Context, id string, attempts int, at time.Time) error {
	return s.updateCallback(ctx, id, "mark callback %s delivered",
		`status = ?, attempts = ?, delivered = ?, claimed_by = NULL, claimed_until = NULL`, string(engine.CallbackDelivered), attempts, millis(at))
}

// MarkCallbackRetry implements engine.CallbackStore.
func (s *Store) MarkCallbackRetry(ctx context.Context, id string, attempts int, next time.Time, lastErr string) error {
	return s.updateCallback(ctx, id, "mark callback %s for retry",
		`attempts = ?, next_attempt = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL`, attempts, millis(next), lastErr)
}

// MarkCallbackAbandoned implements engine.CallbackStore.
func (s *Store) MarkCallbackAbandoned(ctx context.Context, id string, attempts int, lastErr string) error {
	return s.updateCallback(ctx, id, "abandon callback %s",
		`status = ?, attempts = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL`, string(engine.CallbackAbandoned), attempts, lastErr)
}

// updateCallback sets the columns of set (with args) on pending row id,
// whose claim set clears:
// engine.ErrNotFound without such a row, engine.ErrConflict when it is no
// longer pending.
func (s *Store) updateCallback(ctx context.Context, id, what, set string, args ...any) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE callback_outbox SET `+set+` WHERE id = ? AND status = ?`,
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
		err = dbtx.GetContext(ctx, &status, `SELECT status FROM callback_outbox WHERE id = ?`, id)
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
	if err := s.r.GetContext(ctx, &n, `SELECT COUNT(*) FROM callback_outbox WHERE status = ?`,
		string(engine.CallbackPending)); err != nil {
		return 0, wrap(err, "pending callbacks")
	}
	return n, nil
}

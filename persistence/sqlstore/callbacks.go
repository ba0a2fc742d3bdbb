package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The callback outbox (migrations/0005_callbacks.sql). Rows are inserted by
// enqueueCallbacks (or insertCallbacks, insertOutbox) inside the write
// transaction of every method that moves a transaction to completed or
// failed (engine.TxStore's outbox rule).

// OutboxRow is one callback_outbox row to insert: callback ID of
// transaction TxID, or of delivery EventID (seq EventSeq of subscription
// SubscriptionID), to URL, pending and due at At (created then too).
// Exactly one of TxID and EventID is set. Held is set on an event row
// behind a pending row of its subscription and URL (releaseNext).
type OutboxRow struct {
	ID, TxID, URL  string
	EventID        string
	SubscriptionID string
	EventSeq       int64
	Held           bool
	At             time.Time
}

// sourceArgs are the values of the columns of r that name its source
// (tx_id, event_id, subscription_id, event_seq): NULL where not set.
func (r OutboxRow) sourceArgs() []any {
	null := func(v string) sql.NullString { return sql.NullString{String: v, Valid: v != ""} }
	return []any{null(r.TxID), null(r.EventID), null(r.SubscriptionID),
		sql.NullInt64{Int64: r.EventSeq, Valid: r.EventID != ""}}
}

// what names the source of r in errors.
func (r OutboxRow) what() string {
	if r.EventID != "" {
		return "delivery " + r.EventID
	}
	return r.TxID
}

// OutboxWriter is the optional bulk statement of a Dialect that inserts
// outbox rows in tx, in order (their insertion order follows it), in a
// fixed number of statements. Without it, the store inserts them one by
// one.
type OutboxWriter interface {
	InsertOutbox(ctx context.Context, tx Conn, rows []OutboxRow) error
}

// enqueueCallbacks inserts one pending outbox row, due at ended, per
// callback URL of transaction id. The caller has just moved the transaction
// from a non-terminal status to completed or failed in dbtx.
func (s *Store) enqueueCallbacks(ctx context.Context, dbtx Conn, id string, ended time.Time) error {
	var raw sql.NullString
	if err := dbtx.Get(ctx, &raw, `SELECT callbacks FROM transactions WHERE id = ?`, id); err != nil {
		return s.wrap(err, "callbacks of %s", id)
	}
	return s.insertCallbacks(ctx, dbtx, id, raw, ended)
}

// insertCallbacks inserts the outbox rows of transaction id whose
// callbacks column holds raw.
func (s *Store) insertCallbacks(ctx context.Context, dbtx Conn, id string, raw sql.NullString, ended time.Time) error {
	rows, err := s.outboxRows(id, raw, ended)
	if err != nil {
		return err
	}
	return s.insertOutbox(ctx, dbtx, rows)
}

// outboxRows returns the outbox rows of transaction id whose callbacks
// column holds raw, due at ended: one per URL, in order, each with a fresh
// id.
func (s *Store) outboxRows(id string, raw sql.NullString, ended time.Time) ([]OutboxRow, error) {
	var urls []string
	if err := sqlrow.FromNullJSON("callbacks", raw, &urls); err != nil {
		return nil, s.errorf("callbacks of %s: %w", id, err)
	}
	rows := make([]OutboxRow, len(urls))
	for i, u := range urls {
		rows[i] = OutboxRow{ID: engine.NewID(), TxID: id, URL: u, At: ended}
	}
	return rows, nil
}

// insertOutbox inserts rows, pending and due at once (next attempt and
// creation at their time), in order.
func (s *Store) insertOutbox(ctx context.Context, dbtx Conn, rows []OutboxRow) error {
	if len(rows) == 0 {
		return nil
	}
	if w, ok := s.d.(OutboxWriter); ok {
		err := w.InsertOutbox(ctx, dbtx, rows)
		if err != nil && rows[0].what() == rows[len(rows)-1].what() {
			return s.wrap(err, "enqueue callback of %s", rows[0].what())
		}
		return s.wrap(err, "enqueue %d callbacks", len(rows))
	}
	stmt, err := dbtx.Prepare(ctx, `INSERT INTO callback_outbox
		(id, tx_id, event_id, subscription_id, event_seq, url, status, attempts, next_attempt, last_error, created, held)
		VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, '', ?, ?)`)
	if err != nil {
		return s.wrap(err, "enqueue %d callbacks", len(rows))
	}
	defer stmt.Close()
	for _, r := range rows {
		at := s.ts(r.At)
		args := append([]any{r.ID}, r.sourceArgs()...)
		if _, err := stmt.ExecContext(ctx, append(args, r.URL, string(engine.CallbackPending), at, at, r.Held)...); err != nil {
			return s.wrap(err, "enqueue callback of %s", r.what())
		}
	}
	return nil
}

// inOrder is the condition on a pending row c of callback_outbox that no
// pending row of its subscription and URL has a lower event_seq: the rows
// of one subscription and URL are delivered one at a time, in order (a
// transaction's row, whose subscription_id is NULL, always passes). The
// rows it would refuse are held already (releaseNext keeps at most one
// pending row of a subscription and URL not held, the lowest): the due
// queries skip held rows in callback_outbox_status_next, and inOrder checks
// the few that remain. The status is a literal, so that
// callback_outbox_event_order, a partial index on pending rows, serves the
// subquery.
const inOrder = `NOT EXISTS (SELECT 1 FROM callback_outbox p
	WHERE p.subscription_id = c.subscription_id AND p.url = c.url
		AND p.status = '` + string(engine.CallbackPending) + `' AND p.event_seq < c.event_seq)`

// DueCallbacks implements engine.CallbackStore: the due rows that the
// ordering rule of event rows lets through (inOrder).
func (s *Store) DueCallbacks(ctx context.Context, now time.Time, limit int) ([]engine.Callback, error) {
	out := []engine.Callback{}
	if limit <= 0 {
		return out, nil
	}
	var rows []callbackRow
	if err := s.r.Select(ctx, &rows, `SELECT `+sqlrow.CallbackColumns+` FROM callback_outbox c
		WHERE status = ? AND held = `+s.no+` AND next_attempt <= ? AND `+inOrder+`
		ORDER BY next_attempt, created, `+s.seq+` LIMIT ?`,
		string(engine.CallbackPending), s.ts(now), limit); err != nil {
		return nil, s.wrap(err, "due callbacks")
	}
	return decoded(sqlrow.Callbacks(rows))
}

// ClaimDueCallbacks implements engine.CallbackStore: one UPDATE claims the
// rows its subquery chooses and returns them, sorted in due order here.
// Where writers run side by side, the subquery locks the rows it chooses
// and skips those another claimer holds (FOR UPDATE SKIP LOCKED: skipped,
// not waited for); where they are serialised, concurrent claimers get
// disjoint rows anyway.
func (s *Store) ClaimDueCallbacks(ctx context.Context, node string, now time.Time, claimFor time.Duration, limit int) ([]engine.Callback, error) {
	out := []engine.Callback{}
	if limit <= 0 {
		return out, nil
	}
	var rows []claimedRow
	if err := s.w.Select(ctx, &rows, `UPDATE callback_outbox SET claimed_by = ?, claimed_until = ?
		WHERE id IN (
			SELECT id FROM callback_outbox c
			WHERE status = ? AND held = `+s.no+` AND next_attempt <= ?
				AND (claimed_by IS NULL OR claimed_by = ? OR claimed_until <= ?)
				AND `+inOrder+`
			ORDER BY next_attempt, created, `+s.seq+`
			LIMIT ?`+s.d.Lock(LockUpdateSkipLocked)+`)
		RETURNING `+s.seq+` AS claim_seq, `+sqlrow.CallbackColumns,
		node, s.ts(now.Add(claimFor)), string(engine.CallbackPending), s.ts(now), node, s.ts(now), limit); err != nil {
		return nil, s.wrap(err, "claim due callbacks for %q", node)
	}
	slices.SortFunc(rows, func(a, b claimedRow) int {
		return cmp.Or(a.NextAttempt.t.Compare(b.NextAttempt.t), a.Created.t.Compare(b.Created.t), cmp.Compare(a.Seq, b.Seq))
	})
	cbs := make([]callbackRow, len(rows))
	for i := range rows {
		cbs[i] = rows[i].callbackRow
	}
	return decoded(sqlrow.Callbacks(cbs))
}

// claimedRow is a row of ClaimDueCallbacks with its insertion order.
type claimedRow struct {
	Seq int64 `db:"claim_seq"`
	callbackRow
}

// MarkCallbackDelivered implements engine.CallbackStore; the next row of
// an event row's subscription and URL is released.
func (s *Store) MarkCallbackDelivered(ctx context.Context, id string, attempts int, at time.Time) error {
	return s.updateCallback(ctx, id, true, "mark callback %s delivered",
		`status = ?, attempts = ?, delivered = ?, claimed_by = NULL, claimed_until = NULL`, string(engine.CallbackDelivered), attempts, s.ts(at))
}

// MarkCallbackRetry implements engine.CallbackStore.
func (s *Store) MarkCallbackRetry(ctx context.Context, id string, attempts int, next time.Time, lastErr string) error {
	return s.updateCallback(ctx, id, false, "mark callback %s for retry",
		`attempts = ?, next_attempt = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL`, attempts, s.ts(next), lastErr)
}

// MarkCallbackAbandoned implements engine.CallbackStore; the next row of
// an event row's subscription and URL is released.
func (s *Store) MarkCallbackAbandoned(ctx context.Context, id string, attempts int, lastErr string) error {
	return s.updateCallback(ctx, id, true, "abandon callback %s",
		`status = ?, attempts = ?, last_error = ?, claimed_by = NULL, claimed_until = NULL`, string(engine.CallbackAbandoned), attempts, lastErr)
}

// updateCallback sets the columns of set (with args) on pending row id,
// whose claim set clears: engine.ErrNotFound without such a row,
// engine.ErrConflict when it is no longer pending. With release (the row
// leaves pending), the row of an event's delivery first locks its
// subscription's row (lockSubscriptions) and then releases the next row
// of its subscription and URL (releaseNext).
func (s *Store) updateCallback(ctx context.Context, id string, release bool, what, set string, args ...any) error {
	return s.inTx(ctx, func(dbtx Conn) error {
		var src struct {
			Sub sql.NullString `db:"subscription_id"`
			URL string         `db:"url"`
		}
		if release {
			err := dbtx.Get(ctx, &src, `SELECT subscription_id, url FROM callback_outbox WHERE id = ?`, id)
			if err != nil && !errors.Is(err, sql.ErrNoRows) { // none: the update says not found
				return s.wrap(err, what, id)
			}
			if src.Sub.Valid {
				if err := s.lockSubscriptions(ctx, dbtx, []string{src.Sub.String}); err != nil {
					return err
				}
			}
		}
		res, err := dbtx.Exec(ctx, `UPDATE callback_outbox SET `+set+` WHERE id = ? AND status = ?`,
			append(args, id, string(engine.CallbackPending))...)
		if err != nil {
			return s.wrap(err, what, id)
		}
		if err := s.checkRow(ctx, dbtx, res, "callback_outbox", "callback", id, what, "not pending"); err != nil {
			return err
		}
		if !src.Sub.Valid {
			return nil
		}
		return s.releaseNext(ctx, dbtx, src.Sub.String, src.URL)
	})
}

// releaseNext releases (held = false) the lowest pending row of
// subscription sub and url, one of whose rows just left pending. The
// caller holds the lock of the subscription's row (lockSubscriptions), as
// SaveSubscriptionStep does when it decides which of its new rows are held:
// so one of the two always sees the other's rows, and a pending row of a
// subscription and URL is never held without a lower one to release it.
// One probe of callback_outbox_event_order.
func (s *Store) releaseNext(ctx context.Context, tx Conn, sub, url string) error {
	_, err := tx.Exec(ctx, `UPDATE callback_outbox SET held = `+s.no+` WHERE id = (
		SELECT id FROM callback_outbox
		WHERE subscription_id = ? AND url = ? AND status = '`+string(engine.CallbackPending)+`'
		ORDER BY event_seq LIMIT 1)`, sub, url)
	return s.wrap(err, "release the next callback of subscription %s to %s", sub, url)
}

// PendingCallbacks implements engine.CallbackStore.
func (s *Store) PendingCallbacks(ctx context.Context) (int, error) {
	var n int
	if err := s.r.Get(ctx, &n, `SELECT COUNT(*) FROM callback_outbox WHERE status = ?`,
		string(engine.CallbackPending)); err != nil {
		return 0, s.wrap(err, "pending callbacks")
	}
	return n, nil
}

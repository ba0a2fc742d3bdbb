package sqlite

// TRANSITION: insertIdempotency stays here until transactions.go moves to
// sqlstore, which has its own.

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// insertIdempotency stores r in tx. An expired record of the same (user,
// key) is replaced; a live one is engine.ErrConflict.
func insertIdempotency(ctx context.Context, tx *sqlx.Tx, r *engine.IdempotencyRecord) error {
	if r == nil {
		return nil
	}
	if err := sqlrow.CheckIdempotency(r); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	cutoff := millis(r.Created.Add(-engine.IdempotencyTTL))
	if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE user_id = ? AND key = ? AND created <= ?`,
		r.UserID, r.Key, cutoff); err != nil {
		return wrap(err, "idempotency key of %s: drop expired", r.UserID)
	}
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (`+sqlrow.IdempotencyColumns+`)
		VALUES (?, ?, ?, ?, ?, ?)`, r.UserID, r.Key, r.RequestHash, r.Status, body, millis(r.Created)); err != nil {
		return wrap(err, "idempotency key of %s", r.UserID)
	}
	return nil
}

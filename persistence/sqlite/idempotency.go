package sqlite

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// idemRow is a row of idempotency_keys.
type idemRow struct {
	UserID      string `db:"user_id"`
	Key         string `db:"key"`
	RequestHash string `db:"request_hash"`
	Status      int    `db:"status"`
	Body        []byte `db:"body"`
	Created     int64  `db:"created"`
}

// insertIdempotency stores r in tx. An expired record of the same (user,
// key) is replaced; a live one is engine.ErrConflict.
func insertIdempotency(ctx context.Context, tx *sqlx.Tx, r *engine.IdempotencyRecord) error {
	if r == nil {
		return nil
	}
	if r.UserID == "" || r.Key == "" || r.RequestHash == "" {
		return fmt.Errorf("sqlite: idempotency record: user, key and request hash are required")
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, body, created)
		VALUES (?, ?, ?, ?, ?, ?)`, r.UserID, r.Key, r.RequestHash, r.Status, body, millis(r.Created)); err != nil {
		return wrap(err, "idempotency key of %s", r.UserID)
	}
	return nil
}

// IdempotencyRecord returns the record of (userID, key), expired or not,
// or engine.ErrNotFound.
func (s *Store) IdempotencyRecord(ctx context.Context, userID, key string) (*engine.IdempotencyRecord, error) {
	var r idemRow
	if err := s.r.GetContext(ctx, &r, `SELECT user_id, key, request_hash, status, body, created
		FROM idempotency_keys WHERE user_id = ? AND key = ?`, userID, key); err != nil {
		return nil, wrap(err, "idempotency key of %s", userID)
	}
	return &engine.IdempotencyRecord{
		UserID: r.UserID, Key: r.Key, RequestHash: r.RequestHash, Status: r.Status, Body: r.Body,
		Created: fromMillis(r.Created),
	}, nil
}

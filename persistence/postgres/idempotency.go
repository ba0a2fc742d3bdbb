package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
)

// idemRow is a row of idempotency_keys.
type idemRow struct {
	UserID      string    `db:"user_id"`
	Key         string    `db:"key"`
	RequestHash string    `db:"request_hash"`
	Status      int       `db:"status"`
	Body        []byte    `db:"body"`
	Created     time.Time `db:"created"`
}

// insertIdempotency stores the records rs (nil ones skipped) in tx, with
// two statements whatever their number: an expired record of the same
// (user, key) is deleted first, then all are inserted at once; a live one,
// or two records of the same (user, key) among rs, is engine.ErrConflict
// (the unique violation of the insert).
func insertIdempotency(ctx context.Context, tx *sqlx.Tx, rs ...*engine.IdempotencyRecord) error {
	var (
		users, keys, hashes pq.StringArray
		statuses            pq.Int64Array
		bodies              pq.ByteaArray
		created, cutoffs    pq.StringArray
	)
	for _, r := range rs {
		if r == nil {
			continue
		}
		if r.UserID == "" || r.Key == "" || r.RequestHash == "" {
			return fmt.Errorf("postgres: idempotency record: user, key and request hash are required")
		}
		body := r.Body
		if body == nil {
			body = []byte{}
		}
		users = append(users, r.UserID)
		keys = append(keys, r.Key)
		hashes = append(hashes, r.RequestHash)
		statuses = append(statuses, int64(r.Status))
		bodies = append(bodies, body)
		created = append(created, tsText(r.Created))
		cutoffs = append(cutoffs, tsText(r.Created.Add(-engine.IdempotencyTTL)))
	}
	if len(users) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys k
		USING unnest($1::text[], $2::text[], $3::timestamptz[]) AS x (user_id, key, cutoff)
		WHERE k.user_id = x.user_id AND k.key = x.key AND k.created <= x.cutoff`,
		users, keys, cutoffs); err != nil {
		return wrap(err, "idempotency key of %s: drop expired", users[0])
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (user_id, key, request_hash, status, body, created)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bytea[], $6::timestamptz[])`,
		users, keys, hashes, statuses, bodies, created); err != nil {
		return wrap(err, "idempotency key of %s", users[0])
	}
	return nil
}

// IdempotencyRecord returns the record of (userID, key), expired or not,
// or engine.ErrNotFound.
func (s *Store) IdempotencyRecord(ctx context.Context, userID, key string) (*engine.IdempotencyRecord, error) {
	var r idemRow
	if err := s.db.GetContext(ctx, &r, `SELECT user_id, key, request_hash, status, body, created
		FROM idempotency_keys WHERE user_id = $1 AND key = $2`, userID, key); err != nil {
		return nil, wrap(err, "idempotency key of %s", userID)
	}
	return &engine.IdempotencyRecord{
		UserID: r.UserID, Key: r.Key, RequestHash: r.RequestHash, Status: r.Status, Body: r.Body,
		Created: fromTS(r.Created),
	}, nil
}

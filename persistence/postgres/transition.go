package postgres

// TRANSITION: insertIdempotency stays here until transactions.go moves to
// sqlstore, which has its own.

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

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
		if err := sqlrow.CheckIdempotency(r); err != nil {
			return fmt.Errorf("postgres: %w", err)
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (`+sqlrow.IdempotencyColumns+`)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::integer[], $5::bytea[], $6::timestamptz[])`,
		users, keys, hashes, statuses, bodies, created); err != nil {
		return wrap(err, "idempotency key of %s", users[0])
	}
	return nil
}

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// The bulk statements of the dialect: rows sent as arrays in one statement
// (unnest), one round trip whatever their number.

// tsText encodes t as ISO 8601 text in UTC at millisecond precision (as ts
// does), for the elements of a timestamptz[] parameter, which lib/pq has
// no array type for.
func tsText(t time.Time) string { return ts(t).Format("2006-01-02T15:04:05.000Z07:00") }

var _ sqlstore.IdempotencyWriter = dialect{}

// InsertIdempotency implements sqlstore.IdempotencyWriter in one
// statement: a record whose (user, key) holds an expired record replaces
// it (ON CONFLICT … DO UPDATE where the stored one is expired), one whose
// (user, key) holds a live record is not written, and then the call is
// engine.ErrConflict, which rolls the caller's transaction back, as the
// unique violation of a plain insert did (the store passes records of
// distinct keys only: PostgreSQL refuses to update one row twice in a
// statement). It was a delete of the expired
// records and an insert: two of the five statements of every group commit
// of requests with an Idempotency-Key (make bench-cluster: 0.16 a
// transfer on 3 nodes, each node's commits holding a third of the
// accepts).
func (dialect) InsertIdempotency(ctx context.Context, tx sqlstore.Conn, rs []*engine.IdempotencyRecord) error {
	var (
		users, keys, hashes pq.StringArray
		statuses            pq.Int64Array
		bodies              pq.ByteaArray
		created             pq.StringArray
	)
	for _, r := range rs {
		users = append(users, r.UserID)
		keys = append(keys, r.Key)
		hashes = append(hashes, r.RequestHash)
		statuses = append(statuses, int64(r.Status))
		bodies = append(bodies, r.Body)
		created = append(created, tsText(r.Created))
	}
	var written int
	if err := tx.Get(ctx, &written, `WITH w AS (
		INSERT INTO idempotency_keys (`+sqlrow.IdempotencyColumns+`)
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::integer[], ?::bytea[], ?::timestamptz[])
		ON CONFLICT (user_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status = EXCLUDED.status,
			body = EXCLUDED.body, created = EXCLUDED.created
		WHERE idempotency_keys.created <= EXCLUDED.created - ? * interval '1 millisecond'
		RETURNING 1)
		SELECT count(*) FROM w`,
		users, keys, hashes, statuses, bodies, created, engine.IdempotencyTTL.Milliseconds()); err != nil {
		return err
	}
	if written < len(rs) {
		return fmt.Errorf("%d of %d idempotency keys are held by live records: %w", len(rs)-written, len(rs), engine.ErrConflict)
	}
	return nil
}

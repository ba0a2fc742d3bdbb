package postgres

import (
	"context"
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

// InsertIdempotency implements sqlstore.IdempotencyWriter.
func (dialect) InsertIdempotency(ctx context.Context, tx sqlstore.Conn, rs []*engine.IdempotencyRecord) error {
	var (
		users, keys, hashes pq.StringArray
		statuses            pq.Int64Array
		bodies              pq.ByteaArray
		created, cutoffs    pq.StringArray
	)
	for _, r := range rs {
		users = append(users, r.UserID)
		keys = append(keys, r.Key)
		hashes = append(hashes, r.RequestHash)
		statuses = append(statuses, int64(r.Status))
		bodies = append(bodies, r.Body)
		created = append(created, tsText(r.Created))
		cutoffs = append(cutoffs, tsText(r.Created.Add(-engine.IdempotencyTTL)))
	}
	if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys k
		USING unnest(?::text[], ?::text[], ?::timestamptz[]) AS x (user_id, key, cutoff)
		WHERE k.user_id = x.user_id AND k.key = x.key AND k.created <= x.cutoff`,
		users, keys, cutoffs); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (`+sqlrow.IdempotencyColumns+`)
		SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::integer[], ?::bytea[], ?::timestamptz[])`,
		users, keys, hashes, statuses, bodies, created)
	return err
}

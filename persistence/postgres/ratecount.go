package postgres

import (
	"context"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlstore"
)

var _ sqlstore.RequestCounter = dialect{}

// CountRequest implements sqlstore.RequestCounter in one statement after
// the transaction's setup: it upserts the current bucket of both windows
// and sums each window's other buckets, as the statement's snapshot sees
// them. The setup takes a transaction-scoped advisory lock on the key
// before that snapshot, which serialises the requests of one key, so a
// concurrent request in another bucket cannot go unseen; and it turns off
// synchronous commit for the transaction: a count lost in a crash is
// harmless, no flush to wait for.
func (dialect) CountRequest(ctx context.Context, tx sqlstore.Conn, key string, w sqlstore.RateWindows) (second, hour engine.RateWindowCount, err error) {
	if _, err := tx.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true),
		pg_advisory_xact_lock(hashtextextended('rate:' || ?, 0))`, key); err != nil {
		return second, hour, err
	}
	var rows []struct {
		Span   string    `db:"span"`
		Count  int       `db:"count"`
		Oldest time.Time `db:"oldest"`
	}
	if err := tx.Select(ctx, &rows, `WITH up AS (
			INSERT INTO rate_counters (user_id, span, start, count)
			VALUES (?, ?, ?, 1), (?, ?, ?, 1)
			ON CONFLICT (user_id, span, start) DO UPDATE SET count = rate_counters.count + 1
			RETURNING span, start, count)
		SELECT up.span, up.count + COALESCE(SUM(r.count), 0) AS count, LEAST(up.start, MIN(r.start)) AS oldest
		FROM up LEFT JOIN rate_counters r ON r.user_id = ? AND r.span = up.span AND r.start <> up.start
			AND r.start >= CASE WHEN up.span = ? THEN ?::timestamptz ELSE ?::timestamptz END
		GROUP BY up.span, up.start, up.count`,
		key, sqlstore.SpanSecond, ts(w.SecondStart), key, sqlstore.SpanHour, ts(w.HourStart),
		key, sqlstore.SpanSecond, ts(w.SecondFrom), ts(w.HourFrom)); err != nil {
		return second, hour, err
	}
	for _, r := range rows {
		c := engine.RateWindowCount{Count: r.Count, Oldest: r.Oldest.UTC()}
		if r.Span == sqlstore.SpanSecond {
			second = c
		} else {
			hour = c
		}
	}
	return second, hour, nil
}

package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The recorded broadcast versions and the shared rate counters of cluster
// mode (migrations/0008_cluster.sql, docs/cluster.md); the leases are in
// lease.go. Cluster mode runs on PostgreSQL; SQLite implements the same
// semantics so that one engine serves both, with its one writer at a time
// in place of row and advisory locks.

// attemptRow is a row of tx_attempts as Attempts reads it.
type attemptRow struct {
	TxID      string  `db:"tx_id"`
	AccountID string  `db:"account_id"`
	Network   string  `db:"network"`
	Nonce     int64   `db:"nonce"`
	Hash      string  `db:"hash"`
	Node      string  `db:"node"`
	Epoch     int64   `db:"epoch"`
	Created   timeCol `db:"created"`
}

// Attempts implements engine.AttemptStore. Versions recorded before
// migration 0008 whose transaction holds no nonce are left out.
func (s *Store) Attempts(ctx context.Context, accountID, network string) ([]engine.Attempt, error) {
	var rows []attemptRow
	if err := s.r.Select(ctx, &rows, `SELECT a.tx_id, a.account_id, a.network, a.nonce, a.hash, a.node, a.epoch, a.created
		FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
		WHERE t.account_id = ? AND t.network = ? AND a.network = ? AND a.nonce IS NOT NULL
		ORDER BY a.nonce, a.created NULLS FIRST, a.hash`, accountID, network, network); err != nil {
		return nil, s.wrap(err, "attempts of %s on %s", accountID, network)
	}
	out := make([]engine.Attempt, len(rows))
	for i, r := range rows {
		nonce, err := sqlrow.Uint64Of("nonce", r.Nonce)
		if err != nil {
			return nil, s.errorf("attempt %s of %s: %w", r.Hash, r.TxID, err)
		}
		hash, err := sqlrow.FromNullHash("hash", sql.NullString{String: r.Hash, Valid: true})
		if err != nil {
			return nil, s.errorf("attempt of %s: %w", r.TxID, err)
		}
		out[i] = engine.Attempt{TxID: r.TxID, AccountID: r.AccountID, Network: r.Network, Nonce: nonce, Hash: *hash,
			Node: r.Node, Epoch: r.Epoch}
		if t, ok := r.Created.At(); ok {
			out[i].Created = t
		}
	}
	return out, nil
}

// The spans of rate_counters.
const (
	SpanSecond = "second"
	SpanHour   = "hour"
)

// RateWindows are the buckets of a counted request: the current bucket of
// each window (SecondStart, HourStart) and the start of the oldest bucket
// each window counts (SecondFrom, HourFrom).
type RateWindows struct {
	SecondStart, SecondFrom, HourStart, HourFrom time.Time
}

// RequestCounter is the optional statement of a Dialect that counts a
// request of key in the write transaction tx: it serialises the requests
// of the key until tx ends, upserts the current bucket of both windows and
// returns the count of each window (the request included) with its oldest
// bucket, as one snapshot sees them. Without it, the store runs an upsert
// and a sum, which SQLite's single writer serialises.
type RequestCounter interface {
	CountRequest(ctx context.Context, tx Conn, key string, w RateWindows) (second, hour engine.RateWindowCount, err error)
}

// errRefused rolls back a counted request that a window refuses.
var errRefused = errors.New("refused")

// CountRequest implements engine.RateCounterStore: the request counts in
// the current bucket of both windows (RequestCounter, or countRequest) in
// one transaction, which rolls back when a window went over its limit, so
// that a refused request does not count.
func (s *Store) CountRequest(ctx context.Context, key string, now time.Time, perSecond, perHour int) (engine.RateWindowCount, engine.RateWindowCount, bool, error) {
	var second, hour engine.RateWindowCount
	secStart, hourStart := now.Truncate(engine.RateSecondBucket), now.Truncate(engine.RateHourBucket)
	w := RateWindows{SecondStart: secStart, SecondFrom: secStart.Add(-time.Second),
		HourStart: hourStart, HourFrom: hourStart.Add(-time.Hour)}
	err := s.inTx(ctx, func(tx Conn) error {
		var err error
		if c, ok := s.d.(RequestCounter); ok {
			second, hour, err = c.CountRequest(ctx, tx, key, w)
		} else {
			second, hour, err = s.countRequest(ctx, tx, key, w)
		}
		if err != nil {
			return s.wrap(err, "count a request of %s", key)
		}
		if second.Count > perSecond || hour.Count > perHour {
			second, hour = second.Uncount(), hour.Uncount()
			return errRefused
		}
		return nil
	})
	if errors.Is(err, errRefused) {
		return second, hour, false, nil
	}
	if err != nil {
		return engine.RateWindowCount{}, engine.RateWindowCount{}, false, err
	}
	return second, hour, true, nil
}

// countRequest is the portable RequestCounter: one upsert counts the
// request in the current bucket of both windows, one query sums each
// window's buckets.
func (s *Store) countRequest(ctx context.Context, tx Conn, key string, w RateWindows) (second, hour engine.RateWindowCount, err error) {
	if _, err := tx.Exec(ctx, `INSERT INTO rate_counters (user_id, span, start, count)
		VALUES (?, ?, ?, 1), (?, ?, ?, 1)
		ON CONFLICT (user_id, span, start) DO UPDATE SET count = rate_counters.count + 1`,
		key, SpanSecond, s.ts(w.SecondStart), key, SpanHour, s.ts(w.HourStart)); err != nil {
		return second, hour, err
	}
	var rows []struct {
		Span   string  `db:"span"`
		Count  int     `db:"count"`
		Oldest timeCol `db:"oldest"`
	}
	if err := tx.Select(ctx, &rows, `SELECT span, SUM(count) AS count, MIN(start) AS oldest
		FROM rate_counters
		WHERE user_id = ? AND ((span = ? AND start >= ?) OR (span = ? AND start >= ?))
		GROUP BY span`,
		key, SpanSecond, s.ts(w.SecondFrom), SpanHour, s.ts(w.HourFrom)); err != nil {
		return second, hour, err
	}
	for _, r := range rows {
		oldest, _ := r.Oldest.At()
		if r.Span == SpanSecond {
			second = engine.RateWindowCount{Count: r.Count, Oldest: oldest}
		} else {
			hour = engine.RateWindowCount{Count: r.Count, Oldest: oldest}
		}
	}
	return second, hour, nil
}

// PruneRateCounters implements engine.RateCounterStore: second buckets
// older than a minute, hour buckets older than two hours.
func (s *Store) PruneRateCounters(ctx context.Context, now time.Time) error {
	if _, err := s.w.Exec(ctx, `DELETE FROM rate_counters
		WHERE start < ? AND (span = ? OR start < ?)`,
		s.ts(now.Add(-time.Minute)), SpanSecond, s.ts(now.Add(-2*time.Hour))); err != nil {
		return s.wrap(err, "prune rate counters")
	}
	return nil
}

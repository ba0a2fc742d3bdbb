package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// Cluster mode (migrations/0008_cluster.sql, docs/cluster.md): the fencing
// lease of each account, the watcher lease of each network, the recorded
// broadcast versions and the shared rate counters.

// Test hook points: sqlstore's (see export_test.go).
const (
	hookFenced        = sqlstore.HookFenced
	hookAccountLease  = sqlstore.HookAccountLease
	hookNetworkFenced = sqlstore.HookNetworkFenced
)

// at runs the test hook at point, if one is set.
func (s *Store) at(point string) {
	if s.hook != nil {
		s.hook(point)
	}
}

// lockFence locks the lease row of f's account in dbtx (FOR SHARE: fenced
// writes of one activation do not wait for each other, an acquisition waits
// for them) and returns engine.ErrFenced unless f is current. It does
// nothing for the zero Fence.
func (s *Store) lockFence(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence) error {
	if f.IsZero() {
		return nil
	}
	var epoch int64
	err := dbtx.GetContext(ctx, &epoch, `SELECT epoch FROM account_leases WHERE account_id = $1 FOR SHARE`, f.AccountID)
	if err := fenceError(f, epoch, err); err != nil {
		return err
	}
	s.at(hookFenced)
	return nil
}

// fenceError compares f with the current epoch read (with err).
func fenceError(f engine.Fence, epoch int64, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("postgres: account %s has no lease (fence epoch %d): %w", f.AccountID, f.Epoch, engine.ErrFenced)
	case err != nil:
		return wrap(err, "read the lease of account %s", f.AccountID)
	case epoch != f.Epoch:
		return fmt.Errorf("postgres: the lease of account %s is at epoch %d, the fence at %d: %w", f.AccountID, epoch, f.Epoch, engine.ErrFenced)
	}
	return nil
}

// lockNetworkFence locks the lease row of f's network in dbtx (FOR SHARE:
// the writes of one tenure do not wait for each other; AcquireNetworkLease
// waits for them, so a new tenure begins after they committed) and returns
// engine.ErrLeaseLost unless f.Node holds the lease at f.Epoch and it has
// not expired by the database's clock (clock_timestamp(): the time of the
// check, not of the transaction's start). It does nothing for the zero
// fence.
func (s *Store) lockNetworkFence(ctx context.Context, dbtx *sqlx.Tx, f engine.NetworkFence) error {
	if f.IsZero() {
		return nil
	}
	var lease struct {
		Node  string `db:"node"`
		Epoch int64  `db:"epoch"`
		Live  bool   `db:"live"`
	}
	err := dbtx.GetContext(ctx, &lease, `SELECT node, epoch, expires > clock_timestamp() AS live
		FROM network_leases WHERE network = $1 FOR SHARE`, f.Network)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("postgres: network %s has no lease (%s at epoch %d): %w", f.Network, f.Node, f.Epoch, engine.ErrLeaseLost)
	case err != nil:
		return wrap(err, "read the lease of network %s", f.Network)
	case lease.Node != f.Node || lease.Epoch != f.Epoch:
		return fmt.Errorf("postgres: the lease of network %s is held by %s at epoch %d, the fence is %s at %d: %w",
			f.Network, lease.Node, lease.Epoch, f.Node, f.Epoch, engine.ErrLeaseLost)
	case !lease.Live:
		return fmt.Errorf("postgres: the lease of network %s (%s at epoch %d) has expired: %w", f.Network, f.Node, f.Epoch, engine.ErrLeaseLost)
	}
	s.at(hookNetworkFenced)
	return nil
}

// Attempts implements engine.AttemptStore. Versions recorded before
// migration 0008 whose transaction holds no nonce are left out.
func (s *Store) Attempts(ctx context.Context, accountID, network string) ([]engine.Attempt, error) {
	var rows []struct {
		TxID      string       `db:"tx_id"`
		AccountID string       `db:"account_id"`
		Network   string       `db:"network"`
		Nonce     int64        `db:"nonce"`
		Hash      string       `db:"hash"`
		Node      string       `db:"node"`
		Epoch     int64        `db:"epoch"`
		Created   sql.NullTime `db:"created"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT a.tx_id, a.account_id, a.network, a.nonce, a.hash, a.node, a.epoch, a.created
		FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
		WHERE t.account_id = $1 AND t.network = $2 AND a.network = $2 AND a.nonce IS NOT NULL
		ORDER BY a.nonce, a.created NULLS FIRST, a.hash`, accountID, network); err != nil {
		return nil, wrap(err, "attempts of %s on %s", accountID, network)
	}
	out := make([]engine.Attempt, len(rows))
	for i, r := range rows {
		nonce, err := sqlrow.Uint64Of("nonce", r.Nonce)
		if err != nil {
			return nil, fmt.Errorf("postgres: attempt %s of %s: %w", r.Hash, r.TxID, err)
		}
		hash, err := sqlrow.FromNullHash("hash", sql.NullString{String: r.Hash, Valid: true})
		if err != nil {
			return nil, fmt.Errorf("postgres: attempt of %s: %w", r.TxID, err)
		}
		out[i] = engine.Attempt{TxID: r.TxID, AccountID: r.AccountID, Network: r.Network, Nonce: nonce, Hash: *hash,
			Node: r.Node, Epoch: r.Epoch}
		if r.Created.Valid {
			out[i].Created = fromTS(r.Created.Time)
		}
	}
	return out, nil
}

// Rate counter spans.
const (
	spanSecond = "second"
	spanHour   = "hour"
)

// errRefused rolls back a counted request that a window refuses.
var errRefused = errors.New("refused")

// CountRequest implements engine.RateCounterStore in one statement after
// the transaction's setup: it upserts the current bucket of both windows
// and sums each window's other buckets, as the statement's snapshot sees
// them. A transaction-scoped advisory lock on the key, taken before that
// snapshot, serialises the requests of one key, so a concurrent request in
// another bucket cannot go unseen. When a window went over its limit the
// transaction rolls back, so a refused request does not count.
func (s *Store) CountRequest(ctx context.Context, key string, now time.Time, perSecond, perHour int) (engine.RateWindowCount, engine.RateWindowCount, bool, error) {
	var second, hour engine.RateWindowCount
	secStart, hourStart := now.Truncate(engine.RateSecondBucket), now.Truncate(engine.RateHourBucket)
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		// A count lost in a crash is harmless: no flush to wait for.
		if _, err := tx.ExecContext(ctx, `SELECT set_config('synchronous_commit', 'off', true),
			pg_advisory_xact_lock(hashtextextended('rate:' || $1, 0))`, key); err != nil {
			return wrap(err, "count a request of %s", key)
		}
		var rows []struct {
			Span   string    `db:"span"`
			Count  int       `db:"count"`
			Oldest time.Time `db:"oldest"`
		}
		if err := tx.SelectContext(ctx, &rows, `WITH up AS (
				INSERT INTO rate_counters (user_id, span, start, count)
				VALUES ($1, $2, $3, 1), ($1, $5, $6, 1)
				ON CONFLICT (user_id, span, start) DO UPDATE SET count = rate_counters.count + 1
				RETURNING span, start, count)
			SELECT up.span, up.count + COALESCE(SUM(r.count), 0) AS count, LEAST(up.start, MIN(r.start)) AS oldest
			FROM up LEFT JOIN rate_counters r ON r.user_id = $1 AND r.span = up.span AND r.start <> up.start
				AND r.start >= CASE WHEN up.span = $2 THEN $4::timestamptz ELSE $7::timestamptz END
			GROUP BY up.span, up.start, up.count`,
			key, spanSecond, ts(secStart), ts(secStart.Add(-time.Second)),
			spanHour, ts(hourStart), ts(hourStart.Add(-time.Hour))); err != nil {
			return wrap(err, "count a request of %s", key)
		}
		for _, r := range rows {
			w := engine.RateWindowCount{Count: r.Count, Oldest: fromTS(r.Oldest)}
			if r.Span == spanSecond {
				second = w
			} else {
				hour = w
			}
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

// PruneRateCounters implements engine.RateCounterStore.
func (s *Store) PruneRateCounters(ctx context.Context, now time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM rate_counters
		WHERE start < $1 AND (span = $2 OR start < $3)`,
		ts(now.Add(-time.Minute)), spanSecond, ts(now.Add(-2*time.Hour))); err != nil {
		return wrap(err, "prune rate counters")
	}
	return nil
}

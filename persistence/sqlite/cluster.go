package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The leases, recorded broadcast versions and rate counters of cluster mode
// (migrations/0008_cluster.sql, docs/cluster.md). Cluster mode runs on
// PostgreSQL; the SQLite store implements the same semantics so that one
// engine serves both, with its one writer at a time in place of row locks
// and this process's clock in place of the database's.

// checkFence returns engine.ErrFenced unless f is current, read inside the
// write transaction dbtx (no other writer runs meanwhile). It does nothing
// for the zero Fence.
func checkFence(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence) error {
	if f.IsZero() {
		return nil
	}
	var epoch int64
	err := dbtx.GetContext(ctx, &epoch, `SELECT epoch FROM account_leases WHERE account_id = ?`, f.AccountID)
	return fenceError(f, epoch, err)
}

// fenceError compares f with the current epoch read (with err).
func fenceError(f engine.Fence, epoch int64, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: account %s has no lease (fence epoch %d): %w", f.AccountID, f.Epoch, engine.ErrFenced)
	case err != nil:
		return wrap(err, "read the lease of account %s", f.AccountID)
	case epoch != f.Epoch:
		return fmt.Errorf("sqlite: the lease of account %s is at epoch %d, the fence at %d: %w", f.AccountID, epoch, f.Epoch, engine.ErrFenced)
	}
	return nil
}

// checkNetworkFence returns engine.ErrLeaseLost unless f.Node holds the
// lease of f's network at f.Epoch and it has not expired by this process's
// clock, read inside the write transaction dbtx (no other writer, so no
// acquisition, runs meanwhile). It does nothing for the zero fence.
func checkNetworkFence(ctx context.Context, dbtx *sqlx.Tx, f engine.NetworkFence) error {
	if f.IsZero() {
		return nil
	}
	var lease struct {
		Node    string `db:"node"`
		Epoch   int64  `db:"epoch"`
		Expires int64  `db:"expires"`
	}
	err := dbtx.GetContext(ctx, &lease, `SELECT node, epoch, expires FROM network_leases WHERE network = ?`, f.Network)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: network %s has no lease (%s at epoch %d): %w", f.Network, f.Node, f.Epoch, engine.ErrLeaseLost)
	case err != nil:
		return wrap(err, "read the lease of network %s", f.Network)
	case lease.Node != f.Node || lease.Epoch != f.Epoch:
		return fmt.Errorf("sqlite: the lease of network %s is held by %s at epoch %d, the fence is %s at %d: %w",
			f.Network, lease.Node, lease.Epoch, f.Node, f.Epoch, engine.ErrLeaseLost)
	case lease.Expires <= millis(time.Now()):
		return fmt.Errorf("sqlite: the lease of network %s (%s at epoch %d) has expired: %w", f.Network, f.Node, f.Epoch, engine.ErrLeaseLost)
	}
	return nil
}

// Attempts implements engine.AttemptStore. Versions recorded before
// migration 0008 whose transaction holds no nonce are left out.
func (s *Store) Attempts(ctx context.Context, accountID, network string) ([]engine.Attempt, error) {
	var rows []struct {
		TxID      string        `db:"tx_id"`
		AccountID string        `db:"account_id"`
		Network   string        `db:"network"`
		Nonce     int64         `db:"nonce"`
		Hash      string        `db:"hash"`
		Node      string        `db:"node"`
		Epoch     int64         `db:"epoch"`
		Created   sql.NullInt64 `db:"created"`
	}
	if err := s.r.SelectContext(ctx, &rows, `SELECT a.tx_id, a.account_id, a.network, a.nonce, a.hash, a.node, a.epoch, a.created
		FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
		WHERE t.account_id = ? AND t.network = ? AND a.network = ? AND a.nonce IS NOT NULL
		ORDER BY a.nonce, a.created NULLS FIRST, a.hash`, accountID, network, network); err != nil {
		return nil, wrap(err, "attempts of %s on %s", accountID, network)
	}
	out := make([]engine.Attempt, len(rows))
	for i, r := range rows {
		nonce, err := sqlrow.Uint64Of("nonce", r.Nonce)
		if err != nil {
			return nil, fmt.Errorf("sqlite: attempt %s of %s: %w", r.Hash, r.TxID, err)
		}
		hash, err := sqlrow.FromNullHash("hash", sql.NullString{String: r.Hash, Valid: true})
		if err != nil {
			return nil, fmt.Errorf("sqlite: attempt of %s: %w", r.TxID, err)
		}
		out[i] = engine.Attempt{TxID: r.TxID, AccountID: r.AccountID, Network: r.Network, Nonce: nonce, Hash: *hash,
			Node: r.Node, Epoch: r.Epoch}
		if r.Created.Valid {
			out[i].Created = fromMillis(r.Created.Int64)
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

// CountRequest implements engine.RateCounterStore: one upsert counts the
// request in the current bucket of both windows, one query sums each
// window's buckets, in one transaction on the single writer connection (so
// the requests of a key are serialised); when a window went over its limit
// the transaction rolls back, so a refused request does not count.
func (s *Store) CountRequest(ctx context.Context, key string, now time.Time, perSecond, perHour int) (engine.RateWindowCount, engine.RateWindowCount, bool, error) {
	var second, hour engine.RateWindowCount
	secStart, hourStart := now.Truncate(engine.RateSecondBucket), now.Truncate(engine.RateHourBucket)
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO rate_counters (user_id, span, start, count)
			VALUES (?, ?, ?, 1), (?, ?, ?, 1)
			ON CONFLICT (user_id, span, start) DO UPDATE SET count = rate_counters.count + 1`,
			key, spanSecond, millis(secStart), key, spanHour, millis(hourStart)); err != nil {
			return wrap(err, "count a request of %s", key)
		}
		var rows []struct {
			Span   string `db:"span"`
			Count  int    `db:"count"`
			Oldest int64  `db:"oldest"`
		}
		if err := tx.SelectContext(ctx, &rows, `SELECT span, SUM(count) AS count, MIN(start) AS oldest
			FROM rate_counters
			WHERE user_id = ? AND ((span = ? AND start >= ?) OR (span = ? AND start >= ?))
			GROUP BY span`,
			key, spanSecond, millis(secStart.Add(-time.Second)), spanHour, millis(hourStart.Add(-time.Hour))); err != nil {
			return wrap(err, "count a request of %s", key)
		}
		for _, r := range rows {
			w := engine.RateWindowCount{Count: r.Count, Oldest: fromMillis(r.Oldest)}
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
	if _, err := s.w.ExecContext(ctx, `DELETE FROM rate_counters
		WHERE start < ? AND (span = ? OR start < ?)`,
		millis(now.Add(-time.Minute)), spanSecond, millis(now.Add(-2*time.Hour))); err != nil {
		return wrap(err, "prune rate counters")
	}
	return nil
}

package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
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

// insertAttempt records the version of tx just stored in dbtx (hash, and
// account and nonce as the row holds them) with f's node and epoch, signed
// at at.
func insertAttempt(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence, tx *engine.Transaction, at time.Time) error {
	if _, err := dbtx.ExecContext(ctx, `INSERT INTO tx_attempts (network, hash, tx_id, account_id, nonce, node, epoch, created)
		SELECT network, $1, id, account_id, nonce, $2, $3, $4 FROM transactions WHERE id = $5
		ON CONFLICT DO NOTHING`, tx.Hash.Hex(), f.Node, f.Epoch, ts(at), tx.ID); err != nil {
		return wrap(err, "record hash of %s", tx.ID)
	}
	return nil
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
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

// insertAttempt records the version of tx just stored in dbtx (hash, and
// account and nonce as the row holds them) with f's node and epoch, signed
// at at.
func insertAttempt(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence, tx *engine.Transaction, at time.Time) error {
	if _, err := dbtx.ExecContext(ctx, `INSERT INTO tx_attempts (network, hash, tx_id, account_id, nonce, node, epoch, created)
		SELECT network, ?, id, account_id, nonce, ?, ?, ? FROM transactions WHERE id = ?
		ON CONFLICT DO NOTHING`, tx.Hash.Hex(), f.Node, f.Epoch, millis(at), tx.ID); err != nil {
		return wrap(err, "record hash of %s", tx.ID)
	}
	return nil
}

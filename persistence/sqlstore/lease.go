package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/txengine/txengine/engine"
)

// The leases of cluster mode (docs/cluster.md): the fencing lease of each
// account and the watcher lease of each network. On PostgreSQL a fenced
// write holds its lease row FOR SHARE until it commits, and an acquisition
// (which updates the row) waits for it; on SQLite one writer at a time
// gives the same order. Expiry is measured with Dialect.Now: the
// database's clock on PostgreSQL, shared by every node.

// Test hook points (SetHook).
const (
	// HookFenced: a fenced write holds the lease row (FOR SHARE) and
	// found its epoch current; its writes follow.
	HookFenced = "fenced"
	// HookAccountLease: AcquireAccountLease incremented the epoch and has
	// not committed yet.
	HookAccountLease = "account lease"
	// HookNetworkFenced: a write of the watcher holds the network lease
	// row (FOR SHARE) and found its tenure current; its writes follow.
	HookNetworkFenced = "network fenced"
)

// AcquireAccountLease implements engine.LeaseStore: one upsert increments
// the epoch. It waits for the fenced writes in progress under the previous
// epoch (they hold the row), so the activation it starts reads what they
// stored.
func (s *Store) AcquireAccountLease(ctx context.Context, accountID, node string) (engine.Fence, error) {
	var epoch int64
	err := s.inTx(ctx, func(tx Conn) error {
		if err := tx.Get(ctx, &epoch, `INSERT INTO account_leases (account_id, epoch, node, acquired)
			VALUES (?, 1, ?, `+s.d.Now()+`)
			ON CONFLICT (account_id) DO UPDATE
			SET epoch = account_leases.epoch + 1, node = excluded.node, acquired = excluded.acquired
			RETURNING epoch`, accountID, node); err != nil {
			return s.wrap(err, "acquire the lease of account %s for %s", accountID, node)
		}
		s.at(HookAccountLease)
		return nil
	})
	if err != nil {
		return engine.Fence{}, err
	}
	return engine.Fence{AccountID: accountID, Node: node, Epoch: epoch}, nil
}

// CheckFence implements engine.LeaseStore.
func (s *Store) CheckFence(ctx context.Context, f engine.Fence) error {
	if f.IsZero() {
		return nil
	}
	var epoch int64
	err := s.r.Get(ctx, &epoch, `SELECT epoch FROM account_leases WHERE account_id = ?`, f.AccountID)
	return s.fenceError(f, epoch, err)
}

// lockFence locks the lease row of f's account in tx (shared: fenced writes
// of one activation do not wait for each other, an acquisition waits for
// them) and returns engine.ErrFenced unless f is current. It does nothing
// for the zero Fence.
func (s *Store) lockFence(ctx context.Context, tx Conn, f engine.Fence) error {
	if f.IsZero() {
		return nil
	}
	var epoch int64
	err := tx.Get(ctx, &epoch, `SELECT epoch FROM account_leases WHERE account_id = ?`+s.d.Lock(LockShare), f.AccountID)
	if err := s.fenceError(f, epoch, err); err != nil {
		return err
	}
	s.at(HookFenced)
	return nil
}

// lockFences is lockFence of each of fences (sorted by account), with one
// statement for all of them (per chunk of Dialect.List): the lease rows are
// locked in account order, then each fence is compared in its order and
// the first that is not current is the error. A merged write of the
// submit stage locked each account's row with a statement of its own: one
// round trip per account in every merged write.
func (s *Store) lockFences(ctx context.Context, tx Conn, fences []engine.Fence) error {
	switch len(fences) {
	case 0:
		return nil
	case 1:
		return s.lockFence(ctx, tx, fences[0])
	}
	ids := make([]string, 0, len(fences))
	for _, f := range fences {
		if !f.IsZero() && (len(ids) == 0 || ids[len(ids)-1] != f.AccountID) {
			ids = append(ids, f.AccountID)
		}
	}
	epochs := make(map[string]int64, len(ids))
	err := s.list("account_id", ids, func(c Chunk) error {
		var rows []leaseEpochRow
		if err := tx.Select(ctx, &rows, `SELECT account_id, epoch FROM account_leases WHERE `+c.Cond+
			` ORDER BY account_id`+s.d.Lock(LockShare), c.Args...); err != nil {
			return s.wrap(err, "read the leases of %d accounts", len(ids))
		}
		for _, r := range rows {
			epochs[r.AccountID] = r.Epoch
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range fences {
		if f.IsZero() {
			continue
		}
		epoch, ok := epochs[f.AccountID]
		var missing error
		if !ok {
			missing = sql.ErrNoRows
		}
		if err := s.fenceError(f, epoch, missing); err != nil {
			return err
		}
		s.at(HookFenced)
	}
	return nil
}

// leaseEpochRow is an account's lease epoch.
type leaseEpochRow struct {
	AccountID string `db:"account_id"`
	Epoch     int64  `db:"epoch"`
}

// LeaseEpochs implements engine.LeaseEpochReader: the current lease epoch
// of each of accountIDs that has a lease, in one read (per chunk), so that
// the submit stage checks the fences of many pumps at once.
func (s *Store) LeaseEpochs(ctx context.Context, accountIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(accountIDs))
	err := selectIn(ctx, s, fmt.Sprintf("the leases of %d accounts", len(accountIDs)), "account_id", accountIDs,
		`SELECT account_id, epoch FROM account_leases WHERE `, ``, nil, func(r *leaseEpochRow) error {
			out[r.AccountID] = r.Epoch
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fenceError compares f with the current epoch read (with err).
func (s *Store) fenceError(f engine.Fence, epoch int64, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s.errorf("account %s has no lease (fence epoch %d): %w", f.AccountID, f.Epoch, engine.ErrFenced)
	case err != nil:
		return s.wrap(err, "read the lease of account %s", f.AccountID)
	case epoch != f.Epoch:
		return s.errorf("the lease of account %s is at epoch %d, the fence at %d: %w", f.AccountID, epoch, f.Epoch, engine.ErrFenced)
	}
	return nil
}

// AcquireNetworkLease implements engine.LeaseStore with one upsert that
// takes, renews or leaves the lease.
func (s *Store) AcquireNetworkLease(ctx context.Context, network, node string, ttl time.Duration) (bool, int64, error) {
	if ttl <= 0 {
		return false, 0, s.errorf("acquire the lease of network %s for %s: ttl %s is not positive", network, node, ttl)
	}
	var epoch int64
	now := s.d.Now()
	err := s.w.Get(ctx, &epoch, `INSERT INTO network_leases (network, node, epoch, expires)
			VALUES (?, ?, 1, `+s.d.Later()+`)
			ON CONFLICT (network) DO UPDATE SET
				epoch = CASE WHEN network_leases.node = excluded.node AND network_leases.expires > `+now+`
					THEN network_leases.epoch ELSE network_leases.epoch + 1 END,
				node = excluded.node,
				expires = excluded.expires
			WHERE network_leases.node = excluded.node OR network_leases.expires <= `+now+`
			RETURNING epoch`, network, node, ttl.Milliseconds())
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil // another node holds it: the upsert returned no row
	}
	if err != nil {
		return false, 0, s.wrap(err, "acquire the lease of network %s for %s", network, node)
	}
	return true, epoch, nil
}

// ReleaseNetworkLease implements engine.LeaseStore.
func (s *Store) ReleaseNetworkLease(ctx context.Context, network, node string) error {
	now := s.d.Now()
	if _, err := s.w.Exec(ctx, `UPDATE network_leases SET expires = `+now+`
		WHERE network = ? AND node = ? AND expires > `+now, network, node); err != nil {
		return s.wrap(err, "release the lease of network %s by %s", network, node)
	}
	return nil
}

// lockNetworkFence locks the lease row of f's network in tx (shared: the
// writes of one tenure do not wait for each other; AcquireNetworkLease
// waits for them, so a new tenure begins after they committed) and returns
// engine.ErrLeaseLost unless f.Node holds the lease at f.Epoch and it has
// not expired by Dialect.Now at the time of the check. It does nothing for
// the zero fence.
func (s *Store) lockNetworkFence(ctx context.Context, tx Conn, f engine.NetworkFence) error {
	if f.IsZero() {
		return nil
	}
	var lease struct {
		Node  string `db:"node"`
		Epoch int64  `db:"epoch"`
		Live  bool   `db:"live"`
	}
	err := tx.Get(ctx, &lease, `SELECT node, epoch, expires > `+s.d.Now()+` AS live
		FROM network_leases WHERE network = ?`+s.d.Lock(LockShare), f.Network)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s.errorf("network %s has no lease (%s at epoch %d): %w", f.Network, f.Node, f.Epoch, engine.ErrLeaseLost)
	case err != nil:
		return s.wrap(err, "read the lease of network %s", f.Network)
	case lease.Node != f.Node || lease.Epoch != f.Epoch:
		return s.errorf("the lease of network %s is held by %s at epoch %d, the fence is %s at %d: %w",
			f.Network, lease.Node, lease.Epoch, f.Node, f.Epoch, engine.ErrLeaseLost)
	case !lease.Live:
		return s.errorf("the lease of network %s (%s at epoch %d) has expired: %w", f.Network, f.Node, f.Epoch, engine.ErrLeaseLost)
	}
	s.at(HookNetworkFenced)
	return nil
}

// insertAttempt records the version of tx just stored in the transaction
// dbtx (hash, and account and nonce as the row holds them) with f's node
// and epoch, signed at at.
func (s *Store) insertAttempt(ctx context.Context, dbtx stmtExecer, f engine.Fence, tx *engine.Transaction, at time.Time) error {
	if _, err := dbtx.Exec(ctx, `INSERT INTO tx_attempts (network, hash, tx_id, account_id, nonce, node, epoch, created)
		SELECT network, ?, id, account_id, nonce, ?, ?, ? FROM transactions WHERE id = ?
		ON CONFLICT DO NOTHING`, tx.Hash.Hex(), f.Node, f.Epoch, s.ts(at), tx.ID); err != nil {
		return s.wrap(err, "record hash of %s", tx.ID)
	}
	return nil
}

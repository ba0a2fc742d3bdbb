package sqlstore

import (
	"context"
	"time"

	"github.com/txengine/txengine/engine"
)

// checkQuota refuses, with engine.CapError, a creation of users more users
// and accounts more accounts that would take the root of q over a cap of
// q (nil: no caps). It locks the root's row first (when q has a cap or a
// faucet budget), so that concurrent creations of one tree count one after
// the other, up to the commit (insertGrants relies on the lock too).
func (s *Store) checkQuota(ctx context.Context, tx Conn, q *engine.Quota, users, accounts int) error {
	if q == nil || (q.MaxUsers <= 0 && q.MaxAccounts <= 0 && q.FaucetBudget <= 0) {
		return nil
	}
	if err := s.lockOwner(ctx, tx, q.Root); err != nil {
		return err
	}
	if q.MaxUsers > 0 && users > 0 {
		var n int
		if err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM users WHERE root_id = ? OR id = ?`, q.Root, q.Root); err != nil {
			return s.wrap(err, "count the users of root %s", q.Root)
		}
		if n+users > q.MaxUsers {
			return engine.CapError("users", q.MaxUsers)
		}
	}
	if q.MaxAccounts > 0 && accounts > 0 {
		var n int
		if err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM accounts a JOIN users u ON u.id = a.owner
			WHERE u.root_id = ? OR u.id = ?`, q.Root, q.Root); err != nil {
			return s.wrap(err, "count the accounts of root %s", q.Root)
		}
		if n+accounts > q.MaxAccounts {
			return engine.CapError("accounts", q.MaxAccounts)
		}
	}
	return nil
}

// insertGrants records the granted faucet fundings of a (a.Faucet), with
// the root of its owner, refusing with engine.ErrFaucetBudget one that the
// budget of q no longer allows. checkQuota must have run in tx.
func (s *Store) insertGrants(ctx context.Context, tx Conn, a *engine.Account, q *engine.Quota) error {
	for _, g := range a.Faucet {
		if !g.Granted {
			continue
		}
		if q != nil && q.FaucetBudget > 0 {
			var n int
			if err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM faucet_grants
				WHERE root_id = ? AND network = ? AND created >= ?`, q.Root, g.Network, s.ts(q.FaucetSince)); err != nil {
				return s.wrap(err, "count the faucet grants of root %s", q.Root)
			}
			if n >= q.FaucetBudget {
				return engine.ErrFaucetBudget
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO faucet_grants (account_id, network, root_id, created)
			SELECT ?, ?, COALESCE(root_id, id), ? FROM users WHERE id = ?`, a.ID, g.Network, s.ts(a.Created), a.Owner); err != nil {
			return s.wrap(err, "faucet grant of account %s on %s", a.ID, g.Network)
		}
	}
	return nil
}

// FaucetGrantsSince returns, per network, how many faucet grants the
// accounts of root's tree had since since.
func (s *Store) FaucetGrantsSince(ctx context.Context, root string, since time.Time) (map[string]int, error) {
	var rows []struct {
		Network string `db:"network"`
		N       int    `db:"n"`
	}
	if err := s.r.Select(ctx, &rows, `SELECT network, COUNT(*) AS n FROM faucet_grants
		WHERE root_id = ? AND created >= ? GROUP BY network`, root, s.ts(since)); err != nil {
		return nil, s.wrap(err, "faucet grants of root %s", root)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Network] = r.N
	}
	return out, nil
}

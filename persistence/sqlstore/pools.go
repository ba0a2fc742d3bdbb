package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Sender pools (engine.PoolStore, migration 0017). A pool is a row of
// pools and its members rows of pool_members (removed NULL while the
// account is in the pool); DeletePool sets pools.deleted and removes the
// members, so the pool's transactions keep their pool_id.

var _ engine.PoolStore = (*Store)(nil)

// pendingStatuses is the condition on transactions.status of the pool
// queries, written as in the partial indexes of migration 0017 (a partial
// index serves only a query that names its condition).
const pendingStatuses = `status IN ('new', 'waiting', 'submitted')`

// poolRow is a row of pools.
type poolRow struct {
	ID         string         `db:"id"`
	Owner      string         `db:"owner"`
	Name       string         `db:"name"`
	Network    string         `db:"network"`
	Size       int            `db:"size"`
	TreasuryID sql.NullString `db:"treasury_id"`
	Created    timeCol        `db:"created"`
}

// poolColumns are the columns of poolRow.
const poolColumns = `id, owner, name, network, size, treasury_id, created`

// pool converts the row (without members).
func (r *poolRow) pool() *engine.Pool {
	return &engine.Pool{
		ID: r.ID, Owner: r.Owner, Name: r.Name, Network: r.Network, Size: r.Size,
		TreasuryID: r.TreasuryID.String, Created: r.Created.t,
	}
}

// memberRow is a current member of a pool, with its account's address.
type memberRow struct {
	PoolID    string `db:"pool_id"`
	AccountID string `db:"account_id"`
	Address   string `db:"address"`
	Slot      int    `db:"slot"`
}

// memberSelect reads the current members (memberRow) of the pools its
// condition selects, by pool then slot.
const memberSelect = `SELECT m.pool_id, m.account_id, a.address, m.slot
	FROM pool_members m JOIN accounts a ON a.id = m.account_id
	WHERE m.removed IS NULL AND `

// member converts the row.
func (r *memberRow) member() (engine.PoolMember, error) {
	addr, err := sqlrow.FromAddress("address", r.Address)
	if err != nil {
		return engine.PoolMember{}, fmt.Errorf("member %s of pool %s: %w", r.AccountID, r.PoolID, err)
	}
	return engine.PoolMember{AccountID: r.AccountID, Address: addr, Slot: r.Slot}, nil
}

// CreatePool implements engine.PoolStore: the pool's row, its members'
// accounts (as CreateAccount: the quota of the members, checked for all of
// them at once, and their faucet grants) and rows of pool_members in slots
// 0..len-1, and p.Idempotency, in one database transaction. p.Size must be
// len(members); members must be p.Owner's and not default.
func (s *Store) CreatePool(ctx context.Context, p *engine.Pool, members []*engine.Account) error {
	if p.Size != len(members) || len(members) == 0 {
		return s.errorf("create pool %s: size %d with %d members", p.ID, p.Size, len(members))
	}
	return s.inTx(ctx, func(tx Conn) error {
		if _, err := tx.Exec(ctx, `INSERT INTO pools (`+poolColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.Owner, p.Name, p.Network, p.Size, sqlrow.NullString(p.TreasuryID), s.ts(p.Created)); err != nil {
			return s.wrap(err, "create pool %s", p.ID)
		}
		if err := s.insertMembers(ctx, tx, p.ID, p.Owner, 0, members); err != nil {
			return err
		}
		return s.insertIdempotency(ctx, tx, p.Idempotency)
	})
}

// insertMembers inserts the accounts of members (as CreateAccount, their
// quota checked for all of them at once) and their rows of pool_members in
// slots from, from+1, … in tx.
func (s *Store) insertMembers(ctx context.Context, tx Conn, poolID, owner string, from int, members []*engine.Account) error {
	var q *engine.Quota
	for _, a := range members {
		if a.Default || a.Owner != owner {
			return s.errorf("pool %s: member %s must be a non-default account of %s", poolID, a.ID, owner)
		}
		if q == nil {
			q = a.Quota
		}
	}
	if err := s.checkQuota(ctx, tx, q, 0, len(members)); err != nil {
		return err
	}
	for i, a := range members {
		if err := s.insertAccount(ctx, tx, a); err != nil {
			return err
		}
		if err := s.insertGrants(ctx, tx, a, q); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pool_members (pool_id, account_id, slot) VALUES (?, ?, ?)`,
			poolID, a.ID, from+i); err != nil {
			return s.wrap(err, "pool %s: member %s in slot %d", poolID, a.ID, from+i)
		}
	}
	return nil
}

// PoolByID implements engine.PoolStore: the live pool with its current
// members by slot, or engine.ErrNotFound.
func (s *Store) PoolByID(ctx context.Context, id string) (*engine.Pool, error) {
	var r poolRow
	if err := s.r.Get(ctx, &r, `SELECT `+poolColumns+` FROM pools WHERE id = ? AND deleted IS NULL`, id); err != nil {
		return nil, s.wrap(err, "pool %s", id)
	}
	var ms []memberRow
	if err := s.r.Select(ctx, &ms, memberSelect+`m.pool_id = ? ORDER BY m.slot`, id); err != nil {
		return nil, s.wrap(err, "members of pool %s", id)
	}
	p := r.pool()
	for i := range ms {
		m, err := ms[i].member()
		if err != nil {
			return nil, s.errorf("%w", err)
		}
		p.Members = append(p.Members, m)
	}
	return p, nil
}

// ListPools implements engine.PoolStore: the owner's live pools, oldest
// first, with their members by slot (two statements).
func (s *Store) ListPools(ctx context.Context, owner string) ([]*engine.Pool, error) {
	var rows []poolRow
	if err := s.r.Select(ctx, &rows, `SELECT `+poolColumns+` FROM pools
		WHERE owner = ? AND deleted IS NULL ORDER BY created, `+s.seq, owner); err != nil {
		return nil, s.wrap(err, "list pools of %s", owner)
	}
	var ms []memberRow
	if err := s.r.Select(ctx, &ms, memberSelect+`m.pool_id IN (SELECT id FROM pools WHERE owner = ? AND deleted IS NULL)
		ORDER BY m.pool_id, m.slot`, owner); err != nil {
		return nil, s.wrap(err, "list the pool members of %s", owner)
	}
	pools := make([]*engine.Pool, len(rows))
	byID := make(map[string]*engine.Pool, len(rows))
	for i := range rows {
		pools[i] = rows[i].pool()
		byID[pools[i].ID] = pools[i]
	}
	for i := range ms {
		m, err := ms[i].member()
		if err != nil {
			return nil, s.errorf("%w", err)
		}
		if p := byID[ms[i].PoolID]; p != nil {
			p.Members = append(p.Members, m)
		}
	}
	return pools, nil
}

// ResizePool implements engine.PoolStore, in one database transaction
// under the pool's row lock: down, the members of slots size and above
// leave the pool (their accounts stay); up, the accounts of add (exactly
// size minus the current size of them) join in the next slots, inserted
// as in CreatePool.
func (s *Store) ResizePool(ctx context.Context, id string, size int, add []*engine.Account) error {
	if size < engine.MinPoolSize {
		return s.errorf("resize pool %s: size %d", id, size)
	}
	return s.inTx(ctx, func(tx Conn) error {
		var cur struct {
			Owner string `db:"owner"`
			Size  int    `db:"size"`
		}
		if err := tx.Get(ctx, &cur, `SELECT owner, size FROM pools WHERE id = ? AND deleted IS NULL`+s.d.Lock(LockUpdate), id); err != nil {
			return s.wrap(err, "resize pool %s", id)
		}
		switch {
		case size < cur.Size && len(add) == 0:
			if _, err := tx.Exec(ctx, `UPDATE pool_members SET removed = `+s.d.Now()+`
				WHERE pool_id = ? AND removed IS NULL AND slot >= ?`, id, size); err != nil {
				return s.wrap(err, "resize pool %s: remove members", id)
			}
		case size >= cur.Size && len(add) == size-cur.Size:
			if err := s.insertMembers(ctx, tx, id, cur.Owner, cur.Size, add); err != nil {
				return err
			}
		default:
			return s.errorf("resize pool %s from %d to %d with %d new members", id, cur.Size, size, len(add))
		}
		if _, err := tx.Exec(ctx, `UPDATE pools SET size = ? WHERE id = ?`, size, id); err != nil {
			return s.wrap(err, "resize pool %s", id)
		}
		return nil
	})
}

// DeletePool implements engine.PoolStore: the pool is marked deleted and
// its members leave it, in one database transaction; its transactions
// keep their pool_id. engine.ErrNotFound when no live pool has this id.
func (s *Store) DeletePool(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx Conn) error {
		res, err := tx.Exec(ctx, `UPDATE pools SET deleted = `+s.d.Now()+` WHERE id = ? AND deleted IS NULL`, id)
		if err != nil {
			return s.wrap(err, "delete pool %s", id)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.wrap(err, "delete pool %s", id)
		} else if n == 0 {
			return s.notFound("delete pool %s: no such pool", id)
		}
		if _, err := tx.Exec(ctx, `UPDATE pool_members SET removed = `+s.d.Now()+`
			WHERE pool_id = ? AND removed IS NULL`, id); err != nil {
			return s.wrap(err, "delete pool %s: remove members", id)
		}
		return nil
	})
}

// PendingPools implements engine.PoolStore: the live pools of network
// with a non-ended transaction (one probe of transactions_pool_pending
// per pool of the network), oldest first.
func (s *Store) PendingPools(ctx context.Context, network string) ([]string, error) {
	ids := []string{}
	if err := s.r.Select(ctx, &ids, `SELECT p.id FROM pools p
		WHERE p.network = ? AND p.deleted IS NULL AND EXISTS (
			SELECT 1 FROM transactions t WHERE t.pool_id = p.id AND t.`+pendingStatuses+`)
		ORDER BY p.created, p.`+s.seq, network); err != nil {
		return nil, s.wrap(err, "pending pools of %s", network)
	}
	return ids, nil
}

// OrderingKeyMember implements engine.PoolStore: one probe of
// transactions_pool_key, the latest non-ended row of (poolID, key).
func (s *Store) OrderingKeyMember(ctx context.Context, poolID, key string) (string, bool, error) {
	var id string
	err := s.r.Get(ctx, &id, `SELECT account_id FROM transactions
		WHERE pool_id = ? AND ordering_key = ? AND `+pendingStatuses+`
		ORDER BY seq DESC LIMIT 1`, poolID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, s.wrap(err, "ordering key of pool %s", poolID)
	}
	return id, true, nil
}

package engine

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// poolSend is a send through a sender pool: the pool, what the send needs
// of its member, and the member the engine assigned.
type poolSend struct {
	pool       *Pool
	need       PoolNeed
	assignment PoolAssignment
}

// poolSend validates the pool and orderingKey options of r and, with a
// pool, asks the engine for a member (the last step of Build: a request
// refused for another reason assigns nothing). nil without a pool.
func (b Builder) poolSend(ctx context.Context, r SendRequest, value *big.Int) (*poolSend, error) {
	opts := r.Options
	if opts.OrderingKey != nil {
		if opts.Pool == nil {
			return nil, Invalid("orderingKey", "orderingKey applies to sends through a pool only: name one in pool")
		}
		if err := CheckOrderingKey(*opts.OrderingKey); err != nil {
			return nil, err
		}
	}
	if opts.Pool == nil {
		return nil, nil
	}
	if opts.From != nil {
		return nil, Invalid("pool", "pool and from cannot both be given: a send through a pool is sent from the member the pool assigns")
	}
	id, err := uuid.Parse(*opts.Pool)
	if err != nil || len(*opts.Pool) != 36 {
		return nil, Invalid("pool", "pool must be a pool id")
	}
	p, err := b.Lookup.OwnPool(ctx, r.Owner, id.String(), "pool")
	if err != nil {
		return nil, err
	}
	if p.Network != r.Target.Network {
		return nil, Invalid("pool", "pool %s is on network %s, the transaction on %s", p.ID, p.Network, r.Target.Network)
	}
	ps := &poolSend{pool: p, need: PoolNeed{Asset: AssetETH, Value: new(big.Int).Set(value)}}
	if r.Asset != "" {
		ps.need = PoolNeed{Asset: r.Asset, Value: new(big.Int).Set(r.AssetValue)}
	}
	if opts.OrderingKey != nil {
		ps.need.OrderingKey = *opts.OrderingKey
	}
	if ps.assignment, err = b.Lookup.AssignPoolMember(ctx, p, ps.need); err != nil {
		return nil, fmt.Errorf("pool %s: assign a member: %w", p.ID, err)
	}
	return ps, nil
}

// CheckOrderingKey refuses an orderingKey that is empty, longer than
// MaxOrderingKeyLen characters or starts with TopUpKeyPrefix (the
// keepers' own keys) as invalid_argument on field "orderingKey".
func CheckOrderingKey(key string) error {
	if key == "" || utf8.RuneCountInString(key) > MaxOrderingKeyLen {
		return Invalid("orderingKey", "orderingKey must be 1 to %d characters", MaxOrderingKeyLen)
	}
	if strings.HasPrefix(key, TopUpKeyPrefix) {
		return Invalid("orderingKey", "orderingKey may not start with %q (reserved for top-ups)", TopUpKeyPrefix)
	}
	return nil
}

// member returns the assigned member as the send's account (id and
// address); nil for a send without a pool.
func (ps *poolSend) member() *Account {
	if ps == nil {
		return nil
	}
	m := ps.assignment.Member
	return &Account{ID: m.AccountID, Owner: ps.pool.Owner, Address: m.Address}
}

// apply marks tx as sent through the pool. Unless the request has its own
// waitForAsset, a token transfer always waits for its member's tokens (the
// sender releases it when the member's balance, less its in-flight pool
// transfers, covers it: poolCover; the keeper sends a member's gas before
// its tokens), and any other send whose member cannot cover it (Wait)
// waits for what the assignment names, else for the need.
func (ps *poolSend) apply(tx *Transaction) {
	if ps == nil {
		return
	}
	tx.PoolID, tx.OrderingKey = ps.pool.ID, ps.need.OrderingKey
	tx.PoolAsset, tx.PoolValue = ps.need.Asset, ps.need.Value
	a := ps.assignment
	switch {
	case tx.WaitForAsset != "":
	case ps.need.Asset != AssetETH && ps.need.Value.Sign() > 0:
		tx.WaitForAsset, tx.WaitForValue = ps.need.Asset, new(big.Int).Set(ps.need.Value)
	case a.Wait && a.WaitAsset != "" && a.WaitValue != nil:
		tx.WaitForAsset, tx.WaitForValue = a.WaitAsset, new(big.Int).Set(a.WaitValue)
	case a.Wait:
		tx.WaitForAsset, tx.WaitForValue = ps.need.Asset, new(big.Int).Set(ps.need.Value)
	}
}

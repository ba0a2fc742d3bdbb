package engine

import (
	"context"
	"fmt"
	"math/big"
)

// poolCover is what a pool member holds for the transactions of one
// admit round (Sender.admit): its balance of each asset, read once per
// round, minus what its transactions in flight and those the round
// admitted before will move. A transfer through a pool is released only
// when that covers it: a member's balance is then never promised twice,
// whatever the balancer believed at acceptance, so a transfer through a
// pool does not revert for want of tokens.
type poolCover struct {
	s *Sender
	// admitted are the pool values of the round's admitted transactions.
	admitted poolSpends
	inFlight poolSpends
	loaded   bool
	balances map[string]*big.Int
}

// have returns the member's balance of tx's awaited asset minus its
// in-flight pool transfers and the round's admitted ones of that asset (a
// new value).
func (c *poolCover) have(ctx context.Context, tx *Transaction) (*big.Int, error) {
	if !c.loaded {
		rows, err := c.s.store.InFlight(ctx, c.s.account.ID, c.s.net.Name)
		if err != nil {
			return nil, fmt.Errorf("in flight of %s: %w", c.s.account.ID, err)
		}
		for _, r := range rows {
			c.inFlight.add(r)
		}
		c.loaded, c.balances = true, map[string]*big.Int{}
	}
	key := AssetKey(tx.WaitForAsset)
	bal, ok := c.balances[key]
	if !ok {
		bals, errs, err := Balances(ctx, c.s.net.Chain, []BalanceQuery{assetQuery(tx)})
		if err != nil {
			return nil, fmt.Errorf("balance for %s: %w", tx.ID, err)
		}
		if errs[0] != nil {
			return nil, fmt.Errorf("balance for %s: %w", tx.ID, errs[0])
		}
		bal = bals[0]
		c.balances[key] = bal
	}
	have := new(big.Int).Set(bal)
	for _, spent := range []poolSpends{c.inFlight, c.admitted} {
		if v := spent[key]; v != nil {
			have.Sub(have, v)
		}
	}
	return have, nil
}

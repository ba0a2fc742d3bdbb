package engine

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// orderedSubmit is a keeperSubmit that accepts a look's top-ups in one
// SubmitInOrder call, recording each call's keys.
type orderedSubmit struct {
	*keeperSubmit
	calls [][]string
}

func (o *orderedSubmit) SubmitInOrder(ctx context.Context, txs []*Transaction) []error {
	keys := make([]string, len(txs))
	errs := make([]error, len(txs))
	for i, tx := range txs {
		keys[i] = tx.OrderingKey
		_, errs[i] = o.Submit(ctx, tx)
	}
	o.calls = append(o.calls, keys)
	return errs
}

// TestPoolKeeperTopsUpTheBusiestFirst: the treasury's top-ups go out in one
// ordered submission, the members with the most work left (queued plus in
// flight) first, ties by slot, each member's gas right before its token
// (the lower nonce): a lagging member's refill lands in the earlier block.
func TestPoolKeeperTopsUpTheBusiestFirst(t *testing.T) {
	pf := newPoolFixture(t, 4)
	f := &keeperFixture{poolFixture: pf, net: pf.b.cfg.Networks["dev"]}
	treasury := &Account{ID: "treasury", Address: common.HexToAddress("0x00000000000000000000000000000000000000ee")}
	f.pool.TreasuryID, f.pool.Owner = treasury.ID, "owner"
	f.node.eth[treasury.Address] = big.NewInt(1e18)
	f.node.tokens[poolToken][treasury.Address] = big.NewInt(1e6)
	res := func() map[string]*big.Int { return map[string]*big.Int{poolToken.Hex(): big.NewInt(100)} }
	f.store = &keeperStore{pool: f.pool, treasury: treasury, pending: map[string]string{}, loads: []PoolMemberLoad{
		{AccountID: "m0", Queued: 1, Reserved: res()},
		{AccountID: "m1", Queued: 5, Reserved: res()},
		{AccountID: "m2", Queued: 20, InFlight: 3, Reserved: res()},
		{AccountID: "m3", Queued: 2, InFlight: 3, Reserved: res()},
	}}
	for _, m := range f.pool.Members {
		f.node.eth[m.Address] = new(big.Int) // no gas, no token: each needs both
	}
	sub := &orderedSubmit{keeperSubmit: &keeperSubmit{store: f.store}}
	k := NewPoolKeeper(PoolKeeperConfig{Network: f.net, Store: f.store, Submit: sub, BatchMin: -1})
	k.Add(f.pool.ID)
	k.Tick(context.Background())
	tok := ":" + poolToken.Hex()
	// Batches off: each member is paid one by one.
	want := []string{"m2:ETH", "m2" + tok, "m1:ETH", "m1" + tok, "m3:ETH", "m3" + tok, "m0:ETH", "m0" + tok}
	if len(sub.calls) != 1 || len(sub.calls[0]) != len(want) {
		t.Fatalf("submissions %v, want one ordered submission of %d top-ups", sub.calls, len(want))
	}
	for i, w := range want {
		if got := sub.calls[0][i]; got != TopUpKeyPrefix+w {
			t.Fatalf("top-up %d is %s, want %s (order %v)", i, got, TopUpKeyPrefix+w, sub.calls[0])
		}
	}
}

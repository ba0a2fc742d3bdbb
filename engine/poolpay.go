package engine

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// OrderedSubmitter is a TxSubmitter that accepts several transactions of
// one account in the order given: their nonces follow it (the actor
// system's SubmitInOrder). errs[i] is txs[i]'s (nil: accepted).
type OrderedSubmitter interface {
	SubmitInOrder(ctx context.Context, txs []*Transaction) (errs []error)
}

// payable returns the top-ups of owed that p's treasury covers, the
// treasury (nil when it pays nothing), and why it cannot pay the rest.
func (k *PoolKeeper) payable(ctx context.Context, p *Pool, owed []topUp) ([]topUp, *Account, string, error) {
	if len(owed) == 0 {
		return nil, nil, "", nil
	}
	if p.TreasuryID == "" {
		return nil, nil, noTreasury, nil
	}
	treasury, err := k.cfg.Store.AccountByID(ctx, p.TreasuryID)
	if err != nil {
		return nil, nil, "", fmt.Errorf("treasury: %w", err)
	}
	payable, short, err := k.covered(ctx, treasury, owed)
	if err != nil {
		return nil, nil, "", err
	}
	return payable, treasury, short, nil
}

// pay sends what the treasury can cover of owed (in batches where it can,
// plan), and records what it cannot (Short). pending are the keys of the
// pool's pending top-ups.
func (k *PoolKeeper) pay(ctx context.Context, p *Pool, owed []topUp, pending []string) error {
	payable, treasury, short, err := k.payable(ctx, p, owed)
	if err != nil {
		return err
	}
	k.setShort(p, short)
	if len(payable) == 0 {
		return nil
	}
	sent := k.submitAll(ctx, p, k.plan(ctx, p, treasury, payable, pending))
	if sent > 0 {
		k.cfg.Metrics.PoolTopUps(p.ID, p.Network, sent)
	}
	return nil
}

// setShort records why p cannot cover its members ("" when it can).
func (k *PoolKeeper) setShort(p *Pool, why string) {
	k.mu.Lock()
	if why == "" {
		delete(k.short, p.ID)
	} else {
		k.short[p.ID] = why
	}
	k.mu.Unlock()
	k.cfg.Metrics.PoolShort(p.ID, p.Network, why != "")
}

// covered returns the top-ups the treasury's balances cover, in order, and
// why it cannot cover the rest ("" when it covers all).
func (k *PoolKeeper) covered(ctx context.Context, treasury *Account, owed []topUp) ([]topUp, string, error) {
	tokens := []string{}
	for _, t := range owed {
		if t.asset != AssetETH && !slices.Contains(tokens, t.asset) {
			tokens = append(tokens, t.asset)
		}
	}
	tm := PoolMember{AccountID: treasury.ID, Address: treasury.Address}
	bal, err := ReadPoolBalances(ctx, k.cfg.Network, []PoolMember{tm}, tokens)
	if err != nil {
		return nil, "", fmt.Errorf("treasury balances: %w", err)
	}
	b := bal[treasury.ID]
	if b.ETH == nil {
		return nil, "", fmt.Errorf("treasury balances: the node did not answer")
	}
	price, err := k.cfg.Network.GasPrice(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("gas price: %w", err)
	}
	txGas := new(big.Int).Mul(price, new(big.Int).SetUint64(k.cfg.GasPerTx))
	eth := new(big.Int).Set(b.ETH)
	left := map[string]*big.Int{}
	for _, t := range tokens {
		left[t] = new(big.Int)
		if v := b.Tokens[t]; v != nil {
			left[t].Set(v)
		}
	}
	var out []topUp
	var short []string
	for _, t := range owed {
		cost := new(big.Int).Set(txGas)
		if t.asset == AssetETH {
			cost.Add(cost, t.amount)
		} else if left[t.asset].Cmp(t.amount) < 0 {
			short = appendShort(short, fmt.Sprintf("treasury %s holds %s of token %s, members need %s more", treasury.Address.Hex(), b.Tokens[t.asset], t.asset, t.amount))
			continue
		}
		if eth.Cmp(cost) < 0 {
			short = appendShort(short, fmt.Sprintf("treasury %s holds %s wei, too little for the members' top-ups", treasury.Address.Hex(), b.ETH))
			continue
		}
		eth.Sub(eth, cost)
		if t.asset != AssetETH {
			left[t.asset].Sub(left[t.asset], t.amount)
		}
		out = append(out, t)
	}
	return out, strings.Join(short, "; "), nil
}

// appendShort appends why to short unless it is there already.
func appendShort(short []string, why string) []string {
	if slices.Contains(short, why) {
		return short
	}
	return append(short, why)
}

// byNeed orders top-ups so that the treasury's nonces, and so the blocks
// its refills land in (a busy node keeps 16 of its transactions pending),
// go to the members with the most work left first (queued plus in
// flight): a member that lags gets its refill in the earlier block. A
// member's top-ups stay together, its gas before its tokens (owedOf emits
// them so): its gas never arrives after its token.
func byNeed(owed []topUp) {
	slices.SortStableFunc(owed, func(a, b topUp) int {
		if c := cmp.Compare(b.work, a.work); c != 0 {
			return c
		}
		return cmp.Compare(a.member.Slot, b.member.Slot)
	})
}

// send is one transaction of a look and the member top-ups it pays (none
// for a transaction that prepares batches).
type send struct {
	tx   *Transaction
	pays []topUp
}

// submitAll submits the look's transactions in their order, through
// SubmitInOrder where the submitter has it (one group commit), else one
// after the other. It returns how many were accepted.
func (k *PoolKeeper) submitAll(ctx context.Context, p *Pool, sends []send) int {
	txs := make([]*Transaction, len(sends))
	for i, s := range sends {
		txs[i] = s.tx
	}
	errs := make([]error, len(txs))
	if ordered, ok := k.cfg.Submit.(OrderedSubmitter); ok {
		errs = ordered.SubmitInOrder(ctx, txs)
	} else {
		for i, tx := range txs {
			_, errs[i] = k.cfg.Submit.Submit(ctx, tx)
		}
	}
	sent := 0
	for i, s := range sends {
		if errs[i] != nil {
			k.cfg.Log.Warn("pool top-up not accepted", "pool", p.ID, "key", s.tx.OrderingKey, "err", errs[i])
			continue
		}
		for _, t := range s.pays {
			k.noteRefill(t.key())
		}
		if strings.HasPrefix(s.tx.OrderingKey, batchKeyPrefix) {
			k.noteBatch(p.ID, s.tx)
		}
		sent++
	}
	return sent
}

package engine

import (
	"context"
	"math/big"
	"slices"
)

// plan turns the payable top-ups (ordered byNeed) into the look's
// transactions, in the order they take the treasury's nonces: what
// prepares batches (the disperser's deployment, approvals: one slot each,
// once, so that batches can go a block sooner), the gas batch, the top-ups
// paid one by one (byNeed), then the token batches. A member's gas thus
// never comes after its token. An asset owed to at least
// BatchMin members goes in one batch once the treasury's disperser is
// deployed (and, for a token, approved). While that setup is on its way
// the asset's top-ups are held (holdFor, at most batchSetupWait); when it
// cannot be done, or batches of the asset failed lately, each member gets
// its own top-up.
func (k *PoolKeeper) plan(ctx context.Context, p *Pool, treasury *Account, payable []topUp, pending []string) []send {
	byAsset := map[string][]topUp{}
	var assets []string
	for _, t := range payable {
		if _, ok := byAsset[t.asset]; !ok {
			assets = append(assets, t.asset)
		}
		byAsset[t.asset] = append(byAsset[t.asset], t)
	}
	var batchable []string
	for _, a := range assets {
		if k.cfg.BatchMin > 0 && len(byAsset[a]) >= k.cfg.BatchMin && k.batchOn(ctx, p.ID, a) {
			batchable = append(batchable, a)
		}
	}
	batches, setup, waiting := k.batches(ctx, p, treasury, batchable, byAsset, pending)
	held := k.holdFor(p.ID, assets, batches, waiting)
	inBatch := map[string]bool{}
	out := make([]send, 0, len(setup)+len(payable))
	for _, tx := range setup {
		out = append(out, send{tx: tx})
	}
	for _, b := range batches {
		for _, t := range b.pays {
			inBatch[t.key()] = true
		}
		if b.pays[0].asset == AssetETH {
			out = append(out, b)
		}
	}
	for _, t := range payable {
		if inBatch[t.key()] || held[t.asset] {
			continue
		}
		tx, err := k.topUpTx(p, treasury, t)
		if err != nil {
			k.cfg.Log.Error("pool top-up", "pool", p.ID, "err", err)
			continue
		}
		out = append(out, send{tx: tx, pays: []topUp{t}})
	}
	for _, b := range batches {
		if b.pays[0].asset != AssetETH {
			out = append(out, b)
		}
	}
	return out
}

// holdFor returns the assets whose top-ups this look holds: those whose
// batch waits for its setup (waiting), unless they were first held
// batchSetupWait ago. An asset batched now is held no more.
func (k *PoolKeeper) holdFor(pool string, assets []string, batches []send, waiting []string) map[string]bool {
	now := k.cfg.Clock.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, b := range batches {
		delete(k.held, pool+" "+b.pays[0].asset)
	}
	out := map[string]bool{}
	for _, a := range assets {
		key := pool + " " + a
		if !slices.Contains(waiting, a) {
			delete(k.held, key)
			continue
		}
		since, ok := k.held[key]
		if !ok {
			since, k.held[key] = now, now
		}
		out[a] = now.Sub(since) < batchSetupWait
	}
	return out
}

// batches returns the batches of the batchable assets that can go now,
// the transactions that prepare the others (a deployment, approvals), and
// the batchable assets whose batch waits for that setup, on its way. A
// batch names at most maxBatchRecipients members, the busiest (the others
// are paid one by one).
func (k *PoolKeeper) batches(ctx context.Context, p *Pool, treasury *Account, batchable []string, byAsset map[string][]topUp, pending []string) (out []send, setup []*Transaction, waiting []string) {
	if len(batchable) == 0 {
		return nil, nil, nil
	}
	d, err := k.disperser(ctx, p, treasury)
	if err != nil {
		k.cfg.Log.Warn("pool batches", "pool", p.ID, "err", err)
		return nil, nil, nil
	}
	if d.deploy != nil {
		setup = append(setup, d.deploy)
	}
	if !d.known {
		if d.deploy != nil || d.pending {
			waiting = batchable
		}
		return nil, setup, waiting
	}
	addr := d.addr
	for _, a := range batchable {
		ts := byAsset[a]
		ts = ts[:min(len(ts), maxBatchRecipients)]
		if a != AssetETH {
			sum := new(big.Int)
			for _, t := range ts {
				sum.Add(sum, t.amount)
			}
			ok, approve, err := k.approved(ctx, p, treasury, addr, a, sum, pending)
			if err != nil {
				k.cfg.Log.Warn("pool batches: allowance", "pool", p.ID, "token", a, "err", err)
				continue
			}
			if approve != nil {
				setup = append(setup, approve)
			}
			if !ok {
				waiting = append(waiting, a) // the approval is on its way
				continue
			}
		}
		if !d.ready {
			waiting = append(waiting, a)
			continue // approved before its deployment is mined: batches wait for it
		}
		tx, err := k.batchTx(p, treasury, addr, a, ts)
		if err != nil {
			k.cfg.Log.Error("pool batch", "pool", p.ID, "asset", a, "err", err)
			continue
		}
		out = append(out, send{tx: tx, pays: slices.Clone(ts)})
	}
	return out, setup, waiting
}

// noteBatch records the batch tx of pool sent: the next look after it
// ended reads its outcome (batchOn).
func (k *PoolKeeper) noteBatch(pool string, tx *Transaction) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastBatch[pool+" "+batchAsset(tx.OrderingKey)] = tx.ID
}

// batchAsset is the asset of a batch's key.
func batchAsset(key string) string { return key[len(batchKeyPrefix):] }

// batchOn reports whether pool's top-ups of asset may go in a batch: not
// while batchPause has not passed since one of them failed. The outcome of
// the last batch this keeper sent is read once it is no longer pending (a
// batch pending drops the asset's top-ups before the plan: notPending).
func (k *PoolKeeper) batchOn(ctx context.Context, pool, asset string) bool {
	key := pool + " " + asset
	now := k.cfg.Clock.Now()
	k.mu.Lock()
	until, paused := k.batchPaused[key]
	id := k.lastBatch[key]
	k.mu.Unlock()
	if paused && now.Before(until) {
		return false
	}
	if id == "" {
		return true
	}
	tx, err := k.cfg.Store.TransactionByID(ctx, id)
	if err != nil {
		k.cfg.Log.Warn("pool batch outcome", "pool", pool, "tx", id, "err", err)
		return false // one by one until it can be read
	}
	if !tx.Status.Terminal() {
		return true // not ended (notPending keeps the asset out meanwhile)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.lastBatch, key)
	if tx.Status == StatusFailed {
		k.cfg.Log.Warn("pool batch failed: one top-up each for a while", "pool", pool, "asset", asset, "tx", id, "pause", batchPause, "error", tx.Error)
		k.batchPaused[key] = now.Add(batchPause)
		return false
	}
	delete(k.batchPaused, key)
	return true
}

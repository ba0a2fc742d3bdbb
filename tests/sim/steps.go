package sim

import (
	"context"
	"errors"
	"math/big"
	"slices"
	"time"

	"github.com/txengine/txengine/engine"
)

// callTimeout is the deadline of one pump or poll, as the actors give it.
const callTimeout = 2 * time.Minute

// step is one step of the faulty phase, chosen by the rng: requests
// accepted, an account's pump, the watcher's poll, the chain's tick, or a
// crash of the process.
func (w *world) step(ctx context.Context) {
	switch r := w.rng.Intn(100); {
	case r < 22:
		w.accept(ctx, w.accts[w.rng.Intn(len(w.accts))], 1+w.rng.Intn(4))
	case r < 52:
		w.pump(ctx, w.accts[w.rng.Intn(len(w.accts))].acct.ID)
	case r < 67:
		w.poll(ctx)
	case r < 98:
		w.tick()
	default:
		if w.faults.Enabled(FaultCrash) {
			w.faults.count(FaultCrash)
			w.restart(ctx)
		}
	}
}

// accept stores n transfers of a in one batch, as the account actor's
// group commit does, and answers (acks) them when they are stored: after
// an error whose outcome is unknown, the answer follows what the store
// holds (promise 12). The account's pump follows.
func (w *world) accept(ctx context.Context, a *account, n int) {
	txs := make([]*engine.Transaction, n)
	for i := range txs {
		w.memo++
		t := transfer{to: w.recipient(), amount: int64(1 + w.rng.Intn(20)), memo: w.memo}
		if w.rng.Intn(40) == 0 {
			t.amount = tokensEach * 10 // cannot be paid: reverts
		}
		switch r := w.rng.Intn(80); {
		case r == 0 && w.faults.Enabled(FaultRefusedForGood):
			w.node.refuseSend[t.memo] = true
		case r == 1 && w.faults.Enabled(FaultGasAllowance):
			w.node.refuseEstimate[t.memo] = true
		}
		txs[i] = &engine.Transaction{
			ID: w.newID(), Owner: w.owner, AccountID: a.acct.ID, Network: networkName, From: a.key.addr,
			ContractAddress: w.chain.Token, Method: "transfer", Data: t.encode(), Value: new(big.Int),
			Status: engine.StatusNew, Created: w.clock.Now(),
		}
		w.tried = append(w.tried, txs[i].ID)
	}
	if err := w.store.InsertTransactions(ctx, txs); err != nil {
		if _, rerr := w.raw.TransactionByID(ctx, txs[0].ID); rerr != nil {
			return // not stored: the client got an error
		}
	}
	for _, tx := range txs {
		w.acked[tx.ID] = true
	}
	w.pump(ctx, a.acct.ID)
}

// pump runs one Pump of the account's sender, as its actor does. The
// head the watcher observed is observed again first (the sender uses a
// head younger than 3 s of wall time instead of asking the node, and the
// simulation must not depend on wall time).
func (w *world) pump(ctx context.Context, id string) {
	if h, seen := w.net.LastHead(); !seen.IsZero() {
		w.net.ObserveHead(h)
	}
	s := w.senders[id]
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.Pump(cctx)
	s.TakeFailed()
	if err != nil && !errors.Is(err, engine.ErrNodeBusy) {
		w.log.Debug("sim: pump failed", "account", id, "err", err)
	}
}

// poll runs the watcher's polls until it has caught up (or fails), and
// wakes the accounts it names, as the watcher actor does.
func (w *world) poll(ctx context.Context) {
	for i := 0; i < 16; i++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := w.follower.Poll(cctx)
		cancel()
		w.log.Debug("sim: poll", "head", res.Head, "more", res.More, "depth", res.Depth, "err", err)
		// Poll lists accounts from a map: sorted, the order of the pumps
		// (and so of the rng's draws) is the seed's.
		slices.Sort(res.Reorged)
		slices.Sort(res.Accounts)
		for _, id := range res.Reorged {
			if s := w.senders[id]; s != nil {
				s.Resync()
				w.pump(ctx, id)
			}
		}
		for _, id := range res.Accounts {
			if w.senders[id] != nil {
				w.pump(ctx, id)
			}
		}
		if err != nil || !res.More {
			return
		}
	}
}

// tick moves the chain: a block mostly; or a head that stalls or jumps, a
// reorg, a nonce consumed elsewhere, a pool that drops or forgets.
func (w *world) tick() {
	w.clock.now = w.clock.now.Add(time.Second)
	c, rng := w.chain, w.rng
	on := func(kind string) bool {
		if !w.faults.Enabled(kind) {
			return false
		}
		w.faults.count(kind)
		return true
	}
	switch r := rng.Intn(100); {
	case r < 55:
		c.Mine()
	case r < 62 && on(FaultHeadStall):
	case r < 70 && on(FaultHeadJump):
		for i := 2 + rng.Intn(7); i > 0; i-- {
			c.Mine()
		}
	case r < 77 && on(FaultReorg):
		depth := 1 + rng.Intn(3)
		if rng.Intn(8) == 0 {
			depth = 1 + rng.Intn(64)
		}
		w.log.Debug("sim: reorg", "head", c.Head(), "depth", c.Reorg(depth))
	case r < 82 && on(FaultConsumed):
		c.Consume(w.accts[rng.Intn(len(w.accts))].key)
	case r < 88 && on(FaultPoolDrop):
		c.DropFromPool()
	case r < 91 && on(FaultPoolForget):
		c.ForgetPool()
	case r < 100 && on(FaultBaseFeeJump):
		c.baseFee.Mul(c.baseFee, big.NewInt(3))
		c.Mine()
	default:
		c.Mine()
	}
}

// quiet is the phase without faults: a block at a time, the watcher
// polls and every account pumps, until every stored transaction has ended
// or the bound is reached. It returns the blocks it took.
func (w *world) quiet(ctx context.Context) uint64 {
	for b := 0; b < w.cfg.QuietBlocks; b++ {
		w.poll(ctx)
		for _, a := range w.accts {
			w.pump(ctx, a.acct.ID)
		}
		if w.allEnded(ctx) {
			return uint64(b)
		}
		w.clock.now = w.clock.now.Add(2 * time.Second)
		w.chain.Mine()
	}
	return uint64(w.cfg.QuietBlocks)
}

// allEnded reports whether no account has a transaction queued or in
// flight (read without faults).
func (w *world) allEnded(ctx context.Context) bool {
	for _, a := range w.accts {
		sum, err := w.raw.InFlightSummary(ctx, a.acct.ID, networkName)
		if err != nil || sum.Count > 0 {
			return false
		}
		ready, err := w.raw.ReadyTransactions(ctx, a.acct.ID, networkName, 1)
		if err != nil || len(ready) > 0 {
			return false
		}
	}
	return true
}

// Package faucet holds the faucet actor: one per network that has a faucet
// key, it serialises the funding transactions of new accounts.
package faucet

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// Fund asks the faucet to top up Addresses. When the sender used a request,
// the reply is *Funded, once every address is funded or the attempt failed;
// otherwise the faucet funds them with the other addresses waiting, and
// asks again for those it had no room for (retried until funded).
type Fund struct {
	Addresses []common.Address
}

// Funded answers a Fund request.
type Funded struct {
	Hashes []common.Hash
	Err    error
}

// Props returns the props of the actor around f.
func Props(f *engine.Faucet, log *slog.Logger) *actor.Props {
	// The queue outlives an incarnation: a restarted actor funds what the
	// failed one had queued.
	q := &pending{queued: map[common.Address]bool{}}
	return lifecycle.Props(func() actor.Actor { return &Actor{faucet: f, log: log, pending: q} })
}

// Bounds of the faucet actor's batches.
const (
	// maxBatch bounds the addresses of one funding call (one JSON-RPC
	// batch of balances and one of sends).
	maxBatch = 512
	// retryEvery is the pause before asking again for addresses the
	// faucet had no room for or the node refused.
	retryEvery = time.Second
	// requestTimeout bounds a Fund request's funding.
	requestTimeout = 30 * time.Second
)

// flush makes the actor fund the addresses waiting; retryDue ends the
// pause after a batch that could not fund every address.
type (
	flush    struct{}
	retryDue struct{}
)

// Actor is the faucet actor. Fund messages without a reply wait in a
// queue that the next flush funds in one batch: the Funds that arrive
// while one batch is out are funded together by the next.
type Actor struct {
	faucet *engine.Faucet
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	*pending
	flushQueued bool
	retry       lifecycle.Timer
}

// pending is what the faucet actor has to fund, in order, and its set.
type pending struct {
	queue  []common.Address
	queued map[common.Address]bool
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.scheduleFlush(c) // what an earlier incarnation left
	case *actor.Stopping, *actor.Restarting:
		a.cancel()
		a.retry.Stop()
	case *Fund:
		if c.Sender() != nil {
			ctx, cancel := context.WithTimeout(a.ctx, requestTimeout)
			hashes, err := a.faucet.Fund(ctx, msg.Addresses)
			cancel()
			if err != nil {
				a.log.Warn("faucet funding failed", "err", err)
			}
			c.Respond(&Funded{Hashes: hashes, Err: err})
			return
		}
		for _, addr := range msg.Addresses {
			if !a.queued[addr] {
				a.queued[addr] = true
				a.queue = append(a.queue, addr)
			}
		}
		a.scheduleFlush(c)
	case flush:
		a.flushQueued = false
		a.flush(c)
	case retryDue:
		a.retry.Stop()
		a.scheduleFlush(c)
	}
}

// scheduleFlush queues a flush behind the messages already in the mailbox,
// unless one is queued or a retry is pending.
func (a *Actor) scheduleFlush(c actor.Context) {
	if a.flushQueued || a.retry.IsSet() || len(a.queue) == 0 {
		return
	}
	a.flushQueued = true
	c.Send(c.Self(), flush{})
}

// flush funds up to maxBatch queued addresses. Those the faucet had no
// room for, or the node refused, go back to the front of the queue (in
// order: a retry signs them with the nonces they had) and are asked for
// again after retryEvery; so are all of them when the node failed.
func (a *Actor) flush(c actor.Context) {
	n := min(len(a.queue), maxBatch)
	batch := a.queue[:n:n]
	// The batch leaves the queue only once funded: after a panic here, the
	// next incarnation funds it again.
	hashes, later, err := a.faucet.FundSome(a.ctx, batch)
	a.queue = a.queue[n:]
	if err != nil {
		a.log.Warn("faucet funding failed; retrying", "err", err, "addresses", len(batch)-len(hashes), "retry_in", retryEvery)
		later = batch // those it paid are not paid again (Faucet remembers them)
	}
	for _, addr := range batch {
		delete(a.queued, addr)
	}
	for _, addr := range later {
		a.queued[addr] = true
	}
	a.queue = append(later[:len(later):len(later)], a.queue...)
	if len(later) == 0 || err == nil && len(hashes) > 0 {
		a.scheduleFlush(c)
		return
	}
	a.retry.Set(c, retryEvery, retryDue{})
}

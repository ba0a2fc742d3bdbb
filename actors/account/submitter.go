package account

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// submitter is the child of an account actor that owns the account's
// engine.Sender: it assigns nonces, signs, persists and broadcasts within
// the in-flight window, looks after stuck transactions, and resolves the
// dependents of those it fails. Its parent wakes it after each group
// commit; the watcher wakes it (through the parent) when blocks free the
// window. A panic restarts it, and it rebuilds its state from the database.
type submitter struct {
	cfg       Config
	accountID string
	net       *engine.Network
	// fence is the lease of the account grain that owns this submitter
	// (cluster mode); zero in single-node mode.
	fence engine.Fence

	sender     *engine.Sender
	pumpQueued bool
	// checkNow is a Wake's Check, for the sender the next pump uses.
	checkNow bool
	// failures counts the pumps that failed in a row: the pause before
	// the next one doubles with each, up to maxRetryAfter.
	failures int
	// retry is set while the submitter backs off after a failed pump.
	retry  lifecycle.Timer
	ticker lifecycle.Ticker
	ctx    context.Context
	cancel context.CancelFunc
}

// Receive implements actor.Actor.
func (s *submitter) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		s.ctx, s.cancel = context.WithCancel(context.Background())
		if s.cfg.CheckEvery > 0 {
			s.ticker.Start(c, s.cfg.CheckEvery, tick{})
		}
		s.queuePump(c)
	case *actor.Stopping, *actor.Restarting:
		s.forgetLoad()
		s.sender = nil
		s.ticker.Stop()
		s.retry.Stop()
		s.cancel()
	case *Wake:
		if msg.Resync && s.sender != nil {
			s.sender.Resync()
		}
		if msg.Check {
			s.checkNow = true
		}
		if msg.Accepted && !msg.Resync && !msg.Check && !s.retry.IsSet() && s.sender != nil && s.sender.WindowFull() {
			// New work that cannot go out before room is made; the wake
			// that makes room pumps. (Under load, most group commits
			// find the window full: each pump read the store for nothing.)
			return
		}
		s.queuePump(c)
	case tick:
		if !s.retry.IsSet() && s.sender != nil && s.sender.Idle() {
			// Nothing in flight to check and nothing queued; new work
			// comes with a Wake.
			return
		}
		s.queuePump(c)
	case pump:
		s.pumpQueued = false
		s.pump(c)
	}
}

func (s *submitter) queuePump(c actor.Context) {
	if !s.pumpQueued {
		s.pumpQueued = true
		c.Send(c.Self(), pump{})
	}
}

func (s *submitter) pump(c actor.Context) {
	snd, err := s.getSender()
	if err == nil {
		if s.checkNow {
			snd.CheckNow()
			s.checkNow = false
		}
		// A pump never waits on a hung node or database for long: every
		// call it makes shares this deadline.
		ctx, cancel := context.WithTimeout(s.ctx, pumpTimeout)
		began := time.Now()
		var n int
		n, err = snd.Pump(ctx)
		cancel()
		s.cfg.Log.Debug("pump", "account", s.accountID, "network", s.net.Name, "done", n, "window", snd.Window(), "took", time.Since(began))
		s.resolve(snd.TakeFailed())
	}
	if errors.Is(err, engine.ErrFenced) {
		// Another activation holds the account now: sign nothing more.
		s.cfg.Log.Warn("account lease lost; stopping", "account", s.accountID, "network", s.net.Name, "epoch", s.fence.Epoch)
		c.Send(c.Parent(), fenced{})
		return
	}
	if err != nil {
		s.failures++
		wait := backoff(s.cfg.RetryAfter, s.failures, err, rand.Float64())
		s.cfg.Log.Warn("account pump failed; retrying", "account", s.accountID, "network", s.net.Name, "err", err, "retry_in", wait)
		s.retry.Set(c, wait, &Wake{})
		return
	}
	s.failures = 0
	s.retry.Stop()
}

// pumpTimeout bounds one pump: its node and database calls together.
const pumpTimeout = 2 * time.Minute

// maxRetryAfter bounds the pause between failed pumps.
const maxRetryAfter = 30 * time.Second

// nodeRetry is the pause after failed pumps that the node's trouble
// failed (engine.IsNodeTrouble): a rate limit, an answer that did not come
// in time, a connection lost. Promise 13: retried within seconds, not
// minutes; the jitter keeps the accounts that failed together from asking
// again together.
func nodeRetry() engine.Backoff {
	return engine.Backoff{Initial: 500 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}
}

// backoff is the pause after the n-th failed pump in a row, err the last
// failure and r a random number in [0, 1) for the jitter. The node's
// trouble (engine.IsNodeTrouble) waits nodeRetry: 0.5 s doubling to 5 s.
// Any other failure (the store unavailable, a node that refuses
// transactions for capacity: pool full, underpriced) waits base, doubled
// with each failure, at most maxRetryAfter: it is not asked again every
// base interval.
func backoff(base time.Duration, n int, err error, r float64) time.Duration {
	if engine.IsNodeTrouble(err) {
		return nodeRetry().Wait(n, r)
	}
	if base <= 0 {
		base = Default().RetryAfter
	}
	return engine.Backoff{Initial: base, Max: maxRetryAfter}.Wait(n, 0)
}

// getSender loads the account and builds its Sender on first use.
func (s *submitter) getSender() (*engine.Sender, error) {
	if s.sender != nil {
		return s.sender, nil
	}
	var acct *engine.Account
	var err error
	if st := s.cfg.Stages[s.net.Name]; st != nil {
		acct, err = st.Account(s.accountID) // merged with other accounts' first pumps
	} else {
		acct, err = s.cfg.Store.AccountByID(s.ctx, s.accountID)
	}
	if err != nil {
		return nil, fmt.Errorf("load account %s: %w", s.accountID, err)
	}
	s.sender = engine.NewSender(acct, s.net, s.cfg.Store, s.cfg.Signer, s.cfg.Clock, s.cfg.Log).WithConditions(s.cfg.Conditions).WithFence(s.fence).WithStage(s.cfg.Stages[s.net.Name]).WithNonceBook(s.cfg.Nonces)
	s.sender.SetMetrics(s.cfg.Metrics)
	return s.sender, nil
}

// forgetLoad withdraws the account's queue depth and in-flight count from
// the gauges when the submitter stops or restarts: only running ones report.
func (s *submitter) forgetLoad() {
	if s.sender != nil {
		s.sender.ForgetLoad()
	}
}

// resolve wakes the accounts of the dependents of the transactions this
// submitter failed (they fail too, or run).
func (s *submitter) resolve(failed []string) {
	if len(failed) == 0 || s.cfg.Conditions == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.StoreTimeout)
	defer cancel()
	refs, err := s.cfg.Conditions.Resolve(ctx, failed)
	if err != nil {
		s.cfg.Log.Warn("resolving dependents failed", "account", s.accountID, "err", err)
	}
	for _, r := range refs {
		s.cfg.Registry.Wake(r.AccountID, r.Network, false)
	}
}

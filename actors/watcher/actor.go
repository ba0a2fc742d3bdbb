package watcher

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// Waker wakes the actor of an account on a network (spawning it if needed);
// with resync the actor also broadcasts its in-flight transactions again.
type Waker interface {
	Wake(accountID, network string, resync bool)
}

// Heads wakes the watcher when the node has a new head; *evm.HeadSource
// implements it over a WebSocket subscription.
type Heads interface {
	// Start starts following heads until ctx ends or Close.
	Start(ctx context.Context)
	// C delivers coalesced wake-ups.
	C() <-chan struct{}
	// Connected reports whether the subscription is up.
	Connected() (bool, error)
	// Close stops following and waits until it has.
	Close()
}

// SafetyPollFactor multiplies the poll interval between timer polls while a
// head subscription is up: the subscription drives the watcher, the timer
// only guards against a subscription that stalls without an error.
const SafetyPollFactor = 10

// Config is what a watcher needs.
type Config struct {
	Network *engine.Network
	Store   engine.FollowerStore
	Clock   engine.Clock
	Log     *slog.Logger
	Waker   Waker
	// Conditions resolves dependents of settled transactions and sweeps
	// the waiting ones on each head; nil: not done.
	Conditions *engine.Conditions
	// ConditionsTimeout bounds each of the sweep and the resolution of
	// dependents after a poll (default 30 s). Zero settings take
	// Default's values.
	ConditionsTimeout time.Duration
	// NewHeads returns the head source of the network, or nil to poll
	// only (every Network.PollInterval). Each incarnation of the actor
	// starts its own and closes it when it stops.
	NewHeads func() Heads
	// Metrics receives heads, reorgs and outcomes; nil discards them.
	Metrics engine.Metrics
	// OnHead is called with each new head the watcher has processed (the
	// subscriptions actor follows it); nil: not called.
	OnHead func(head uint64)
}

// Props returns the props of the watcher of cfg.Network; zero settings
// take Default's values (Validate is the caller's: a negative one takes
// the default too).
func Props(cfg Config) *actor.Props {
	cfg = cfg.withDefaults()
	return lifecycle.Props(func() actor.Actor { return &Actor{cfg: cfg} })
}

// Actor is the watcher actor: it polls its Follower on a timer and, when the
// network has a head source, on every new head.
type Actor struct {
	cfg      Config
	follower *engine.Follower
	timer    lifecycle.Timer
	ctx      context.Context
	cancel   context.CancelFunc
	heads    Heads
	forward  sync.WaitGroup
	head     uint64
	lastErr  error
	// failures counts the polls that failed in a row (backoff).
	failures int
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.follower = engine.NewFollower(a.cfg.Network, a.cfg.Store, a.cfg.Clock, a.cfg.Log)
		a.follower.SetMetrics(a.cfg.Metrics)
		if a.cfg.NewHeads != nil {
			a.heads = a.cfg.NewHeads()
		}
		if a.heads != nil {
			a.heads.Start(a.ctx)
			a.startForwarding(c)
		}
		c.Send(c.Self(), tick{})
	case *actor.Stopping, *actor.Restarting:
		a.shutdown()
	case tick:
		a.poll(c)
	case *HeadRequest:
		c.Respond(&Head{Number: a.head, Err: a.lastErr})
	}
}

// startForwarding turns the head source's wake-ups into ticks; the
// goroutine belongs to this incarnation and ends in shutdown.
func (a *Actor) startForwarding(c actor.Context) {
	self, root, ctx, wake := c.Self(), c.ActorSystem().Root, a.ctx, a.heads.C()
	a.forward.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				root.Send(self, tick{})
			}
		}
	})
}

// shutdown stops the timer, the head source and the forwarding goroutine.
func (a *Actor) shutdown() {
	a.timer.Stop()
	if a.cancel != nil {
		a.cancel()
	}
	if a.heads != nil {
		a.heads.Close()
	}
	a.forward.Wait()
}

func (a *Actor) poll(c actor.Context) {
	// One poll never hangs the watcher on a node or database that does not
	// answer: its calls share this deadline.
	ctx, cancel := context.WithTimeout(a.ctx, pollTimeout)
	began := time.Now()
	res, err := a.follower.Poll(ctx)
	cancel()
	a.cfg.Log.Debug("watcher poll", "network", a.cfg.Network.Name, "head", res.Head, "accounts", len(res.Accounts), "took", time.Since(began))
	a.lastErr = err
	if err != nil {
		a.failures++
		a.cfg.Log.Warn("watcher poll failed", "network", a.cfg.Network.Name, "err", err, "retry_in", a.nextPoll(err))
	} else {
		a.failures = 0
		if res.Head > a.head && a.cfg.OnHead != nil {
			a.cfg.OnHead(res.Head)
		}
		a.head = res.Head
	}
	for _, id := range res.Reorged {
		a.cfg.Waker.Wake(id, a.cfg.Network.Name, true)
	}
	for _, id := range res.Accounts {
		a.cfg.Waker.Wake(id, a.cfg.Network.Name, false)
	}
	if err == nil {
		a.conditions(res.Settled)
	}
	a.timer.Stop()
	if err == nil && res.More {
		c.Send(c.Self(), tick{})
		return
	}
	a.timer.Set(c, a.nextPoll(err), tick{})
}

// conditions resolves the dependents of the transactions that settled and
// sweeps the network's waiting transactions (balances, deadlines), waking
// the accounts whose transactions may run now.
func (a *Actor) conditions(settled []string) {
	conds := a.cfg.Conditions
	if conds == nil {
		return
	}
	// A database that does not answer holds the watcher for this long at
	// most (each step has its own deadline).
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConditionsTimeout)
	refs, failed, err := conds.Sweep(ctx, a.cfg.Network)
	cancel()
	if err != nil {
		a.cfg.Log.Warn("sweeping waiting transactions failed", "network", a.cfg.Network.Name, "err", err)
	}
	ctx, cancel = context.WithTimeout(a.ctx, a.cfg.ConditionsTimeout)
	more, err := conds.Resolve(ctx, append(settled, failed...))
	cancel()
	if err != nil {
		a.cfg.Log.Warn("resolving dependents failed", "network", a.cfg.Network.Name, "err", err)
	}
	for _, r := range append(refs, more...) {
		a.cfg.Waker.Wake(r.AccountID, r.Network, false)
	}
}

// nextPoll is the pause before the next timer poll: the poll interval
// without a working subscription or after a failure, a multiple of it while
// the subscription drives the watcher.
func (a *Actor) nextPoll(err error) time.Duration {
	if err != nil && quickRetry(err) {
		// A rate limit or a slow answer passes in seconds (ENGINE.md
		// promise 13): a short, jittered pause, never the down-node one.
		return engine.Backoff{Initial: min(a.cfg.Network.PollInterval, quickBackoff), Max: maxQuickBackoff, Jitter: 0.5}.
			Wait(a.failures, rand.Float64())
	}
	if err != nil {
		// A node (or database) that is down is not asked every poll
		// interval: the pause doubles with each failure in a row.
		return engine.Backoff{Initial: a.cfg.Network.PollInterval, Max: maxPollBackoff}.Wait(a.failures, 0)
	}
	if a.heads != nil {
		if up, _ := a.heads.Connected(); up {
			return SafetyPollFactor * a.cfg.Network.PollInterval
		}
	}
	return a.cfg.Network.PollInterval
}

// quickRetry reports whether a failed poll failed on a rate limit (HTTP 429
// or the provider's words for it) or on an answer that came too late: both
// pass by themselves within seconds.
func quickRetry(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || engine.ClassifyNodeError(err) == engine.NodeRateLimited
}

// quickBackoff is the first pause after a rate-limited or slow poll (the
// poll interval when it is shorter); the pause doubles up to
// maxQuickBackoff, each shortened by up to half at random so that the
// watchers of one provider do not come back together.
const (
	quickBackoff    = 250 * time.Millisecond
	maxQuickBackoff = 2 * time.Second
)

// pollTimeout bounds one poll of the follower.
const pollTimeout = time.Minute

// maxPollBackoff bounds the pause between failed polls.
const maxPollBackoff = 15 * time.Second

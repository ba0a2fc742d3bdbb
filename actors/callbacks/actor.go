package callbacks

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// Config configures the dispatcher actor (config.go: Default, Validate).
// Zero fields take the values of Default.
type Config struct {
	// Dispatcher configures the engine.Dispatcher each incarnation owns;
	// its Store and Log are required.
	Dispatcher engine.DispatcherConfig
	// PollInterval is the pause between polls of the outbox (default 200ms).
	PollInterval time.Duration
	// CloseGrace bounds how long stopping waits for deliveries in flight
	// before cancelling them (default 5s; their rows stay pending).
	CloseGrace time.Duration
	// Pruner deletes delivered and abandoned outbox rows, and the
	// subscriptions' stored deliveries, older than Retention; nil: nothing
	// is pruned.
	Pruner engine.OutboxPruner
	// Retention is how long ended callbacks and stored deliveries are kept
	// (default engine.DefaultRetention, 7 days).
	Retention time.Duration
	// PruneEvery is the pause between pruning runs (default 10 minutes);
	// a run deletes PruneBatch rows of each kind per step, and takes
	// another step at once (after the messages waiting) while a batch
	// came back full.
	PruneEvery time.Duration
	// PruneBatch bounds the rows of one delete (default 1000).
	PruneBatch int
}

// Props returns the props of the dispatcher actor.
func Props(cfg Config) *actor.Props {
	cfg = cfg.withDefaults()
	return lifecycle.Props(func() actor.Actor { return &Actor{cfg: cfg} })
}

// Actor is the dispatcher actor. It owns its engine.Dispatcher (and so
// every delivery goroutine): a stop or restart closes it.
type Actor struct {
	cfg     Config
	d       *engine.Dispatcher
	ctx     context.Context
	cancel  context.CancelFunc
	timer   lifecycle.Timer
	pruner  lifecycle.Timer
	failing bool
	// nudged is set while a Nudge the actor sent itself is in its
	// mailbox, so that deliveries ending together send one.
	nudged atomic.Bool
}

// withNudges returns the dispatcher's configuration with an Outcome that
// also polls the outbox again as soon as an event delivery is delivered or
// abandoned: the next delivery of its subscription and URL was held behind
// it, and would otherwise wait for the next poll (one delivery per poll
// interval per subscription).
func (a *Actor) withNudges(c actor.Context) engine.DispatcherConfig {
	cfg := a.cfg.Dispatcher
	outer, self, root := cfg.Outcome, c.Self(), c.ActorSystem().Root
	cfg.Outcome = func(kind, outcome string) {
		if outer != nil {
			outer(kind, outcome)
		}
		if kind == engine.CallbackKindEvent && outcome != engine.OutcomeRetry && a.nudged.CompareAndSwap(false, true) {
			root.Send(self, &Nudge{})
		}
	}
	return cfg
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.d = engine.NewDispatcher(a.withNudges(c))
		c.Send(c.Self(), tick{})
		if a.cfg.Pruner != nil {
			a.pruner.Set(c, a.cfg.PruneEvery, prune{})
		}
	case *actor.Stopping, *actor.Restarting:
		a.shutdown()
	case tick:
		a.dispatch()
		a.timer.Set(c, a.cfg.PollInterval, tick{})
	case *Nudge:
		a.nudged.Store(false)
		a.dispatch()
	case prune:
		a.prune(c)
	case *DepthRequest:
		ctx, cancel := a.storeCtx()
		n, err := a.cfg.Dispatcher.Store.PendingCallbacks(ctx)
		cancel()
		c.Respond(&Depth{Pending: n, InFlight: a.d.InFlight(), Err: err})
	}
}

// dispatch starts the deliveries of the due rows. A failing store is
// logged once until it recovers, not at every poll.
func (a *Actor) dispatch() {
	ctx, cancel := a.storeCtx()
	_, err := a.d.Dispatch(ctx)
	cancel()
	switch {
	case err != nil && !a.failing:
		a.cfg.Dispatcher.Log.Warn("callback outbox poll failed", "err", err)
	case err == nil && a.failing:
		a.cfg.Dispatcher.Log.Info("callback outbox poll works again")
	}
	a.failing = err != nil
}

// prune takes one step of pruning: a batch of ended outbox rows, then one
// of stored deliveries, older than Retention. A full batch means more are
// due: the next step follows the messages waiting; otherwise the next run
// is PruneEvery away.
func (a *Actor) prune(c actor.Context) {
	cutoff := a.cfg.Dispatcher.Clock.Now().Add(-a.cfg.Retention)
	timeout := a.cfg.Dispatcher.StoreTimeout
	p, err := engine.PruneStep(a.ctx, a.cfg.Pruner, cutoff, a.cfg.PruneBatch, timeout)
	log := a.cfg.Dispatcher.Log
	if err != nil {
		log.Warn("pruning the callback outbox failed", "err", err)
	} else if p.Callbacks+p.Events > 0 {
		log.Info("pruned the callback outbox", "callbacks", p.Callbacks, "deliveries", p.Events, "before", cutoff)
	}
	if err == nil && p.Full(a.cfg.PruneBatch) {
		c.Send(c.Self(), prune{})
		return
	}
	a.pruner.Set(c, a.cfg.PruneEvery, prune{})
}

// storeCtx bounds one call of the actor to the store (the dispatcher's
// StoreTimeout, 5 s by default): a database that does not answer delays a
// poll, it does not freeze the actor.
func (a *Actor) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(a.ctx, a.cfg.Dispatcher.StoreTimeout)
}

// shutdown stops polling, then closes the dispatcher: deliveries in flight
// get CloseGrace to finish.
func (a *Actor) shutdown() {
	a.timer.Stop()
	a.pruner.Stop()
	if a.cancel != nil {
		a.cancel()
	}
	if a.d != nil {
		a.d.Close(a.cfg.CloseGrace)
	}
}

package subscriptions

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/subscribe"
)

// Config is what a subscriptions actor needs.
type Config struct {
	Network *engine.Network
	Store   engine.SubscriptionProcessorStore
	// Fence is the network's lease of the tenure that runs the actor (the
	// zero fence in single-node mode).
	Fence engine.NetworkFence
	Clock engine.Clock
	Log   *slog.Logger
	// Interval is the pause between polls when no new head arrives: a
	// safety net, the watcher's new heads drive the actor (default:
	// SafetyPollFactor times the network's PollInterval, at least
	// Default's 1 s).
	Interval time.Duration
	// Processor tunes the engine's processor (ranges, steps per poll).
	Processor subscribe.Config
	// Observe receives the outcome of every poll; nil discards it.
	Observe func(network string, res engine.SubscriptionResult, err error)
}

// Props returns the props of the subscriptions actor of cfg.Network. It
// fails when the network's chain cannot read logs (subscribe.Chain) or a
// setting is out of range (Validate).
func Props(cfg Config) (*actor.Props, error) {
	chain, ok := cfg.Network.Chain.(subscribe.Chain)
	if !ok {
		return nil, fmt.Errorf("subscriptions %s: the chain client cannot read logs", cfg.Network.Name)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("subscriptions %s: %w", cfg.Network.Name, err)
	}
	cfg = cfg.withDefaults()
	p, err := subscribe.NewProcessor(cfg.Network, chain, cfg.Store, cfg.Processor, cfg.Clock, cfg.Log)
	if err != nil {
		return nil, err
	}
	return lifecycle.Props(func() actor.Actor { return &Actor{cfg: cfg, processor: p} }), nil
}

// Actor is the subscriptions actor. All its state is touched only from
// Receive.
type Actor struct {
	cfg       Config
	processor *subscribe.Processor
	timer     lifecycle.Timer
	ctx       context.Context
	cancel    context.CancelFunc
	// last is the last successful poll (its head: a NewHead not above it
	// is not news).
	last     engine.SubscriptionResult
	failures int
}

// SafetyPollFactor multiplies the network's poll interval between the
// polls of the actor's own timer: the watcher's new heads drive it, the
// timer only guards against heads that stop coming (as the watcher's own
// timer does while its head subscription is up).
const SafetyPollFactor = 10

// pollTimeout bounds one poll.
const pollTimeout = time.Minute

// maxBackoff bounds the pause between failed polls.
const maxBackoff = 15 * time.Second

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		c.Send(c.Self(), tick{})
	case *actor.Stopping:
		a.shutdown()
		// This node no longer processes the network (its lease went to
		// another, or the service stops): its gauges say so.
		if a.cfg.Observe != nil {
			a.cfg.Observe(a.cfg.Network.Name, engine.SubscriptionResult{}, nil)
		}
	case *actor.Restarting:
		a.shutdown()
	case tick:
		a.poll(c, nil)
	case *NewHead:
		if a.failures == 0 && m.Number > a.last.Head {
			a.poll(c, &m.Number)
		}
	}
}

// shutdown stops the timer and cancels a poll in flight.
func (a *Actor) shutdown() {
	a.timer.Stop()
	if a.cancel != nil {
		a.cancel()
	}
}

// poll runs one Poll of the processor, at head when known.
func (a *Actor) poll(c actor.Context, head *uint64) {
	ctx, cancel := context.WithTimeout(a.ctx, pollTimeout)
	res, err := a.processor.Poll(ctx, a.cfg.Fence, head)
	cancel()
	if err != nil {
		a.failures++
		a.cfg.Log.Warn("subscriptions poll failed", "network", a.cfg.Network.Name, "err", err)
	} else {
		a.failures = 0
		a.last = res
	}
	if a.cfg.Observe != nil {
		a.cfg.Observe(a.cfg.Network.Name, res, err)
	}
	a.timer.Stop()
	if err == nil && res.More {
		c.Send(c.Self(), tick{})
		return
	}
	wait := a.cfg.Interval
	if err != nil {
		wait = engine.Backoff{Initial: a.cfg.Interval, Max: maxBackoff}.Wait(a.failures, 0)
	}
	a.timer.Set(c, wait, tick{})
}

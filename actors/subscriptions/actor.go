package subscriptions

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
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
	// Interval is the pause between polls when no new head arrives
	// (default: the network's PollInterval, at least 100 ms).
	Interval time.Duration
	// Processor tunes the engine's processor (ranges, steps per poll).
	Processor engine.SubscriptionConfig
	// Observe receives the outcome of every poll; nil discards it.
	Observe func(network string, res engine.SubscriptionResult, err error)
}

// Props returns the props of the subscriptions actor of cfg.Network. It
// fails when the network's chain cannot read logs (engine.IndexChain).
func Props(cfg Config) (*actor.Props, error) {
	chain, ok := cfg.Network.Chain.(engine.IndexChain)
	if !ok {
		return nil, fmt.Errorf("subscriptions %s: the chain client cannot read logs", cfg.Network.Name)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = max(cfg.Network.PollInterval, 100*time.Millisecond)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p, err := engine.NewSubscriptionProcessor(cfg.Network, chain, cfg.Store, cfg.Processor, cfg.Clock, cfg.Log)
	if err != nil {
		return nil, err
	}
	return lifecycle.Props(func() actor.Actor { return &Actor{cfg: cfg, processor: p} }), nil
}

// Actor is the subscriptions actor. All its state is touched only from
// Receive.
type Actor struct {
	cfg       Config
	processor *engine.SubscriptionProcessor
	timer     lifecycle.Timer
	ctx       context.Context
	cancel    context.CancelFunc
	last      engine.SubscriptionResult
	lastErr   error
	failures  int
}

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
	case *actor.Stopping, *actor.Restarting:
		a.timer.Stop()
		if a.cancel != nil {
			a.cancel()
		}
	case tick:
		a.poll(c, nil)
	case *NewHead:
		if a.failures == 0 && m.Number > a.last.Head {
			a.poll(c, &m.Number)
		}
	case *StatusRequest:
		c.Respond(&Status{Result: a.last, Err: a.lastErr})
	}
}

// poll runs one Poll of the processor, at head when known.
func (a *Actor) poll(c actor.Context, head *uint64) {
	ctx, cancel := context.WithTimeout(a.ctx, pollTimeout)
	res, err := a.processor.Poll(ctx, a.cfg.Fence, head)
	cancel()
	a.lastErr = err
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

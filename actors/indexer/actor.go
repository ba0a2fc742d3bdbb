package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// Config is what an indexer actor needs.
type Config struct {
	Network *engine.Network
	Store   engine.IndexerStore
	Log     *slog.Logger
	// Interval is the pause between polls once caught up (default: the
	// network's PollInterval, at least Default's 100 ms).
	Interval time.Duration
	// Indexer tunes the engine's indexer (ranges, calls per poll).
	Indexer engine.IndexerConfig
	// PollTimeout bounds one poll, its node and database calls together
	// (default 1 minute): a connection that hangs fails the poll.
	// Zero fields take Default's values.
	PollTimeout time.Duration
}

// Props returns the props of the indexer of cfg.Network. It fails when the
// network's chain cannot read logs (engine.IndexChain) or a setting is out
// of range (Validate).
func Props(cfg Config) (*actor.Props, error) {
	chain, ok := cfg.Network.Chain.(engine.IndexChain)
	if !ok {
		return nil, fmt.Errorf("indexer %s: the chain client cannot read logs", cfg.Network.Name)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("indexer %s: %w", cfg.Network.Name, err)
	}
	cfg = cfg.withDefaults()
	return lifecycle.Props(func() actor.Actor { return &Actor{cfg: cfg, chain: chain} }), nil
}

// Actor is the indexer actor. All its state is touched only from Receive.
type Actor struct {
	cfg     Config
	chain   engine.IndexChain
	indexer *engine.Indexer
	timer   lifecycle.Timer
	ctx     context.Context
	cancel  context.CancelFunc
	head    uint64
	lastErr error
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.indexer = engine.NewIndexer(a.cfg.Network, a.chain, a.cfg.Store, a.cfg.Indexer, a.cfg.Log)
		c.Send(c.Self(), tick{})
	case *actor.Stopping, *actor.Restarting:
		a.timer.Stop()
		if a.cancel != nil {
			a.cancel()
		}
	case tick:
		a.poll(c)
	case *StatusRequest:
		c.Respond(&Status{Head: a.head, Err: a.lastErr})
	}
}

func (a *Actor) poll(c actor.Context) {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.PollTimeout)
	res, err := a.indexer.Poll(ctx)
	cancel()
	a.lastErr = err
	if err != nil {
		a.cfg.Log.Warn("indexer poll failed", "network", a.cfg.Network.Name, "err", err)
	} else {
		a.head = res.Head
	}
	if err == nil && res.More {
		c.Send(c.Self(), tick{})
		return
	}
	a.timer.Set(c, a.cfg.Interval, tick{})
}

// Package pools holds the pool keeper actor: one per network, it tops up
// the members of the network's sender pools from their treasuries. The
// logic lives in engine.PoolKeeper; this is its actor shell, woken by the
// network's watcher on each new head, by the system when a pool gets work
// (a send assigned, a pool changed) and by its own timer.
package pools

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// Defaults of Config.
const (
	DefaultEvery       = time.Second
	DefaultTickTimeout = time.Minute
)

// PendingPools is what the keeper reads of the store when it starts.
type PendingPools interface {
	PendingPools(ctx context.Context, network string) ([]string, error)
}

// Config is what a keeper actor needs.
type Config struct {
	Keeper  *engine.PoolKeeper
	Network string
	Store   PendingPools
	Log     *slog.Logger
	// Every is the least pause between two looks at the pools, and how
	// often they are looked at without new heads (default 1 s).
	Every time.Duration
	// TickTimeout bounds one look at every pool (default 1 minute).
	TickTimeout time.Duration
}

// tick asks the keeper to look at its pools.
type tick struct{}

// NewHead tells the keeper that the network's head moved.
type NewHead struct{ Number uint64 }

// Work tells the keeper that a pool has work (a send was assigned, the
// pool was created or changed).
type Work struct{ PoolID string }

// Props returns the props of the keeper actor of cfg.
func Props(cfg Config) *actor.Props {
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.TickTimeout <= 0 {
		cfg.TickTimeout = DefaultTickTimeout
	}
	return lifecycle.Props(func() actor.Actor { return &Actor{cfg: cfg} })
}

// Actor is the keeper actor. All its state is touched only from Receive.
type Actor struct {
	cfg    Config
	timer  lifecycle.Timer
	ctx    context.Context
	cancel context.CancelFunc
	// last is when the pools were last looked at; soon is set while a look
	// is scheduled within Every (not the idle timer).
	last time.Time
	soon bool
	// recovered is set once the pending pools were read.
	recovered bool
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.recover()
		a.schedule(c)
	case *actor.Stopping, *actor.Restarting:
		a.timer.Stop()
		if a.cancel != nil {
			a.cancel()
		}
	case *NewHead:
		a.schedule(c)
	case *Work:
		a.cfg.Keeper.Add(m.PoolID)
		a.schedule(c)
	case tick:
		a.soon = false
		if !a.recovered {
			a.recover()
		}
		if a.cfg.Keeper.Active() > 0 {
			ctx, cancel := context.WithTimeout(a.ctx, a.cfg.TickTimeout)
			a.cfg.Keeper.Tick(ctx)
			cancel()
		}
		a.last = time.Now()
		a.timer.Set(c, a.cfg.Every, tick{})
	}
}

// recover adds the pools with pending transactions (a restart resumes
// their top-ups; the store says which are pending, so none is paid twice).
func (a *Actor) recover() {
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.TickTimeout)
	defer cancel()
	ids, err := a.cfg.Store.PendingPools(ctx, a.cfg.Network)
	if err != nil {
		a.cfg.Log.Warn("pool keeper: pending pools", "network", a.cfg.Network, "err", err)
		return // read again at the next tick
	}
	a.recovered = true
	for _, id := range ids {
		a.cfg.Keeper.Add(id)
	}
}

// schedule looks at the pools once Every has passed since the last look,
// and no sooner than Every/2 from now: the sends of a burst that start a
// pool's work are all counted in its first top-ups (a top-up pending, the
// member gets no second one).
func (a *Actor) schedule(c actor.Context) {
	if a.soon {
		return
	}
	a.soon = true
	a.timer.Set(c, max(a.cfg.Every/2, a.cfg.Every-time.Since(a.last)), tick{})
}

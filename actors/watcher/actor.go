package watcher

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/engine"
)

// Waker wakes the actor of an account on a network (spawning it if needed);
// with resync the actor also broadcasts its in-flight transactions again.
type Waker interface {
	Wake(accountID, network string, resync bool)
}

// Config is what a watcher needs.
type Config struct {
	Network *engine.Network
	Store   engine.FollowerStore
	Clock   engine.Clock
	Log     *slog.Logger
	Waker   Waker
	// Metrics receives heads, reorgs and outcomes; nil discards them.
	Metrics engine.Metrics
}

// Props returns the props of the watcher of cfg.Network.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &Actor{cfg: cfg} })
}

// Actor is the watcher actor.
type Actor struct {
	cfg      Config
	follower *engine.Follower
	timer    *time.Timer
	ctx      context.Context
	cancel   context.CancelFunc
	head     uint64
	lastErr  error
}

// Receive implements actor.Actor.
func (a *Actor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.follower = engine.NewFollower(a.cfg.Network, a.cfg.Store, a.cfg.Clock, a.cfg.Log)
		a.follower.SetMetrics(a.cfg.Metrics)
		c.Send(c.Self(), tick{})
	case *actor.Stopping:
		if a.timer != nil {
			a.timer.Stop()
		}
		a.cancel()
	case tick:
		a.poll(c)
	case *HeadRequest:
		c.Respond(&Head{Number: a.head, Err: a.lastErr})
	}
}

func (a *Actor) poll(c actor.Context) {
	res, err := a.follower.Poll(a.ctx)
	a.lastErr = err
	if err != nil {
		a.cfg.Log.Warn("watcher poll failed", "network", a.cfg.Network.Name, "err", err)
	} else {
		a.head = res.Head
	}
	for _, id := range res.Reorged {
		a.cfg.Waker.Wake(id, a.cfg.Network.Name, true)
	}
	for _, id := range res.Accounts {
		a.cfg.Waker.Wake(id, a.cfg.Network.Name, false)
	}
	if err == nil && res.More {
		c.Send(c.Self(), tick{})
		return
	}
	self, root := c.Self(), c.ActorSystem().Root
	a.timer = time.AfterFunc(a.cfg.Network.PollInterval, func() { root.Send(self, tick{}) })
}

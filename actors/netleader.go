package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/indexer"
	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/actors/watcher"
	"github.com/txengine/txengine/engine"
)

// netLeader is, in cluster mode, this node's candidate for one network's
// lease: while it holds the lease it runs the network's watcher, its
// subscriptions actor and its transfer indexer as its children, so one
// node of the cluster follows the
// network; when the lease goes to another node it stops them. The holder
// also wakes every account with pending work when it takes the lease, on
// every change of the cluster's membership and every RecoverEvery, so that
// the grains of a lost node resume.
//
// Expiry is the database's: the watcher's writes carry the tenure's fence
// (engine.NetworkFence) and the store refuses them once the lease is
// another's or expired by the database's clock. The leader stops following
// before that can happen: at the first renewal that fails, when the lease
// turns out to be another's, when the watcher's write is refused, and when
// its own monotonic clock says the lease may expire within leaseMargin: the
// deadline is counted from when the last successful renewal was sent, which
// is no later than when the database set the expiry.
type netLeader struct {
	s     *System
	cc    *ClusterConfig
	net   *engine.Network
	wcfg  watcher.Config
	ctx   context.Context
	stop  context.CancelFunc
	held  bool
	epoch int64
	// deadline is when the leader stops following unless it renewed
	// meanwhile: the send time of the last successful renewal plus the ttl
	// minus leaseMargin.
	deadline    time.Time
	recovered   time.Time
	children    []*actor.PID
	ticker      lifecycle.Ticker
	tickerEvery time.Duration
}

// leaderProps returns the props of the leader of net. Each incarnation
// starts afresh: after a panic, protoactor has stopped the watcher and
// indexer of the failed one, and the new one renews the lease it still
// holds (same epoch, unless it expired meanwhile) and starts them again.
func leaderProps(s *System, cc *ClusterConfig, net *engine.Network, wcfg watcher.Config) *actor.Props {
	return lifecycle.Guarded(lifecycle.Props(func() actor.Actor { return &netLeader{s: s, cc: cc, net: net, wcfg: wcfg} }))
}

// leaseMargin is how long before the lease's earliest possible expiry the
// leader stops following: a third of the ttl.
func leaseMargin(ttl time.Duration) time.Duration { return ttl / 3 }

// leaderTick asks the leader to take or renew its lease.
type leaderTick struct{}

// NotInfluenceReceiveTimeout implements actor.NotInfluenceReceiveTimeout.
func (leaderTick) NotInfluenceReceiveTimeout() {}

// topologyChanged tells the leader that members joined or left.
type topologyChanged struct{}

// leaseLost tells the leader that the store refused a write of its watcher
// started at epoch: the tenure is over.
type leaseLost struct{ epoch int64 }

// leaderStatus asks the leader for its leaderState.
type leaderStatus struct{}

// leaderState is whether the leader holds the lease, at which epoch, and
// how many children (subscriptions, watcher, indexer) it runs.
type leaderState struct {
	Held     bool
	Epoch    int64
	Children int
}

func (l *netLeader) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		l.ctx, l.stop = context.WithCancel(context.Background())
		l.tickerEvery = l.cc.NetworkLeaseTTL / 3
		l.ticker.Start(c, l.tickerEvery, leaderTick{})
		c.Send(c.Self(), leaderTick{})
	case *actor.Restarting:
		// A panic: the lease is kept for the next incarnation, which
		// renews it at once; protoactor stops the children.
		l.ticker.Stop()
		l.stop()
	case *actor.Stopping:
		l.ticker.Stop()
		if l.held {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := l.cc.Leases.ReleaseNetworkLease(ctx, l.net.Name, l.cc.Node); err != nil {
				l.s.cfg.Log.Warn("releasing the network lease failed", "network", l.net.Name, "err", err)
			}
			cancel()
		}
		l.stop()
	case leaderTick:
		l.tick(c)
	case leaseLost:
		if l.held && m.epoch == l.epoch {
			l.s.cfg.Log.Warn("network lease: the store refused the watcher's write", "network", l.net.Name, "epoch", m.epoch)
			l.demote(c)
		}
	case topologyChanged:
		if l.held {
			l.recover()
		}
	case leaderStatus:
		c.Respond(leaderState{Held: l.held, Epoch: l.epoch, Children: len(l.children)})
	}
}

func (l *netLeader) tick(c actor.Context) {
	ttl := l.cc.NetworkLeaseTTL
	timeout := l.tickerEvery
	if l.held {
		left := time.Until(l.deadline)
		if left <= 0 {
			l.s.cfg.Log.Warn("network lease: not renewed in time; no longer following before it may expire",
				"network", l.net.Name, "epoch", l.epoch)
			l.demote(c)
		} else {
			// A renewal that answers after the deadline is a failed one.
			timeout = min(timeout, left)
		}
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	sent := time.Now()
	held, epoch, err := l.cc.Leases.AcquireNetworkLease(ctx, l.net.Name, l.cc.Node, ttl)
	cancel()
	switch {
	case err != nil:
		l.s.cfg.Log.Warn("network lease: cannot renew", "network", l.net.Name, "err", err)
		if l.held {
			// It may expire before the next renewal and go to another node.
			l.demote(c)
		}
		return
	case !held:
		if l.held {
			l.demote(c)
		}
		return
	}
	l.deadline = sent.Add(ttl - leaseMargin(ttl))
	if l.held && epoch != l.epoch {
		// The tenure lapsed and this node took the lease again: the
		// watcher of the old tenure goes, one with the new fence starts.
		l.demote(c)
	}
	if !l.held {
		l.held, l.epoch = true, epoch
		l.s.cfg.Log.Info("network lease taken: following the network", "network", l.net.Name, "node", l.cc.Node, "epoch", epoch)
		l.promote(c)
		l.recover()
		return
	}
	if time.Since(l.recovered) >= l.cc.RecoverEvery {
		l.recover()
	}
}

// promote starts the watcher and the subscriptions actor, whose writes
// carry the fence of the tenure at l.epoch, the indexer and the pool
// keeper of the network.
func (l *netLeader) promote(c actor.Context) {
	fence := engine.NetworkFence{Network: l.net.Name, Node: l.cc.Node, Epoch: l.epoch}
	root, self, epoch := c.ActorSystem().Root, c.Self(), l.epoch
	wcfg := l.wcfg
	wcfg.Store = newFollowerStore(l.s.cfg.Store, fence, l.s.cfg.Log, func() { root.Send(self, leaseLost{epoch: epoch}) })
	keeper := c.Spawn(l.s.keeperProps(l.net, true))
	l.children = append(l.children, keeper)
	if props, err := l.s.subscriptionProps(l.net, fence); err != nil {
		l.s.cfg.Log.Error("subscriptions cannot start", "network", l.net.Name, "err", err)
	} else {
		subs := c.Spawn(props)
		l.children = append(l.children, subs)
		wcfg.OnHead = l.s.newHeadTo(subs, keeper)
	}
	l.children = append(l.children, c.Spawn(watcher.Props(wcfg)))
	props, err := indexer.Props(indexer.Config{Network: l.net, Store: l.s.cfg.Store, Log: l.s.cfg.Log})
	if err != nil {
		l.s.cfg.Log.Error("transfer indexer cannot start", "network", l.net.Name, "err", err)
		return
	}
	l.children = append(l.children, c.Spawn(props))
}

// demote stops the watcher, the subscriptions actor and the indexer.
func (l *netLeader) demote(c actor.Context) {
	l.s.cfg.Log.Info("network lease lost: no longer following the network", "network", l.net.Name, "node", l.cc.Node, "epoch", l.epoch)
	for _, pid := range l.children {
		_ = c.StopFuture(pid).Wait()
	}
	l.s.leaderKeeperGone(l.net.Name)
	l.children, l.held = nil, false
}

// recover wakes every account with pending work on the network.
func (l *netLeader) recover() {
	l.recovered = time.Now()
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	ids, err := l.s.cfg.Store.PendingAccounts(ctx, l.net.Name)
	if err != nil {
		l.s.cfg.Log.Warn("recovery: listing accounts with pending work failed", "network", l.net.Name, "err", err)
		return
	}
	for _, id := range ids {
		l.s.Wake(id, l.net.Name, false)
	}
}

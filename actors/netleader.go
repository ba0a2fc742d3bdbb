package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/indexer"
	"github.com/txengine/txengine/actors/watcher"
	"github.com/txengine/txengine/engine"
)

// netLeader is, in cluster mode, this node's candidate for one network's
// lease: while it holds the lease it runs the network's watcher and
// transfer indexer as its children, so one node of the cluster follows the
// network; when the lease goes to another node it stops them. The holder
// also wakes every account with pending work when it takes the lease, on
// every change of the cluster's membership and every RecoverEvery, so that
// the grains of a lost node resume.
type netLeader struct {
	s     *System
	cc    *ClusterConfig
	net   *engine.Network
	wcfg  watcher.Config
	ctx   context.Context
	stop  context.CancelFunc
	held  bool
	epoch int64
	// renewed is when the lease was last confirmed.
	renewed     time.Time
	recovered   time.Time
	children    []*actor.PID
	tickerDone  chan struct{}
	tickerEvery time.Duration
}

// leaderTick asks the leader to take or renew its lease.
type leaderTick struct{}

// NotInfluenceReceiveTimeout implements actor.NotInfluenceReceiveTimeout.
func (leaderTick) NotInfluenceReceiveTimeout() {}

// topologyChanged tells the leader that members joined or left.
type topologyChanged struct{}

func (l *netLeader) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		l.ctx, l.stop = context.WithCancel(context.Background())
		l.tickerEvery = l.cc.NetworkLeaseTTL / 3
		l.startTicker(c)
		c.Send(c.Self(), leaderTick{})
	case *actor.Stopping:
		close(l.tickerDone)
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
	case topologyChanged:
		if l.held {
			l.recover()
		}
	}
}

func (l *netLeader) tick(c actor.Context) {
	ctx, cancel := context.WithTimeout(l.ctx, l.tickerEvery)
	held, epoch, err := l.cc.Leases.AcquireNetworkLease(ctx, l.net.Name, l.cc.Node, l.cc.NetworkLeaseTTL)
	cancel()
	now := time.Now()
	switch {
	case err != nil:
		l.s.cfg.Log.Warn("network lease: cannot renew", "network", l.net.Name, "err", err)
		if l.held && now.Sub(l.renewed) >= l.cc.NetworkLeaseTTL {
			// It may have expired and gone to another node.
			l.demote(c)
		}
		return
	case !held:
		if l.held {
			l.demote(c)
		}
		return
	}
	l.renewed = now
	if !l.held || epoch != l.epoch {
		l.held, l.epoch = true, epoch
		l.s.cfg.Log.Info("network lease taken: following the network", "network", l.net.Name, "node", l.cc.Node, "epoch", epoch)
		l.promote(c)
		l.recover()
		return
	}
	if now.Sub(l.recovered) >= l.cc.RecoverEvery {
		l.recover()
	}
}

// promote starts the watcher and indexer of the network.
func (l *netLeader) promote(c actor.Context) {
	l.children = append(l.children, c.Spawn(watcher.Props(l.wcfg)))
	props, err := indexer.Props(indexer.Config{Network: l.net, Store: l.s.cfg.Store, Log: l.s.cfg.Log})
	if err != nil {
		l.s.cfg.Log.Error("transfer indexer cannot start", "network", l.net.Name, "err", err)
		return
	}
	l.children = append(l.children, c.Spawn(props))
}

// demote stops the watcher and indexer.
func (l *netLeader) demote(c actor.Context) {
	l.s.cfg.Log.Info("network lease lost: no longer following the network", "network", l.net.Name, "node", l.cc.Node)
	for _, pid := range l.children {
		_ = c.StopFuture(pid).Wait()
	}
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

// startTicker starts the goroutine that sends leaderTick; it stops when the
// leader stops.
func (l *netLeader) startTicker(c actor.Context) {
	l.tickerDone = make(chan struct{})
	self, root, done, every := c.Self(), c.ActorSystem().Root, l.tickerDone, l.tickerEvery
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				root.Send(self, leaderTick{})
			}
		}
	}()
}

package account

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/txengine/txengine/actors/clusterpb"
	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
)

// GrainKind is the cluster kind of account grains.
const GrainKind = "account"

// LeaseStore is what an account grain needs beyond Store: its fencing lease.
type LeaseStore interface {
	AcquireAccountLease(ctx context.Context, accountID, node string) (engine.Fence, error)
}

// GrainConfig configures the account grains of a node.
type GrainConfig struct {
	Config
	Leases LeaseStore
	// Networks are the configured networks, by name.
	Networks map[string]*engine.Network
	// Node is this node's name, recorded with the lease.
	Node string
	// Track, when set, is told of every activation of this node as it
	// starts (alive) and stops, so that the node can stop them on shutdown.
	Track func(pid *actor.PID, alive bool)
}

// GrainProps returns the props of the account grain (cluster mode): the one
// place in the cluster where an account's nonces are assigned. Its
// identity is the account id; it takes the account's lease when it
// activates (an epoch that increases on every activation) and runs one
// submitter per network under that fence, so an activation that lost the
// lease to a newer one signs nothing more and stops.
func GrainProps(cfg GrainConfig) *actor.Props {
	cfg.Config = cfg.Config.withDefaults()
	return lifecycle.Props(func() actor.Actor {
		return &grain{cfg: cfg, subs: map[string]*actor.PID{}}
	})
}

// grain is the account grain. Its state is touched only from Receive.
type grain struct {
	cfg       GrainConfig
	accountID string
	fence     engine.Fence
	subs      map[string]*actor.PID
	ctx       context.Context
	cancel    context.CancelFunc
}

// Receive implements actor.Actor.
func (g *grain) Receive(c actor.Context) {
	switch msg := c.Message().(type) {
	case *actor.Started:
		g.ctx, g.cancel = context.WithCancel(context.Background())
		c.SetReceiveTimeout(g.cfg.Idle)
		if g.cfg.Track != nil {
			g.cfg.Track(c.Self(), true)
		}
	case *cluster.ClusterInit:
		g.accountID = msg.Identity.Identity
		ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
		f, err := g.cfg.Leases.AcquireAccountLease(ctx, g.accountID, g.cfg.Node)
		cancel()
		if err != nil {
			// Messages already queued go to dead letters; their senders
			// retry, which activates the grain again.
			g.cfg.Log.Warn("account grain cannot take its lease; stopping", "account", g.accountID, "err", err)
			c.Stop(c.Self())
			return
		}
		g.fence = f
		g.cfg.Log.Debug("account grain activated", "account", g.accountID, "epoch", f.Epoch, "node", g.cfg.Node)
	case *actor.Stopping:
		if g.cfg.Track != nil {
			g.cfg.Track(c.Self(), false)
		}
		if g.cancel != nil {
			g.cancel()
		}
	case *clusterpb.Wake:
		if sub := g.submitter(c, msg.GetNetwork()); sub != nil {
			c.Send(sub, &Wake{Resync: msg.GetResync(), Accepted: msg.GetAccepted()})
		}
		if c.Sender() != nil {
			c.Respond(&clusterpb.WakeAck{})
		}
	case fenced:
		c.Stop(c.Self())
	case *actor.ReceiveTimeout:
		if g.idle() {
			c.Stop(c.Self())
		}
	}
}

// submitter returns the submitter of network, spawning it on first use; nil
// for a network this node does not know.
func (g *grain) submitter(c actor.Context, network string) *actor.PID {
	if pid, ok := g.subs[network]; ok {
		return pid
	}
	net, ok := g.cfg.Networks[network]
	if !ok || g.fence.Epoch == 0 {
		g.cfg.Log.Warn("account grain: wake for an unknown network", "account", g.accountID, "network", network)
		return nil
	}
	cfg, fence, id := g.cfg.Config, g.fence, g.accountID
	pid := c.Spawn(lifecycle.Props(func() actor.Actor {
		return &submitter{cfg: cfg, accountID: id, net: net, fence: fence}
	}))
	g.subs[network] = pid
	return pid
}

// idle reports whether the account has nothing queued or in flight on any
// network this grain serves (it may passivate; a Wake brings it back).
func (g *grain) idle() bool {
	for network := range g.subs {
		sum, err := g.cfg.Store.InFlightSummary(g.ctx, g.accountID, network)
		if err != nil || sum.Count > 0 {
			return false
		}
		ready, err := g.cfg.Store.ReadyTransactions(g.ctx, g.accountID, network, 1)
		if err != nil || len(ready) > 0 {
			return false
		}
	}
	return true
}

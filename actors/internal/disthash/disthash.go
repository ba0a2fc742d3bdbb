// Package disthash is protoactor-go's distributed-hash identity lookup
// (cluster/identitylookup/disthash at v0.0.0-20240822202345-3c0e61ca19c9,
// Apache License 2.0, Copyright Asynkron AB) with two defects fixed:
//
//   - the owner table was replaced on a topology change while requests read
//     it (a data race, reported by -race in our cluster tests; a reader
//     could also see the new table before its members were filled in and
//     find no owner): it is now built completely, then published through
//     an atomic pointer;
//   - the placement actor dereferenced a nil entry when a child it did not
//     know terminated (its PIDs were compared by pointer): PIDs are now
//     compared by value and an unknown one is ignored.
//
// Placement is unchanged: an identity belongs to the member with the
// highest rendezvous hash among the members that serve its kind, and that
// member's placement actor activates it.
package disthash

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/txengine/txengine/actors/internal/lifecycle"
)

// placementActorName is the name of each member's placement actor (the
// same as protoactor-go's, so members agree on it).
const placementActorName = "partition-activator"

// IdentityLookup implements cluster.IdentityLookup.
type IdentityLookup struct {
	m *manager
}

// New returns the identity lookup to pass to cluster.Configure.
func New() cluster.IdentityLookup { return &IdentityLookup{} }

// Get returns the PID of the activation of identity, activating it on its
// owner member when needed; nil when no member owns it or the owner does
// not answer in 5 s.
func (l *IdentityLookup) Get(identity *cluster.ClusterIdentity) *actor.PID { return l.m.get(identity) }

// RemovePid tells the members that pid, an activation of identity, ended.
func (l *IdentityLookup) RemovePid(identity *cluster.ClusterIdentity, pid *actor.PID) {
	l.m.cluster.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: pid, ClusterIdentity: identity}, true)
}

// Setup starts the lookup of c.
func (l *IdentityLookup) Setup(c *cluster.Cluster, _ []string, _ bool) {
	l.m = &manager{cluster: c}
	l.m.rdv.Store(cluster.NewRendezvous())
	l.m.start()
}

// Shutdown stops the lookup and its placement actor (and so this member's
// activations).
func (l *IdentityLookup) Shutdown() { l.m.stop() }

// manager keeps the owner table and the placement actor.
type manager struct {
	cluster     *cluster.Cluster
	topologySub *eventstream.Subscription
	placement   *actor.PID
	rdv         atomic.Pointer[cluster.Rendezvous]
}

func (m *manager) start() {
	sys := m.cluster.ActorSystem
	m.placement, _ = sys.Root.SpawnNamed(lifecycle.Guarded(lifecycle.Props(func() actor.Actor {
		return &placementActor{cluster: m.cluster, actors: map[string]grainMeta{}}
	})), placementActorName)
	m.topologySub = sys.EventStream.Subscribe(func(ev any) {
		if t, ok := ev.(*cluster.ClusterTopology); ok {
			rdv := cluster.NewRendezvous()
			rdv.UpdateMembers(t.Members)
			m.rdv.Store(rdv)
			sys.Root.Send(m.placement, t)
		}
	})
}

func (m *manager) stop() {
	sys := m.cluster.ActorSystem
	sys.EventStream.Unsubscribe(m.topologySub)
	if err := sys.Root.PoisonFuture(m.placement).Wait(); err != nil {
		m.cluster.Logger().Error("stopping the placement actor failed", slog.Any("error", err))
	}
}

func (m *manager) get(identity *cluster.ClusterIdentity) *actor.PID {
	owner := m.rdv.Load().GetByClusterIdentity(identity)
	if owner == "" {
		return nil
	}
	req := &cluster.ActivationRequest{ClusterIdentity: identity}
	res, err := m.cluster.ActorSystem.Root.RequestFuture(actor.NewPID(owner, placementActorName), req, 5*time.Second).Result()
	if err != nil {
		return nil
	}
	typed, ok := res.(*cluster.ActivationResponse)
	if !ok {
		return nil
	}
	return typed.Pid
}

// grainMeta is one activation of this member.
type grainMeta struct {
	id  *cluster.ClusterIdentity
	pid *actor.PID
}

// placementActor activates the identities this member owns, and stops
// those that moved to another member after a topology change.
type placementActor struct {
	cluster *cluster.Cluster
	actors  map[string]grainMeta
}

// Receive implements actor.Actor.
func (p *placementActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Stopping:
		p.stopAll(ctx)
	case *actor.Terminated:
		p.terminated(msg.Who)
	case *cluster.ActivationRequest:
		p.activate(ctx, msg)
	case *cluster.ClusterTopology:
		p.topology(ctx, msg)
	}
}

func (p *placementActor) terminated(who *actor.PID) {
	for key, meta := range p.actors {
		if meta.pid.Equal(who) {
			if k := p.cluster.GetClusterKind(meta.id.Kind); k != nil {
				k.Dec()
			}
			p.cluster.MemberList.BroadcastEvent(&cluster.ActivationTerminated{Pid: who, ClusterIdentity: meta.id}, true)
			delete(p.actors, key)
			return
		}
	}
}

func (p *placementActor) stopAll(ctx actor.Context) {
	futures := make([]*actor.Future, 0, len(p.actors))
	for _, meta := range p.actors {
		futures = append(futures, ctx.PoisonFuture(meta.pid))
	}
	for _, f := range futures {
		_ = f.Wait()
	}
}

func (p *placementActor) activate(ctx actor.Context, msg *cluster.ActivationRequest) {
	key := msg.ClusterIdentity.AsKey()
	if meta, ok := p.actors[key]; ok {
		ctx.Respond(&cluster.ActivationResponse{Pid: meta.pid})
		return
	}
	kind := p.cluster.GetClusterKind(msg.ClusterIdentity.Kind)
	if kind == nil {
		ctx.Logger().Error("unknown cluster kind", slog.String("kind", msg.ClusterIdentity.Kind))
		ctx.Respond(&cluster.ActivationResponse{Failed: true})
		return
	}
	pid := ctx.SpawnPrefix(cluster.WithClusterIdentity(kind.Props, msg.ClusterIdentity), msg.ClusterIdentity.Identity)
	kind.Inc()
	p.actors[key] = grainMeta{id: msg.ClusterIdentity, pid: pid}
	ctx.Respond(&cluster.ActivationResponse{Pid: pid})
}

// topology stops the activations whose identity now belongs to another
// member; the next request activates them there.
func (p *placementActor) topology(ctx actor.Context, msg *cluster.ClusterTopology) {
	rdv := cluster.NewRendezvous()
	rdv.UpdateMembers(msg.Members)
	me := p.cluster.ActorSystem.Address()
	for _, meta := range p.actors {
		if rdv.GetByClusterIdentity(meta.id) != me {
			ctx.Poison(meta.pid)
		}
	}
}

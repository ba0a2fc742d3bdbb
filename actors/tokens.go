package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/txengine/txengine/actors/clusterpb"
)

// tokensActorName is the name of the actor every cluster member runs to
// drop revoked API tokens from its HTTP layer's cache.
const tokensActorName = "tokens"

// forgetTimeout bounds TokenRevoked when its context has no deadline.
const forgetTimeout = 5 * time.Second

// tokenRevocations is this node's part of token revocation in cluster
// mode (docs/cluster.md): the "tokens" actor that answers the other
// members' ForgetToken, and the membership it asks when a token is revoked
// here. The membership comes from the cluster's topology events (the
// member list of protoactor is not safe to read from another goroutine).
type tokenRevocations struct {
	// forget drops a hash from the HTTP layer's cache; nil until the
	// server exists (its cache is then empty: nothing to drop).
	forget atomic.Pointer[func(hash []byte)]

	mu      sync.Mutex
	members []string // actor addresses, this node's included, sorted
	// changed is when members last changed (or the node started); read
	// at every request (settled), so without the lock.
	changed atomic.Pointer[time.Time]
	sub     *eventstream.Subscription
}

// membershipSettle is how long a node's membership must stay unchanged
// before it caches tokens (MembershipSettled): two polls of the
// automanaged provider, by when every member that can reach this node has
// it in its view (etcd members learn of each other sooner).
const membershipSettle = 2 * membershipPoll

// settled implements MembershipSettled.
func (t *tokenRevocations) settled() bool {
	return time.Since(*t.changed.Load()) >= membershipSettle
}

// setMembers records the members of a topology.
func (t *tokenRevocations) setMembers(members []*cluster.Member) {
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = m.Address()
	}
	slices.Sort(addrs)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Equal(addrs, t.members) {
		now := time.Now()
		t.members = addrs
		t.changed.Store(&now)
	}
}

// Receive implements actor.Actor: ForgetToken is answered once the hash is
// dropped.
func (t *tokenRevocations) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*clusterpb.ForgetToken); ok {
		if f := t.forget.Load(); f != nil && *f != nil {
			(*f)(m.GetHash())
		}
		ctx.Respond(&clusterpb.ForgetTokenAck{})
	}
}

// startTokenRevocations follows the topology and spawns the tokens actor;
// called before the member joins, so that no topology event is missed.
func (s *System) startTokenRevocations() error {
	t := &tokenRevocations{}
	started := time.Now()
	t.changed.Store(&started)
	t.sub = s.sys.EventStream.Subscribe(func(ev any) {
		if topo, ok := ev.(*cluster.ClusterTopology); ok {
			t.setMembers(topo.Members)
		}
	})
	if _, err := s.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return t }), tokensActorName); err != nil {
		s.sys.EventStream.Unsubscribe(t.sub)
		return fmt.Errorf("spawn the tokens actor: %w", err)
	}
	s.tokens = t
	return nil
}

// OnTokenRevoked sets the function that drops a revoked token's hash from
// this node's HTTP cache (http.Server.ForgetToken) when another member
// revoked it. A no-op in single-node mode.
func (s *System) OnTokenRevoked(forget func(hash []byte)) {
	if s.tokens != nil {
		s.tokens.forget.Store(&forget)
	}
}

// MembershipSettled implements http.TokenRevocations: true in single-node
// mode; in cluster mode once this node's membership view has not changed for
// membershipSettle. A node that just joined is not yet known to every
// member, and one whose view changed may be cut off from some: until then
// its HTTP layer caches no token, so a revocation it was not told of is
// seen in the database at its next request.
func (s *System) MembershipSettled() bool {
	return s.tokens == nil || s.tokens.settled()
}

// TokenRevoked implements http.TokenRevocations: it asks every other
// member of the cluster, in parallel, to drop hash, and returns nil once
// all acknowledged, or the errors of those that did not answer before ctx's
// deadline. Single-node mode has nobody to tell.
func (s *System) TokenRevoked(ctx context.Context, hash []byte) error {
	if s.tokens == nil {
		return nil
	}
	timeout := forgetTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if timeout <= 0 {
		return fmt.Errorf("tell the cluster of a revoked token: %w", context.DeadlineExceeded)
	}
	s.tokens.mu.Lock()
	members := s.tokens.members
	s.tokens.mu.Unlock()
	self := s.sys.Address()
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, addr := range members {
		if addr == self {
			continue
		}
		wg.Go(func() {
			res, err := s.sys.Root.RequestFuture(actor.NewPID(addr, tokensActorName), &clusterpb.ForgetToken{Hash: hash}, timeout).Result()
			if err == nil {
				if _, ok := res.(*clusterpb.ForgetTokenAck); !ok {
					err = fmt.Errorf("unexpected answer %T", res)
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("member %s: %w", addr, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tell the cluster of a revoked token: %w", err)
	}
	return nil
}

// close stops following the topology (the actor stops with the system).
func (t *tokenRevocations) close(es *eventstream.EventStream) {
	if t != nil {
		es.Unsubscribe(t.sub)
	}
}

package actors

import (
	"context"
	"errors"
	"fmt"
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
	members []string // actor addresses, this node's included
	sub     *eventstream.Subscription
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
	t.sub = s.sys.EventStream.Subscribe(func(ev any) {
		if topo, ok := ev.(*cluster.ClusterTopology); ok {
			addrs := make([]string, len(topo.Members))
			for i, m := range topo.Members {
				addrs[i] = m.Address()
			}
			t.mu.Lock()
			t.members = addrs
			t.mu.Unlock()
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

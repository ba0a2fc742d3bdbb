package actors

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/actors/pools"
	"github.com/txengine/txengine/engine"
)

// poolStatusTimeout bounds the node's balance read of PoolStatus.
const poolStatusTimeout = 10 * time.Second

// startPools creates the balancer (every mode); the keepers start with
// their networks (startKeeper, single-node mode).
func (s *System) startPools() {
	s.balancer = engine.NewPoolBalancer(engine.PoolBalancerConfig{Store: s.cfg.Store, Networks: s.cfg.Networks, Log: s.cfg.Log})
}

// closePools stops the balancer's reads (the keepers are actors).
func (s *System) closePools() {
	if s.balancer != nil { // nil: Start failed before it
		s.balancer.Close()
	}
}

// poolMetrics returns the pool measurements of cfg.Metrics, or none.
func (s *System) poolMetrics() engine.PoolMetrics {
	if pm, ok := s.cfg.Metrics.(engine.PoolMetrics); ok {
		return pm
	}
	return engine.NopPoolMetrics{}
}

// startKeeper spawns the pool keeper of net (single-node mode) and
// returns its pid.
func (s *System) startKeeper(net *engine.Network) *actor.PID {
	pid := s.sys.Root.Spawn(lifecycle.Guarded(s.keeperProps(net, false)))
	s.keeperPIDs[net.Name] = pid
	return pid
}

// keeperProps returns the props of a pool keeper of net. In single-node
// mode the system records its keeper (PoolStatus reads it, sends wake it);
// a network leader's keeper (cluster mode) finds its pools by reading the
// pending ones at every look, since sends are accepted on every node.
func (s *System) keeperProps(net *engine.Network, leader bool) *actor.Props {
	k := engine.NewPoolKeeper(engine.PoolKeeperConfig{
		Network: net, Store: s.cfg.Store, Submit: s, Clock: s.cfg.Clock, Log: s.cfg.Log,
		Metrics: s.poolMetrics(), LowWaterTxs: s.cfg.PoolLowWaterTxs,
	})
	if !leader {
		s.keepers[net.Name] = k
	}
	return pools.Props(pools.Config{
		Keeper: k, Network: net.Name, Store: s.cfg.Store, Log: s.cfg.Log, Every: s.cfg.PoolEvery, Rescan: leader,
	})
}

// AssignPoolMember gives a send through p (its members loaded) a member:
// the least loaded that covers need, else the least loaded with Wait set
// (engine.PoolBalancer). The pool's keeper is told it has work.
func (s *System) AssignPoolMember(ctx context.Context, p *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error) {
	a, err := s.balancer.Assign(ctx, p, need)
	if err != nil {
		return engine.PoolAssignment{}, fmt.Errorf("assign a member of pool %s: %w", p.ID, err)
	}
	s.poolWork(p, a.Wait)
	return a, nil
}

// poolWork tells p's keeper that p has work: at once when a send waits
// for a top-up, else at most once per keeper period (no message per send).
func (s *System) poolWork(p *engine.Pool, now bool) {
	pid, k := s.keeperPIDs[p.Network], s.keepers[p.Network]
	if pid == nil {
		return
	}
	if !now && k.Has(p.ID) {
		return
	}
	s.sys.Root.Send(pid, &pools.Work{PoolID: p.ID})
}

// PoolChanged tells the engine that p was created, resized or deleted:
// the balancer reads it again, its keeper looks at it.
func (s *System) PoolChanged(_ context.Context, p *engine.Pool) {
	s.balancer.Forget(p.ID)
	s.poolWork(p, true)
}

// PoolStatus returns p's live state: its members' balances (of ETH and of
// the tokens their pending transfers move), loads, nonce health, and its
// keeper's top-ups and shortfall.
func (s *System) PoolStatus(ctx context.Context, p *engine.Pool) (engine.PoolStatus, error) {
	net, ok := s.cfg.Networks[p.Network]
	if !ok {
		return engine.PoolStatus{}, engine.Errorf(engine.CodeUnavailable, "", "network %q is not configured", p.Network)
	}
	loads, err := s.cfg.Store.PoolLoads(ctx, p.ID)
	if err != nil {
		return engine.PoolStatus{}, fmt.Errorf("loads of pool %s: %w", p.ID, err)
	}
	byID := map[string]engine.PoolMemberLoad{}
	var tokens []string // those sent through the pool, and those pending
	for _, a := range s.balancer.Assets(p.ID) {
		tokens = append(tokens, engine.AssetKey(a))
	}
	for _, l := range loads {
		byID[l.AccountID] = l
		for a := range l.Reserved {
			if a != engine.AssetETH && !slices.Contains(tokens, a) {
				tokens = append(tokens, a)
			}
		}
	}
	bctx, cancel := context.WithTimeout(ctx, poolStatusTimeout)
	bal, err := engine.ReadPoolBalances(bctx, net, p.Members, tokens)
	cancel()
	if err != nil {
		s.cfg.Log.Warn("pool status: balances", "pool", p.ID, "err", err)
	}
	out := engine.PoolStatus{Members: make([]engine.PoolMemberStatus, len(p.Members))}
	for i, m := range p.Members {
		l := byID[m.AccountID]
		ms := engine.PoolMemberStatus{PoolMember: m, Queued: l.Queued, InFlight: l.InFlight, NonceHealth: s.nonceHealth(m.AccountID, p.Network),
			Window: s.nonces.Window(m.AccountID, p.Network)}
		if b := bal[m.AccountID]; b != nil {
			ms.Balance, ms.Tokens = b.ETH, b.Tokens
		}
		out.Members[i] = ms
	}
	if k := s.keepers[p.Network]; k != nil {
		out.TopUps, out.Short = k.TopUps(p.ID), k.Short(p.ID)
	}
	return out, nil
}

// nonceHealth describes a member's nonce health: "ok", or how long its
// lowest nonce has been stuck (NonceBook).
func (s *System) nonceHealth(accountID, network string) string {
	h, stuck := s.nonces.Stuck(accountID, network)
	if !stuck {
		return "ok"
	}
	return fmt.Sprintf("stuck for %d blocks at chain nonce %d (next %d)", h.StuckBlocks, h.ChainNonce, h.NextNonce)
}

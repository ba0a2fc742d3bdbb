package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/actors/pools"
	"github.com/txengine/txengine/engine"
)

// poolStatusTimeout bounds the node's balance read of PoolStatus.
const poolStatusTimeout = 10 * time.Second

// poolStore returns the store's pool methods (nil: the store keeps no
// pools; every pool method then answers unavailable).
func (s *System) poolStore() engine.PoolStore {
	ps, _ := s.cfg.Store.(engine.PoolStore)
	return ps
}

// startPools creates the balancer (every mode) and, in single-node mode,
// nothing else: the keepers start with their networks (startKeeper).
func (s *System) startPools() {
	ps := s.poolStore()
	if ps == nil {
		return
	}
	s.balancer = engine.NewPoolBalancer(engine.PoolBalancerConfig{Store: ps, Networks: s.cfg.Networks, Log: s.cfg.Log})
}

// closePools stops the balancer's reads (the keepers are actors).
func (s *System) closePools() {
	if s.balancer != nil {
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

// startKeeper spawns the pool keeper of net (single-node mode) and returns
// its pid (nil when the store keeps no pools).
func (s *System) startKeeper(net *engine.Network) *actor.PID {
	ps := s.poolStore()
	if ps == nil {
		return nil
	}
	k := engine.NewPoolKeeper(engine.PoolKeeperConfig{
		Network: net, Store: poolKeeperStore{ps, s.cfg.Store}, Submit: s, Clock: s.cfg.Clock, Log: s.cfg.Log,
		Metrics: s.poolMetrics(), LowWaterTxs: s.cfg.PoolLowWaterTxs,
	})
	pid := s.sys.Root.Spawn(lifecycle.Guarded(pools.Props(pools.Config{
		Keeper: k, Network: net.Name, Store: ps, Log: s.cfg.Log, Every: s.cfg.PoolEvery,
	})))
	s.keepers[net.Name] = k
	s.keeperPIDs[net.Name] = pid
	return pid
}

// poolKeeperStore is the keeper's view of the store: the pools, and the
// accounts (the treasury).
type poolKeeperStore struct {
	engine.PoolStore
	accounts interface {
		AccountByID(ctx context.Context, id string) (*engine.Account, error)
	}
}

// AccountByID implements engine.PoolKeeperStore.
func (p poolKeeperStore) AccountByID(ctx context.Context, id string) (*engine.Account, error) {
	return p.accounts.AccountByID(ctx, id)
}

// AssignPoolMember gives a send through p (its members loaded) a member:
// the least loaded that covers need, else the least loaded with Wait set
// (engine.PoolBalancer). The pool's keeper is told it has work.
func (s *System) AssignPoolMember(ctx context.Context, p *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error) {
	if s.balancer == nil {
		return engine.PoolAssignment{}, engine.Errorf(engine.CodeUnavailable, "", "the store keeps no pools")
	}
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
	if s.balancer != nil {
		s.balancer.Forget(p.ID)
	}
	s.poolWork(p, true)
}

// PoolStatus returns p's live state: its members' balances (of ETH and of
// the tokens their pending transfers move), loads, nonce health, and its
// keeper's top-ups and shortfall.
func (s *System) PoolStatus(ctx context.Context, p *engine.Pool) (engine.PoolStatus, error) {
	ps := s.poolStore()
	if ps == nil {
		return engine.PoolStatus{}, engine.Errorf(engine.CodeUnavailable, "", "the store keeps no pools")
	}
	net, ok := s.cfg.Networks[p.Network]
	if !ok {
		return engine.PoolStatus{}, engine.Errorf(engine.CodeUnavailable, "", "network %q is not configured", p.Network)
	}
	loads, err := ps.PoolLoads(ctx, p.ID)
	if err != nil {
		return engine.PoolStatus{}, fmt.Errorf("loads of pool %s: %w", p.ID, err)
	}
	byID := map[string]engine.PoolMemberLoad{}
	var tokens []string
	for _, l := range loads {
		byID[l.AccountID] = l
		for a := range l.Reserved {
			if a != engine.AssetETH && !contains(tokens, a) {
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
		ms := engine.PoolMemberStatus{PoolMember: m, Queued: l.Queued, InFlight: l.InFlight, NonceHealth: s.nonceHealth(m.AccountID, p.Network)}
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

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

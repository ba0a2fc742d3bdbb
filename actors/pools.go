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
	if leader {
		s.mu.Lock()
		if s.leaderKeepers == nil {
			s.leaderKeepers = map[string]*engine.PoolKeeper{}
		}
		s.leaderKeepers[net.Name] = k
		s.mu.Unlock()
	} else {
		s.keepers[net.Name] = k
	}
	return pools.Props(pools.Config{
		Keeper: k, Network: net.Name, Store: s.cfg.Store, Log: s.cfg.Log, Every: s.cfg.PoolEvery, Rescan: leader,
	})
}

// leaderKeeperGone forgets the keeper of network this node ran as its
// leader (the lease went to another node).
func (s *System) leaderKeeperGone(network string) {
	s.mu.Lock()
	delete(s.leaderKeepers, network)
	s.mu.Unlock()
}

// keeperOf returns the pool keeper of network that runs on this node
// (single-node mode, or this node leads the network), or nil.
func (s *System) keeperOf(network string) *engine.PoolKeeper {
	if k := s.keepers[network]; k != nil {
		return k
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaderKeepers[network]
}

// PoolShort returns why the pool cannot cover its members as its keeper
// last found, when the keeper runs on this node; "" otherwise (no node
// read: the transaction views ask it for every pool they show).
func (s *System) PoolShort(network, poolID string) string {
	if k := s.keeperOf(network); k != nil {
		return k.Short(poolID)
	}
	return ""
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
	// The pending top-ups before the balances, as a keeper reads them.
	tu, err := s.cfg.Store.PoolTopUps(ctx, p.ID)
	if err != nil {
		return engine.PoolStatus{}, fmt.Errorf("top-ups of pool %s: %w", p.ID, err)
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
	out.TopUps = tu.Sent
	out.Short = s.poolShortNow(ctx, net, p, engine.PoolLook{Loads: loads, Balances: bal, Pending: tu.Pending})
	return out, nil
}

// poolShortNow returns why p cannot cover its members: its keeper's
// finding where the keeper runs on this node, else assessed now as a
// keeper would from what PoolStatus read (look; cluster mode on a node
// that does not lead the network; a node that does not answer leaves it
// empty, logged).
func (s *System) poolShortNow(ctx context.Context, net *engine.Network, p *engine.Pool, look engine.PoolLook) string {
	if k := s.keeperOf(p.Network); k != nil {
		return k.Short(p.ID)
	}
	k := engine.NewPoolKeeper(engine.PoolKeeperConfig{Network: net, Store: s.cfg.Store, Clock: s.cfg.Clock, Log: s.cfg.Log,
		LowWaterTxs: s.cfg.PoolLowWaterTxs})
	actx, cancel := context.WithTimeout(ctx, poolStatusTimeout)
	defer cancel()
	short, err := k.Assess(actx, p, look)
	if err != nil {
		s.cfg.Log.Warn("pool status: shortfall", "pool", p.ID, "err", err)
	}
	return short
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

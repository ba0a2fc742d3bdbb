package http

import (
	"context"
	"slices"

	"github.com/txengine/txengine/engine"
)

// maxReasonDeps bounds the dependencies whose statuses one request reads
// for its reasons (a page of 1000 transactions may name 100 each); the
// others are named without their status.
const maxReasonDeps = 5000

// withWaitReasons sets the waitReason of the views of txs that wait
// (views[i] is txs[i]'s), from facts read once for them all (waitFacts):
// a list of 100 waiting transactions costs one read of their
// dependencies' statuses and two per pool they were sent through, not
// reads per transaction. A fact that cannot be read makes a reason less
// precise; it never fails the request.
func (s *Server) withWaitReasons(ctx context.Context, txs []*engine.Transaction, views []engine.TransactionView) {
	if !slices.ContainsFunc(txs, func(tx *engine.Transaction) bool { return tx.Status == engine.StatusWaiting }) {
		return
	}
	facts := s.waitFacts(ctx, txs)
	for i, tx := range txs {
		views[i].WaitReason = engine.WaitReason(tx, facts)
	}
}

// waitFacts reads what the reasons of the waiting transactions of txs
// need: the statuses of their dependencies (one read) and, for each pool
// through which one waits for a balance, the pool (the pool cache), its
// keeper's shortfall (memory) and its pending top-ups (one read).
func (s *Server) waitFacts(ctx context.Context, txs []*engine.Transaction) engine.WaitFacts {
	var deps []string
	seen := map[string]bool{}
	pools := map[string]string{} // pool id: network
	for _, tx := range txs {
		if tx.Status != engine.StatusWaiting {
			continue
		}
		for _, d := range tx.DependsOn {
			if !seen[d] && len(deps) < maxReasonDeps {
				seen[d] = true
				deps = append(deps, d)
			}
		}
		if tx.PoolID != "" && tx.WaitForAsset != "" {
			pools[tx.PoolID] = tx.Network
		}
	}
	f := engine.WaitFacts{Pools: make(map[string]engine.PoolWait, len(pools))}
	if len(deps) > 0 {
		st, err := s.store.Statuses(ctx, deps)
		if err != nil {
			s.log.WarnContext(ctx, "wait reasons: dependencies", "err", err)
		}
		f.Deps = st
	}
	for id, network := range pools {
		f.Pools[id] = s.poolWait(ctx, id, network)
	}
	return f
}

// poolWait is what the reasons know of pool id on network: not Known when
// it cannot be read (deleted: its transactions keep waiting for their
// member's balance, and say only that).
func (s *Server) poolWait(ctx context.Context, id, network string) engine.PoolWait {
	p, err := s.cachedPool(ctx, id)
	if err != nil {
		if !engine.IsNotFound(err) {
			s.log.WarnContext(ctx, "wait reasons: pool", "pool", id, "err", err)
		}
		return engine.PoolWait{}
	}
	w := engine.PoolWait{Known: true, Treasury: p.TreasuryID != "", Short: s.engine.PoolShort(network, id)}
	if w.Short != "" || !w.Treasury {
		return w // the pending top-ups would not change the reason
	}
	tu, err := s.store.PoolTopUps(ctx, id)
	if err != nil {
		s.log.WarnContext(ctx, "wait reasons: pending top-ups", "pool", id, "err", err)
	}
	w.PendingTopUps = tu.Pending
	return w
}

package http

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/txengine/txengine/engine"
)

// nonceStuckReader is the optional part of the Engine that knows which
// accounts its submitters find stuck (actors.System does).
type nonceStuckReader interface {
	NonceStuck(accountID, network string) (engine.NonceHealth, bool)
}

// nonceReadTimeout bounds the chain nonce read of an account view (each
// network's, read in parallel): a slow node makes the view say so rather
// than wait.
const nonceReadTimeout = 3 * time.Second

// nonceView is an account's nonce health on one network (GET
// /accounts/{id}: nonces). Nonces are null when unknown.
type nonceView struct {
	Network string `json:"network"`
	// ChainNonce is the account's nonce on chain (latest block); null when
	// the node did not answer (ChainError says why).
	ChainNonce *uint64 `json:"chainNonce"`
	// NextNonce is the nonce the account's next transaction gets: the
	// larger of the chain's nonce and the highest stored nonce + 1 (without
	// the chain's: the stored + 1, a lower bound); null when neither is known.
	NextNonce *uint64 `json:"nextNonce"`
	// LowestInFlight is the lowest nonce of the account's submitted,
	// unmined transactions; null when none; InFlight counts them.
	LowestInFlight *uint64 `json:"lowestInFlight"`
	InFlight       int     `json:"inFlight"`
	// StuckSinceBlock is the block since which the lowest nonce in flight
	// has not been mined, when the account's submitter finds it stuck; null
	// when not stuck (or when another node of a cluster runs the account).
	StuckSinceBlock *uint64 `json:"stuckSinceBlock"`
	ChainError      string  `json:"chainError,omitempty"`
}

// nonceViews returns a's nonce health on every configured network, by
// network name. The store's reads failing fails the view; a node that does
// not answer in nonceReadTimeout is reported in its network's ChainError.
func (s *Server) nonceViews(ctx context.Context, a *engine.Account) ([]nonceView, error) {
	names := make([]string, 0, len(s.networks))
	for name := range s.networks {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]nonceView, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		out[i].Network = name
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, min(nonceReadTimeout, s.cfg.ChainTimeout))
			defer cancel()
			n, err := chainOf(s.networks[name]).NonceAt(cctx, a.Address, nil)
			if err != nil {
				out[i].ChainError = networkFailure(name, err).Error()
				return
			}
			out[i].ChainNonce = &n
		}()
	}
	wg.Wait()
	stuck, _ := s.engine.(nonceStuckReader)
	for i := range out {
		if err := s.storeNonces(ctx, a, &out[i], stuck); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// storeNonces fills v (its ChainNonce read) from the store and the
// engine's stuck accounts (nil: none known).
func (s *Server) storeNonces(ctx context.Context, a *engine.Account, v *nonceView, stuck nonceStuckReader) error {
	sum, err := s.store.InFlightSummary(ctx, a.ID, v.Network)
	if err != nil {
		return fmt.Errorf("nonces of %s on %s: in flight: %w", a.ID, v.Network, err)
	}
	maxNonce, any, err := s.store.MaxNonce(ctx, a.ID, v.Network)
	if err != nil {
		return fmt.Errorf("nonces of %s on %s: highest: %w", a.ID, v.Network, err)
	}
	v.InFlight = sum.Count
	if sum.Count > 0 {
		lowest := sum.LowestNonce
		v.LowestInFlight = &lowest
	}
	switch {
	case any && (v.ChainNonce == nil || maxNonce+1 > *v.ChainNonce):
		next := maxNonce + 1
		v.NextNonce = &next
	case v.ChainNonce != nil:
		next := *v.ChainNonce
		v.NextNonce = &next
	}
	if stuck != nil && sum.Count > 0 {
		if h, ok := stuck.NonceStuck(a.ID, v.Network); ok && h.StuckSince != nil {
			since := *h.StuckSince
			v.StuckSinceBlock = &since
		}
	}
	return nil
}

package actors

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/account"
	"github.com/txengine/txengine/engine"
)

// SubmitInOrder implements engine.OrderedSubmitter: it hands txs (of one
// account and network) to their account actor one after the other from
// this goroutine, without waiting for each answer, so the actor's group
// commit stores them in this order and they take their nonces in it. The
// answers are then awaited as Submit awaits one; errs[i] is txs[i]'s
// (nil: stored).
func (s *System) SubmitInOrder(ctx context.Context, txs []*engine.Transaction) []error {
	errs := make([]error, len(txs))
	if len(txs) == 0 {
		return errs
	}
	if _, ok := s.cfg.Networks[txs[0].Network]; !ok {
		for i := range errs {
			errs[i] = engine.Errorf(engine.CodeUnavailable, "", "network %q is not configured", txs[0].Network)
		}
		return errs
	}
	timeout := s.cfg.SubmitTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	futs := make([]*actor.Future, len(txs))
	claims := make([]*engine.Claim, len(txs))
	for i, tx := range txs {
		claims[i] = engine.NewClaim()
		futs[i], errs[i] = s.request(tx.AccountID, tx.Network, &account.Submit{Tx: tx, Claim: claims[i]}, timeout)
	}
	for i, tx := range txs {
		if futs[i] == nil {
			continue // errs[i] says why
		}
		res, err := futs[i].Result()
		switch {
		case errors.Is(err, actor.ErrDeadLetter):
			// The actor stopped before it got it: as Submit, to a new one
			// (this one alone may then take a later nonce).
			_, errs[i] = s.Submit(ctx, tx)
		case err != nil:
			_, errs[i] = s.awaitCommit(tx, claims[i])
		default:
			errs[i] = res.(*account.Accepted).Err
		}
	}
	return errs
}

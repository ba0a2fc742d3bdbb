package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"time"
)

// ConditionStore is what Conditions needs of the store.
type ConditionStore interface {
	MarkWaiting(ctx context.Context, f Fence, id string) error
	MarkReady(ctx context.Context, ids []string) ([]string, error)
	// CancelTransaction fails a transaction only while it is new or
	// waiting (ErrConflict otherwise): a dependent or an expired
	// transaction that its sender submitted meanwhile is left alone.
	CancelTransaction(ctx context.Context, id string, txErr *TxError, ended time.Time) (*Transaction, error)
	Dependents(ctx context.Context, ids []string) ([]*Transaction, error)
	Statuses(ctx context.Context, ids []string) (map[string]TxStatus, error)
	// Waiting returns up to limit (all when negative) transactions of the
	// network in status waiting, in acceptance order, from the one after
	// transaction after ("": from the first).
	Waiting(ctx context.Context, network, after string, limit int) ([]*Transaction, error)
	// ExpireWaiting fails, with ExpiredError, at most limit waiting
	// transactions of network whose waitTimeout passed at now (those due
	// first), in one statement, queueing their callbacks; it returns their
	// ids.
	ExpireWaiting(ctx context.Context, network string, now time.Time, limit int) ([]string, error)
}

// ExpiredError is the error of a transaction whose conditions did not hold
// before its waitTimeout.
func ExpiredError() *TxError {
	return &TxError{Code: TxExpired, Message: "the conditions did not hold before waitTimeout"}
}

// AccountRef names the actor of an account on a network.
type AccountRef struct {
	AccountID string
	Network   string
}

// Verdict is what a transaction's conditions say now.
type Verdict int

// Verdicts of Conditions.Check.
const (
	// Ready: every condition holds; the transaction may take a nonce.
	Ready Verdict = iota
	// Wait: a dependency is not completed yet or the balance is short.
	Wait
	// Fail: a dependency failed or the wait expired.
	Fail
)

// HasConditions reports whether tx waits for something before it may be
// submitted (dependsOn, waitForAsset or a deadline).
func (t *Transaction) HasConditions() bool {
	return len(t.DependsOn) > 0 || t.WaitForAsset != ""
}

// Conditions holds transactions back until their dependencies completed
// and their sender holds the asset they wait for. A waiting transaction
// takes no nonce and blocks no later transaction of its account. Wake-ups
// are events: Resolve when transactions turn terminal (dependencies), Sweep
// on each new head (balances, deadlines).
type Conditions struct {
	store ConditionStore
	clock Clock
	log   *slog.Logger
	// sweepLimit bounds the waiting transactions one Sweep looks at, and
	// the transactions one of its expiry statements fails.
	sweepLimit int

	mu sync.Mutex
	// cursor is, by network, the last waiting transaction the previous
	// Sweep looked at: the next one goes on from there, so every waiting
	// transaction is looked at within (waiting / sweepLimit) + 1 heads
	// however many one account holds back.
	cursor map[string]string
}

// NewConditions returns the condition logic over store.
func NewConditions(store ConditionStore, clock Clock, log *slog.Logger) *Conditions {
	return &Conditions{store: store, clock: clock, log: log, sweepLimit: 5000, cursor: map[string]string{}}
}

// Check evaluates the conditions of tx on net: expiry first, then the
// dependencies, then the asset balance (one node call).
func (c *Conditions) Check(ctx context.Context, net *Network, tx *Transaction) (Verdict, *TxError, error) {
	return c.CheckWith(ctx, tx, func(ctx context.Context) (*big.Int, *TxError, error) {
		bals, errs, err := Balances(ctx, net.Chain, []BalanceQuery{assetQuery(tx)})
		if err != nil {
			return nil, nil, fmt.Errorf("balance for %s: %w", tx.ID, err)
		}
		if errs[0] != nil {
			return nil, &TxError{Code: TxInvalid, Message: fmt.Sprintf("waitForAsset %s: balance unreadable: %v", tx.WaitForAsset, errs[0])}, nil
		}
		return bals[0], nil, nil
	})
}

// CheckWith is Check with the sender's balance of the awaited asset from
// have, asked only once expiry and the dependencies hold: what is left of
// the balance for tx (Sender.admit reads a pool member's once per round,
// less what its in-flight and earlier pool transfers move). A TxError from
// have fails tx; an error leaves it waiting.
func (c *Conditions) CheckWith(ctx context.Context, tx *Transaction, have func(context.Context) (*big.Int, *TxError, error)) (Verdict, *TxError, error) {
	v, txErr, err := c.checkDeps(ctx, tx)
	if err != nil || v != Ready || tx.WaitForAsset == "" {
		return v, txErr, err
	}
	bal, txErr, err := have(ctx)
	switch {
	case err != nil:
		return Wait, nil, err
	case txErr != nil:
		return Fail, txErr, nil
	case bal.Cmp(tx.WaitForValue) < 0:
		return Wait, nil, nil
	}
	return Ready, nil, nil
}

// checkDeps evaluates expiry and dependencies only.
func (c *Conditions) checkDeps(ctx context.Context, tx *Transaction) (Verdict, *TxError, error) {
	if tx.WaitUntil != nil && !c.clock.Now().Before(*tx.WaitUntil) {
		return Fail, ExpiredError(), nil
	}
	if len(tx.DependsOn) == 0 {
		return Ready, nil, nil
	}
	statuses, err := c.store.Statuses(ctx, tx.DependsOn)
	if err != nil {
		return Wait, nil, fmt.Errorf("dependencies of %s: %w", tx.ID, err)
	}
	v, txErr := c.verdict(tx, statuses)
	return v, txErr, nil
}

// verdict evaluates expiry and the dependencies of tx given their statuses.
func (c *Conditions) verdict(tx *Transaction, statuses map[string]TxStatus) (Verdict, *TxError) {
	if tx.WaitUntil != nil && !c.clock.Now().Before(*tx.WaitUntil) {
		return Fail, ExpiredError()
	}
	verdict := Ready
	for _, dep := range tx.DependsOn {
		switch statuses[dep] {
		case StatusCompleted:
		case StatusFailed:
			return Fail, &TxError{Code: TxDependencyFailed, Message: fmt.Sprintf("dependency %s failed", dep)}
		case "":
			return Fail, &TxError{Code: TxDependencyFailed, Message: fmt.Sprintf("dependency %s does not exist", dep)}
		default:
			verdict = Wait
		}
	}
	return verdict, nil
}

// Hold marks tx (status new) waiting, then checks its dependencies again:
// a dependency that completed between the first check and the mark would
// otherwise never wake it (Resolve looked while it was still new). It
// reports whether tx is held.
//
// f is the fence of the Sender that read tx (zero in single-node mode):
// the mark is fenced, so an activation that lost the account's lease holds
// back nothing the current one may have taken; the error then wraps
// ErrFenced. The mark back to new that may follow is not fenced: it only
// returns tx to the queue, as Sweep would on the next head, and whoever
// holds the lease decides.
func (c *Conditions) Hold(ctx context.Context, f Fence, tx *Transaction) (bool, error) {
	if err := c.store.MarkWaiting(ctx, f, tx.ID); err != nil {
		if errors.Is(err, ErrConflict) {
			return true, nil // no longer new (cancelled meanwhile): nothing to submit
		}
		return false, fmt.Errorf("hold %s: %w", tx.ID, err)
	}
	if v, _, err := c.checkDeps(ctx, tx); err != nil || v == Wait || tx.WaitForAsset != "" {
		// Asset waits are looked at again on the next head (Sweep).
		return true, err
	}
	// Ready or failed: back to new; the next pump decides.
	_, err := c.store.MarkReady(ctx, []string{tx.ID})
	return false, err
}

// Resolve looks at the dependents of ids, which just turned terminal:
// dependents whose dependencies all completed go back to new, dependents of
// a failed transaction fail with dependency_failed (and so on down the
// chain). It returns the accounts to wake.
func (c *Conditions) Resolve(ctx context.Context, ids []string) ([]AccountRef, error) {
	wake := map[AccountRef]bool{}
	seen := map[string]bool{}
	for len(ids) > 0 {
		deps, err := c.store.Dependents(ctx, ids)
		if err != nil {
			return refs(wake), fmt.Errorf("dependents: %w", err)
		}
		ids = nil
		for _, d := range deps {
			if seen[d.ID] {
				continue
			}
			seen[d.ID] = true
			v, txErr, err := c.checkDeps(ctx, d)
			if err != nil {
				return refs(wake), err
			}
			switch v {
			case Fail:
				if _, err := c.store.CancelTransaction(ctx, d.ID, txErr, c.clock.Now()); errors.Is(err, ErrConflict) {
					continue // it moved on meanwhile (submitted, or ended)
				} else if err != nil {
					return refs(wake), fmt.Errorf("fail %s: %w", d.ID, err)
				}
				c.log.Info("transaction failed: dependency", "tx", d.ID, "reason", txErr.Message)
				ids = append(ids, d.ID)
			case Ready:
				if d.Status == StatusWaiting {
					if _, err := c.store.MarkReady(ctx, []string{d.ID}); err != nil {
						return refs(wake), fmt.Errorf("ready %s: %w", d.ID, err)
					}
				}
				wake[AccountRef{d.AccountID, d.Network}] = true
			}
		}
	}
	return refs(wake), nil
}

// Sweep looks at the waiting transactions of net on a new head: first
// those whose waitTimeout passed fail, by deadline, in set-based statements
// (however many others wait); then it looks at the next sweepLimit waiting
// transactions after the previous Sweep's last (their dependencies' statuses
// in one read, balances in one batch): those that failed meanwhile fail,
// those whose dependencies completed and whose sender now holds the awaited
// balance go back to new. It returns the accounts to wake and the ids of
// the transactions it failed (whose dependents the caller resolves).
func (c *Conditions) Sweep(ctx context.Context, net *Network) ([]AccountRef, []string, error) {
	failed, err := c.expire(ctx, net.Name)
	if err != nil {
		return nil, failed, err
	}
	waiting, err := c.nextWaiting(ctx, net.Name)
	if err != nil || len(waiting) == 0 {
		return nil, failed, err
	}
	statuses, err := c.store.Statuses(ctx, dependencies(waiting))
	if err != nil {
		return nil, failed, fmt.Errorf("dependencies of %d waiting transactions: %w", len(waiting), err)
	}
	var ready []string
	var asked []*Transaction
	var qs []BalanceQuery
	wake := map[AccountRef]bool{}
	for _, tx := range waiting {
		v, txErr := c.verdict(tx, statuses)
		switch {
		case v == Fail:
			if _, err := c.store.CancelTransaction(ctx, tx.ID, txErr, c.clock.Now()); errors.Is(err, ErrConflict) {
				continue // it moved on meanwhile (submitted, or ended)
			} else if err != nil {
				return nil, failed, fmt.Errorf("fail %s: %w", tx.ID, err)
			}
			failed = append(failed, tx.ID)
		case v == Wait:
			// Resolve wakes it when its dependencies complete.
		case tx.WaitForAsset != "":
			asked = append(asked, tx)
			qs = append(qs, assetQuery(tx))
		default:
			ready = append(ready, tx.ID)
			wake[AccountRef{tx.AccountID, tx.Network}] = true
		}
	}
	if len(qs) > 0 {
		bals, errs, err := Balances(ctx, net.Chain, qs)
		if err != nil {
			return nil, failed, fmt.Errorf("balances of %d waiting transactions: %w", len(qs), err)
		}
		for i, tx := range asked {
			if errs[i] == nil && bals[i].Cmp(tx.WaitForValue) >= 0 {
				ready = append(ready, tx.ID)
				wake[AccountRef{tx.AccountID, tx.Network}] = true
			}
		}
	}
	if _, err := c.store.MarkReady(ctx, ready); err != nil {
		return nil, failed, err
	}
	return refs(wake), failed, nil
}

// maxExpiryRounds bounds the expiry statements of one Sweep: more due
// transactions than that many batches wait for the next head.
const maxExpiryRounds = 4

// expire fails the waiting transactions of network whose waitTimeout
// passed, sweepLimit at a time.
func (c *Conditions) expire(ctx context.Context, network string) ([]string, error) {
	var failed []string
	for range maxExpiryRounds {
		ids, err := c.store.ExpireWaiting(ctx, network, c.clock.Now(), c.sweepLimit)
		failed = append(failed, ids...)
		if err != nil {
			return failed, fmt.Errorf("expire waiting transactions of %s: %w", network, err)
		}
		if len(ids) > 0 {
			c.log.Info("waiting transactions expired", "network", network, "count", len(ids))
		}
		if len(ids) < c.sweepLimit {
			break
		}
	}
	return failed, nil
}

// nextWaiting reads the next batch of waiting transactions of network,
// going round: after the batch that reached the end, from the first.
func (c *Conditions) nextWaiting(ctx context.Context, network string) ([]*Transaction, error) {
	c.mu.Lock()
	after := c.cursor[network]
	c.mu.Unlock()
	waiting, err := c.store.Waiting(ctx, network, after, c.sweepLimit)
	if err != nil {
		return nil, fmt.Errorf("waiting transactions of %s: %w", network, err)
	}
	next := ""
	if len(waiting) == c.sweepLimit {
		next = waiting[len(waiting)-1].ID
	}
	c.mu.Lock()
	c.cursor[network] = next
	c.mu.Unlock()
	return waiting, nil
}

// dependencies returns the ids the transactions of txs depend on, once each.
func dependencies(txs []*Transaction) []string {
	seen := map[string]bool{}
	var out []string
	for _, tx := range txs {
		for _, d := range tx.DependsOn {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

func refs(m map[AccountRef]bool) []AccountRef {
	out := make([]AccountRef, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	return out
}

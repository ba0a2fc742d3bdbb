package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// Invariant names, as violations are reported.
const (
	InvDurable    = "durable-acceptance"  // every acked transaction is stored
	InvEnds       = "liveness-ends"       // every stored transaction ended in the quiet phase
	InvNonceOnce  = "safety-nonce-unique" // no two of an account's rows share a nonce
	InvCanonical  = "safety-completed-canonical"
	InvExactlyOne = "safety-executed-once" // completed: executed once; failed: never
	InvGapless    = "safety-nonces-gapless"
	InvFIFO       = "fifo-per-account" // nonces follow the order of acceptance
)

// check reads what the store holds at the end and checks the invariants
// against the chain; violations go to res.
func (w *world) check(ctx context.Context, res *Result) error {
	rows := map[string]*engine.Transaction{}
	for _, id := range w.tried {
		tx, err := w.raw.TransactionByID(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			if w.acked[id] {
				res.Violations = append(res.Violations, fmt.Sprintf("%s: %s was accepted and is not stored", InvDurable, id))
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", id, err)
		}
		rows[id] = tx
	}
	res.Accepted = len(rows)
	versions, err := w.raw.HashesOf(ctx, w.tried)
	if err != nil {
		return fmt.Errorf("versions: %w", err)
	}
	executed := w.executions()
	for _, id := range w.tried {
		tx := rows[id]
		if tx == nil {
			continue
		}
		switch tx.Status {
		case engine.StatusCompleted:
			res.Completed++
		case engine.StatusFailed:
			res.Failed++
		default:
			res.Violations = append(res.Violations, fmt.Sprintf("%s: %s still %s after %d quiet blocks (nonce %s, error %v)",
				InvEnds, id, tx.Status, res.QuietBlocks, nonceText(tx.Nonce), tx.Error))
		}
		res.Violations = append(res.Violations, w.checkRow(tx, executed)...)
	}
	res.Violations = append(res.Violations, w.checkNonces(rows, versions)...)
	res.Violations = append(res.Violations, w.checkOrder(rows)...)
	return nil
}

// checkOrder checks that, per account, the transactions that hold a nonce
// hold them in the order they were accepted (first come, first served:
// nothing here waits for a condition).
func (w *world) checkOrder(rows map[string]*engine.Transaction) []string {
	var out []string
	last := map[common.Address]*engine.Transaction{}
	for _, id := range w.tried {
		tx := rows[id]
		if tx == nil || tx.Nonce == nil {
			continue
		}
		if prev := last[tx.From]; prev != nil && *prev.Nonce > *tx.Nonce {
			out = append(out, fmt.Sprintf("%s: %s accepted after %s holds nonce %d, below its %d", InvFIFO, tx.ID, prev.ID, *tx.Nonce, *prev.Nonce))
		}
		last[tx.From] = tx
	}
	return out
}

// executions counts, by memo, the transfers the canonical chain executed.
func (w *world) executions() map[uint64]int {
	out := map[uint64]int{}
	w.chain.Canonical(func(_ common.Address, tx *types.Transaction, r *types.Receipt) {
		if t, ok := decodeTransfer(tx.Data()); ok && r.Status == types.ReceiptStatusSuccessful {
			out[t.memo]++
		}
	})
	return out
}

// checkRow checks one stored transaction: executed at most once, once
// when completed and never when failed, and completed only from a
// canonical block at the confirmation depth.
func (w *world) checkRow(tx *engine.Transaction, executed map[uint64]int) []string {
	var out []string
	t, _ := decodeTransfer(tx.Data)
	n := executed[t.memo]
	switch {
	case n > 1:
		out = append(out, fmt.Sprintf("%s: %s (memo %d) executed %d times", InvExactlyOne, tx.ID, t.memo, n))
	case tx.Status == engine.StatusCompleted && n != 1:
		out = append(out, fmt.Sprintf("%s: %s completed but executed %d times", InvExactlyOne, tx.ID, n))
	case tx.Status == engine.StatusFailed && n != 0:
		out = append(out, fmt.Sprintf("%s: %s failed (%v) but executed on chain", InvExactlyOne, tx.ID, tx.Error))
	}
	if tx.Status != engine.StatusCompleted {
		return out
	}
	if tx.BlockNumber == nil || tx.BlockHash == nil || tx.Hash == nil {
		return append(out, fmt.Sprintf("%s: %s completed without block or hash", InvCanonical, tx.ID))
	}
	hash, ok := w.chain.BlockHash(*tx.BlockNumber)
	if !ok || hash != *tx.BlockHash {
		return append(out, fmt.Sprintf("%s: %s completed in block %d %s, not canonical", InvCanonical, tx.ID, *tx.BlockNumber, tx.BlockHash.Hex()))
	}
	if w.chain.Head() < *tx.BlockNumber+w.conf {
		out = append(out, fmt.Sprintf("%s: %s completed in block %d above the confirmation depth %d (head %d)", InvCanonical, tx.ID, *tx.BlockNumber, w.conf, w.chain.Head()))
	}
	if w.chain.byHash[*tx.Hash] != *tx.BlockNumber {
		out = append(out, fmt.Sprintf("%s: %s completed with hash %s, not in block %d", InvCanonical, tx.ID, tx.Hash.Hex(), *tx.BlockNumber))
	}
	return out
}

// checkNonces checks each account's nonces: no two rows share one, and
// every nonce the chain passed was taken by one of the row's own versions
// or by a transaction signed elsewhere (Consume), none by a version of
// another row; no row holds a nonce the chain has not reached (all ended).
func (w *world) checkNonces(rows map[string]*engine.Transaction, versions map[string][]common.Hash) []string {
	var out []string
	owner := map[common.Hash]*engine.Transaction{}
	byNonce := map[common.Address]map[uint64]*engine.Transaction{}
	for _, id := range w.tried {
		tx := rows[id]
		if tx == nil || tx.Nonce == nil {
			continue
		}
		m := byNonce[tx.From]
		if m == nil {
			m = map[uint64]*engine.Transaction{}
			byNonce[tx.From] = m
		}
		if other := m[*tx.Nonce]; other != nil {
			out = append(out, fmt.Sprintf("%s: %s and %s share nonce %d", InvNonceOnce, other.ID, tx.ID, *tx.Nonce))
		}
		m[*tx.Nonce] = tx
		for _, h := range versions[id] {
			owner[h] = tx
		}
		if tx.Hash != nil {
			owner[*tx.Hash] = tx
		}
	}
	w.chain.Canonical(func(from common.Address, tx *types.Transaction, _ *types.Receipt) {
		if isForeign(tx) {
			return // signed elsewhere
		}
		row := owner[tx.Hash()]
		switch {
		case row == nil && engine.IsFiller(tx, from) && freeNonce(byNonce[from][tx.Nonce()]):
			// The nonce doctor's filler of a gap no live row holds (a
			// nonce consumed elsewhere, its row failed nonce_consumed,
			// that a reorg then gave back).
		case row == nil:
			out = append(out, fmt.Sprintf("%s: %s's nonce %d taken by %s, no version of any stored row", InvGapless, from.Hex(), tx.Nonce(), tx.Hash().Hex()))
		case *row.Nonce != tx.Nonce():
			out = append(out, fmt.Sprintf("%s: nonce %d taken by a version of %s, stored with nonce %d", InvGapless, tx.Nonce(), row.ID, *row.Nonce))
		}
	})
	for _, a := range w.accts {
		chainNonce := w.chain.NonceOf(a.key.addr)
		var above []uint64
		for n := range byNonce[a.key.addr] {
			if n >= chainNonce {
				above = append(above, n)
			}
		}
		if len(above) == 0 {
			continue
		}
		slices.Sort(above)
		pooled := w.chain.pool.get(a.key.addr, chainNonce) != nil
		out = append(out, fmt.Sprintf("%s: account %s: chain nonce %d (in the pool: %v), %d rows hold nonces above it, from %d (%s) to %d",
			InvGapless, a.acct.ID, chainNonce, pooled, len(above), above[0], byNonce[a.key.addr][above[0]].ID, above[len(above)-1]))
	}
	return out
}

func nonceText(n *uint64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

// freeNonce reports whether a nonce held by row (nil: by none) is free for
// the nonce doctor's filler: no row holds it, or the row that did failed
// (it ended; its nonce is no longer its own).
func freeNonce(row *engine.Transaction) bool {
	return row == nil || row.Status == engine.StatusFailed
}

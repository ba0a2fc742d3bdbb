package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// settlePassed settles the transactions whose nonce the chain has passed
// for good (below the confirmation depth) and that the watcher did not
// complete within RebroadcastBlocks blocks after that.
func (s *Sender) settlePassed(ctx context.Context, head uint64, passed []*Transaction) error {
	if len(passed) == 0 {
		return nil
	}
	final, ok, err := s.finalNonce(ctx, head)
	if err != nil || !ok {
		return err
	}
	due := s.dueToSettle(head, final, passed)
	if len(due) == 0 {
		return nil
	}
	ids := make([]string, len(due))
	for i, tx := range due {
		ids[i] = tx.ID
	}
	versions, err := s.store.HashesOf(ctx, ids)
	if err != nil {
		return fmt.Errorf("in flight: versions: %w", err)
	}
	mined, lagging, err := s.minedVersions(ctx, head, due, versions)
	if err != nil {
		return err
	}
	return s.settle(ctx, due, versions, mined, lagging)
}

// finalNonce is the account's nonce on chain at the network's confirmation
// depth below head; not ok while the chain is shorter than that depth.
func (s *Sender) finalNonce(ctx context.Context, head uint64) (nonce uint64, ok bool, err error) {
	if s.net.Confirmations == 0 {
		return s.ledger.chainNonce, true, nil
	}
	if head < s.net.Confirmations {
		return 0, false, nil
	}
	n, err := s.chain().NonceAt(ctx, s.account.Address, new(big.Int).SetUint64(head-s.net.Confirmations))
	if err != nil {
		return 0, false, fmt.Errorf("in flight: final chain nonce: %w", nodeCall(err))
	}
	return n, true, nil
}

// dueToSettle returns the transactions of passed whose nonce is final
// (below final) and was first seen consumed rebroadcastBlocks blocks ago or
// more; it notes when each was first seen so.
func (s *Sender) dueToSettle(head, final uint64, passed []*Transaction) []*Transaction {
	c := &s.ledger
	var due []*Transaction
	for _, tx := range passed {
		if *tx.Nonce >= final {
			continue // mined, not yet final: the watcher completes it
		}
		since, ok := c.consumed[tx.ID]
		if !ok {
			c.consumed[tx.ID] = head
			continue
		}
		if blocksSince(head, since) >= s.net.rebroadcastBlocks() {
			due = append(due, tx)
		}
	}
	return due
}

// minedVersions reads the receipts of every version of due (versions, and
// each one's last hash) and returns, by transaction id, the receipt of the
// version mined at the confirmation depth and already past the watcher
// (mined), or whether one is mined but not that far yet (lagging).
func (s *Sender) minedVersions(ctx context.Context, head uint64, due []*Transaction, versions map[string][]common.Hash) (mined map[string]*types.Receipt, lagging map[string]bool, err error) {
	var hashes []common.Hash
	owner := map[common.Hash]*Transaction{}
	for _, tx := range due {
		for _, h := range versions[tx.ID] {
			hashes = append(hashes, h)
			owner[h] = tx
		}
		if tx.Hash != nil && owner[*tx.Hash] == nil {
			hashes = append(hashes, *tx.Hash)
			owner[*tx.Hash] = tx
		}
	}
	receipts, err := Receipts(ctx, s.chain(), hashes)
	if err != nil {
		return nil, nil, fmt.Errorf("in flight: receipts of %d versions: %w", len(hashes), nodeCall(err))
	}
	mined, lagging = map[string]*types.Receipt{}, map[string]bool{}
	processed, local := s.net.processedThrough()
	for i, r := range receipts {
		if r == nil || r.BlockNumber == nil {
			continue
		}
		id := owner[hashes[i]].ID
		switch {
		case blocksSince(head, r.BlockNumber.Uint64()) < s.net.Confirmations:
			lagging[id] = true // mined, not final yet
		case local && r.BlockNumber.Uint64() > processed:
			lagging[id] = true // the watcher has not got there yet: it completes it
		default:
			mined[id] = r
		}
	}
	return mined, lagging, nil
}

// settle ends the transactions of due that are not lagging: completed (or
// reverted) from their mined version's receipt, or failed with
// nonce_consumed when none of their versions was mined.
func (s *Sender) settle(ctx context.Context, due []*Transaction, versions map[string][]common.Hash, mined map[string]*types.Receipt, lagging map[string]bool) error {
	now := s.clock.Now()
	var outcomes []Mined
	abis := map[string]*abi.ABI{}
	for _, tx := range due {
		if lagging[tx.ID] {
			continue
		}
		delete(s.ledger.consumed, tx.ID)
		if r, ok := mined[tx.ID]; ok {
			s.log.Info("settling a mined transaction the watcher did not complete, from its receipt", "tx", tx.ID, "nonce", *tx.Nonce, "block", r.BlockNumber)
			outcomes = append(outcomes, minedOutcome(ctx, s.store, tx, r, abis, now))
			continue
		}
		txErr := &TxError{Code: TxNonceConsumed, Message: fmt.Sprintf(
			"nonce %d of the account was used on chain by a transaction this service did not sign (the key used elsewhere?); none of this transaction's %d versions was mined",
			*tx.Nonce, max(len(versions[tx.ID]), 1))}
		s.log.Warn("nonce consumed outside the service; transaction failed", "tx", tx.ID, "nonce", *tx.Nonce)
		if err := s.store.FailSubmitted(ctx, s.fence, tx.ID, txErr, now); err != nil {
			if errors.Is(err, ErrConflict) {
				continue // settled meanwhile
			}
			return fmt.Errorf("fail %s: %w", tx.ID, err)
		}
		s.failed = append(s.failed, tx.ID)
		s.metrics.TxFailed(s.accountRef(), s.net.Name, txErr.Code)
	}
	// One at a time: the watcher may complete one meanwhile (MarkMined
	// applies nothing when a row is no longer submitted).
	for _, o := range outcomes {
		if err := s.store.MarkMined(ctx, []Mined{o}); err != nil {
			if errors.Is(err, ErrConflict) {
				continue
			}
			return fmt.Errorf("settle mined transaction %s: %w", o.ID, err)
		}
		if o.Status == StatusFailed {
			s.failed = append(s.failed, o.ID)
			s.metrics.TxFailed(s.accountRef(), s.net.Name, o.Error.Code)
		}
	}
	return nil
}

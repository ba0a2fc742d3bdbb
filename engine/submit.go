package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"
)

// submitBatch submits txs (ready, in acceptance order) with one JSON-RPC
// batch of estimates, one database transaction for the signed versions and
// one JSON-RPC batch of broadcasts (each merged with other accounts' when
// the sender has a stage). It returns how many took a nonce and kept it.
// A transaction whose estimation reverts fails before a nonce is taken; a
// node error during estimation stops the batch there (the rest stays
// queued; a refusal by the node is noted on the transaction, so its record
// says why it waits). The node's answers to the broadcast are acted on by
// actOnSend.
func (s *Sender) submitBatch(ctx context.Context, txs []*Transaction, fees feeQuote, load *accountLoad) (int, error) {
	if err := s.checkFence(ctx); err != nil {
		return 0, err
	}
	chosen, signed, nodeErr, err := s.estimateAndSign(ctx, txs, fees, load)
	if err != nil || len(chosen) == 0 {
		return 0, errors.Join(err, nodeErr)
	}
	// Persist before broadcast: after a crash the signed bytes are sent again as they are.
	if err := s.markSubmitted(ctx, chosen); err != nil {
		for _, tx := range chosen {
			tx.Nonce, tx.Hash, tx.RawTx, tx.Submitted, tx.GasLimit = nil, nil, nil, nil, 0
		}
		if !errors.Is(err, ErrConflict) {
			return 0, fmt.Errorf("persist %d signed transactions: %w", len(chosen), err)
		}
		if len(chosen) == 1 {
			load.queued-- // cancelled meanwhile: the nonce was not used
			return 0, nodeErr
		}
		// One was cancelled meanwhile: go one by one.
		n := 0
		for _, tx := range chosen {
			k, err := s.submitBatch(ctx, []*Transaction{tx}, fees, load)
			n += k
			if err != nil {
				return n, err
			}
		}
		return n, nodeErr
	}
	first := s.next
	s.next += uint64(len(chosen))
	load.queued -= len(chosen)
	sendErrs, err := s.send(ctx, signed)
	if err != nil {
		// Unknown outcome for all: they count as sent and are broadcast again.
		s.log.Warn("batch broadcast outcome unknown; will re-broadcast", "transactions", len(signed), "err", err)
		sendErrs = make([]error, len(signed))
	}
	kept, busy, err := s.actOnSend(ctx, first, chosen, signed, sendErrs, fees, load)
	if err != nil {
		return kept, err
	}
	if nodeErr == nil && busy != NodeOK {
		nodeErr = fmt.Errorf("%w: %s", ErrNodeBusy, busy)
	}
	return kept, nodeErr
}

// estimateAndSign estimates the gas of txs and signs, with the next
// nonces, those that can go: it stops at the first the node refuses to
// estimate (nodeErr says why) and fails those whose estimation reverts or
// cannot be paid. err is a store or signer failure.
func (s *Sender) estimateAndSign(ctx context.Context, txs []*Transaction, fees feeQuote, load *accountLoad) (chosen []*Transaction, signed []*types.Transaction, nodeErr, err error) {
	msgs := make([]ethereum.CallMsg, len(txs))
	for i, tx := range txs {
		to := tx.ContractAddress
		msgs[i] = ethereum.CallMsg{From: s.account.Address, To: &to, Value: valueOf(tx), Data: tx.Data}
	}
	gas, estErrs, err := s.estimate(ctx, msgs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("estimate gas of %d transactions: %w", len(txs), err)
	}
	nonce := s.next
	for i, tx := range txs {
		if estErrs[i] != nil {
			if txErr := estimateFailure(estErrs[i], s.abiOf(ctx, tx)); txErr != nil {
				s.log.Info("transaction fails estimation", "tx", tx.ID, "code", txErr.Code, "reason", txErr.Message)
				if err := s.fail(ctx, tx.ID, txErr, load); err != nil {
					return nil, nil, nil, err
				}
				continue
			}
			s.noteRefusal(ctx, tx, estErrs[i])
			nodeErr = fmt.Errorf("estimate gas of %s: %w", tx.ID, estErrs[i])
			break
		}
		g := gas[i] + gas[i]*s.net.GasMarginPercent/100
		st, err := s.sign(ctx, tx, nonce, g, fees)
		if err != nil {
			return nil, nil, nil, err
		}
		signed, chosen = append(signed, st), append(chosen, tx)
		nonce++
	}
	return chosen, signed, nodeErr, nil
}

// actOnSend acts on the node's answers to the broadcast of chosen (stored
// as submitted with nonces from first on). It returns how many keep their
// nonce, and the first transient refusal of the tail (NodeOK: none).
//
// When the node refuses a tail of the batch, the nonces of that tail are
// released (nothing after them was assigned): a transient refusal
// (underpriced, pool full, rate limit, nonce too high) puts the
// transaction back in the queue, and the caller backs off; a final one
// fails it. A final refusal followed by accepted transactions fails the
// transaction with the node's reason and fills its nonce with a 0-value
// transfer to itself, so no gap is ever left and later nonces proceed; a
// transient one keeps its nonce and is sent again at the next check
// (tend). A refusal for capacity halves the window.
func (s *Sender) actOnSend(ctx context.Context, first uint64, chosen []*Transaction, signed []*types.Transaction, sendErrs []error, fees feeQuote, load *accountLoad) (kept int, busy NodeErrorKind, err error) {
	head, _ := s.net.LastHead()
	kinds := make([]NodeErrorKind, len(signed))
	for i := range signed {
		kinds[i] = ClassifyNodeError(sendErrs[i])
	}
	tail := len(signed) // start of the tail of certain rejections
	for tail > 0 && (kinds[tail-1].CertainlyRejected() || kinds[tail-1] == NodeNonceTooLow) {
		tail--
	}
	now := s.clock.Now()
	var fill []*Transaction
	for i, tx := range chosen {
		kind := kinds[i]
		if capacityRefusal(kind) {
			s.win.shrink(head)
		}
		switch {
		case i >= tail && (kind == NodeNonceTooLow || kind.Transient()):
			// Nothing after it took a nonce: back to the queue, in its place.
			switch kind {
			case NodeNonceTooLow, NodeNonceTooHigh:
				s.synced = false
			case NodeUnderpriced:
				s.net.forgetFees()
			}
			if busy == NodeOK && kind.Transient() {
				busy = kind
			}
			load.queued++
			s.log.Warn("node refused the transaction for now; requeued", "tx", tx.ID, "nonce", *tx.Nonce, "kind", kind, "reason", nodeMessage(sendErrs[i]))
			if err := s.store.ReleaseNonce(ctx, s.fence, tx.ID, nil, now); err != nil {
				return kept, busy, fmt.Errorf("release nonce %d of %s: %w", *tx.Nonce, tx.ID, err)
			}
		case i >= tail:
			txErr := refusal(kind, sendErrs[i])
			s.log.Info("broadcast rejected", "tx", tx.ID, "kind", kind)
			if err := s.store.ReleaseNonce(ctx, s.fence, tx.ID, txErr, now); err != nil {
				return kept, busy, fmt.Errorf("release nonce %d of %s: %w", *tx.Nonce, tx.ID, err)
			}
			s.failed = append(s.failed, tx.ID)
			s.metrics.TxFailed(s.accountRef(), s.net.Name, txErr.Code)
		default:
			kept++
			load.inFlight++
			s.metrics.TxSubmitted(s.accountRef(), s.net.Name)
			s.care.sentAt(tx.ID, head, true)
			switch {
			case kind.Final():
				// Later nonces were accepted: it fails with the node's
				// reason and a filler takes its nonce.
				cp := *tx
				cp.Error = refusal(kind, sendErrs[i])
				fill = append(fill, &cp)
			case kind == NodeUnderpriced:
				s.net.forgetFees()
				s.care.signed[tx.ID] = 0 // replaced at a fresh quote at the next check
				s.care.now = true
			case kind != NodeOK && kind != NodeAlreadyKnown:
				if kind == NodeNonceTooLow || kind == NodeNonceTooHigh {
					s.synced = false
				}
				s.care.sent[tx.ID] = 0 // sent again at the next check
				s.care.now = true
				s.log.Warn("broadcast not accepted; will send it again", "tx", tx.ID, "nonce", *tx.Nonce, "kind", kind)
			}
		}
	}
	if tail < len(chosen) {
		s.next = first + uint64(tail)
	}
	if s.care.checked == 0 && kept > 0 && head > 0 {
		// The window was empty: the blocks are counted from here.
		s.care.checked, s.care.since, s.care.moved, s.care.lowest = head, head, head, first
	}
	return kept, busy, s.fillRefused(ctx, head, fill, signed, fees)
}

// inFlightSummary is the store's InFlightSummary of the account, through
// the stage when there is one (so are the methods below).
func (s *Sender) inFlightSummary(ctx context.Context) (InFlightSummary, error) {
	if s.stage != nil {
		return s.stage.InFlightSummary(s.account.ID)
	}
	return s.store.InFlightSummary(ctx, s.account.ID, s.net.Name)
}

func (s *Sender) readyTransactions(ctx context.Context, limit int) ([]*Transaction, error) {
	if s.stage != nil {
		return s.stage.ReadyTransactions(s.account.ID, limit)
	}
	return s.store.ReadyTransactions(ctx, s.account.ID, s.net.Name, limit)
}

func (s *Sender) markSubmitted(ctx context.Context, txs []*Transaction) error {
	if s.stage != nil {
		return s.stage.MarkSubmitted(s.fence, txs)
	}
	return s.store.MarkSubmittedMany(ctx, s.fence, txs)
}

// maxNonce is the store's MaxNonce of the account.
func (s *Sender) maxNonce(ctx context.Context) (uint64, bool, error) {
	if s.stage != nil {
		return s.stage.MaxNonce(s.account.ID)
	}
	return s.store.MaxNonce(ctx, s.account.ID, s.net.Name)
}

// chainNonce is the account's nonce at the latest block.
func (s *Sender) chainNonce(ctx context.Context) (uint64, error) {
	if s.stage != nil {
		return s.stage.NonceAt(ctx, s.account.Address)
	}
	return s.net.Chain.NonceAt(ctx, s.account.Address, nil)
}

func (s *Sender) estimate(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	if s.stage != nil {
		return s.stage.Estimate(msgs)
	}
	return EstimateDistinct(ctx, s.net.Chain, msgs)
}

func (s *Sender) send(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	if s.stage != nil {
		return s.stage.Send(txs)
	}
	return SendAll(ctx, s.net.Chain, txs)
}

// noteRefusal records on tx (new) why the node refuses it for now, when
// the node said so (a JSON-RPC error, not a transport failure): its record
// shows node_refused with the node's message while it waits.
func (s *Sender) noteRefusal(ctx context.Context, tx *Transaction, err error) {
	if !IsNodeRefusal(err) {
		return
	}
	txErr := &TxError{Code: TxNodeRefused, Message: nodeMessage(err)}
	if tx.Error != nil && *tx.Error == *txErr {
		return
	}
	if err := s.store.NoteError(ctx, tx.ID, StatusNew, txErr); err != nil && !errors.Is(err, ErrConflict) {
		s.log.Warn("noting the node's refusal", "tx", tx.ID, "err", err)
	}
}

// valueOf is the value of tx, zero when none.
func valueOf(tx *Transaction) *big.Int {
	if tx.Value == nil {
		return new(big.Int)
	}
	return tx.Value
}

// sign builds tx with nonce, gas and fees, signs it and records nonce,
// gas limit, hash, signed bytes and the submitted time on tx (not stored).
func (s *Sender) sign(ctx context.Context, tx *Transaction, nonce, gas uint64, fees feeQuote) (*types.Transaction, error) {
	to := tx.ContractAddress
	var unsigned *types.Transaction
	if fees.baseFee != nil {
		feeCap, tip := s.net.CapFees(MaxFeePerGas(fees.baseFee, fees.tip), fees.tip)
		unsigned = types.NewTx(&types.DynamicFeeTx{
			ChainID: s.net.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: gas, To: &to, Value: valueOf(tx), Data: tx.Data,
		})
	} else {
		price, _ := s.net.CapFees(fees.gasPrice, nil)
		unsigned = types.NewTx(&types.LegacyTx{Nonce: nonce, GasPrice: price, Gas: gas, To: &to, Value: valueOf(tx), Data: tx.Data})
	}
	signed, err := s.signer.SignTx(ctx, s.account, unsigned, s.net.ChainID)
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", tx.ID, err)
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", tx.ID, err)
	}
	hash, now := signed.Hash(), s.clock.Now()
	tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = &nonce, gas, &hash, raw, &now
	return signed, nil
}

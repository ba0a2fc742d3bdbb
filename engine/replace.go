package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// CheckNow makes the next Pump look at the in-flight transactions whatever
// the head: an operator asked for one to be abandoned.
func (s *Sender) CheckNow() { s.ledger.checkNow = true }

// headFresh is how old a head observed by the network's watcher may be
// for the sender to use it instead of asking the node.
const headFresh = 3 * time.Second

// minCheckEvery is the least time between two checks of one account: on
// chains faster than a block a second, rebroadcastBlocks blocks pass in
// less than a watcher's poll, and checking each time would only add load
// (none without a poll interval: tests drive the head by hand).
func (s *Sender) minCheckEvery() time.Duration {
	if s.net.PollInterval <= 0 {
		return 0
	}
	return max(s.net.PollInterval, time.Second)
}

// reconcileInFlight looks after the in-flight transactions on new blocks. Every
// RebroadcastBlocks blocks during which the lowest nonce in flight did not
// move, it reads the account's nonce on chain (one call) and:
//   - settles a transaction whose nonce the chain has passed for good
//     without the watcher completing it: from the receipt of one of its
//     versions when there is one, else failed nonce_consumed (the key was
//     used elsewhere, or a restored backup);
//   - sends again, in one JSON-RPC batch, the signed bytes of the pending
//     ones not sent for RebroadcastBlocks blocks, and replaces with higher
//     fees those that waited ReplaceBlocks blocks with the nonce stuck
//     (the lowest one, and those whose fee cap is below today's quote);
//   - fills with a 0-value transfer to itself the nonce of a transaction
//     that must fail (abandoned by an operator, finally refused by the node)
//     while later nonces are in flight;
//
// and acts on the node's answers like on a first broadcast.
func (s *Sender) reconcileInFlight(ctx context.Context, sum InFlightSummary) error {
	if sum.Count == 0 {
		s.ledger.reset()
		return nil
	}
	head, err := s.net.Head(ctx, headFresh)
	if err != nil {
		return nodeCall(err)
	}
	c := &s.ledger
	if c.checked == 0 {
		c.checked, c.since, c.moved, c.lowest = head, head, head, sum.LowestNonce
		if !c.checkNow {
			return nil
		}
	}
	if sum.LowestNonce != c.lowest {
		c.lowest, c.moved = sum.LowestNonce, head
	}
	every := s.net.rebroadcastBlocks()
	if !c.checkNow && (blocksSince(head, c.checked) < every || blocksSince(head, c.moved) < every || time.Since(c.checkedAt) < s.minCheckEvery()) {
		return s.pruneLedger(ctx, sum.Count)
	}
	if blocksSince(head, c.moved) >= every {
		s.window.shrink(head) // the lowest nonce stays pending: the chain takes less than we send
		s.log.Debug("in-flight window halves: the lowest nonce stays pending", "window", s.window.size, "head", head, "since", c.moved)
	}
	c.checkNow, c.checked, c.checkedAt = false, head, time.Now()
	chainNonce, err := s.io.NonceAt(ctx, s.account.Address)
	if err != nil {
		return fmt.Errorf("in flight: chain nonce: %w", nodeCall(err))
	}
	if chainNonce != c.chainNonce {
		c.chainNonce, c.moved = chainNonce, head
	}
	inflight, err := s.store.InFlight(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return fmt.Errorf("in flight: %w", err)
	}
	c.keepOnly(inflight)
	if err := s.heal(ctx, head, chainNonce, inflight); err != nil {
		return err
	}
	var passed, pending []*Transaction
	for _, tx := range inflight {
		if tx.Nonce == nil {
			continue
		}
		if _, ok := c.sent[tx.ID]; !ok {
			// Not sent by this activation: in flight at least since the first look.
			c.recordSent(tx.ID, c.since, true)
		}
		if *tx.Nonce < chainNonce {
			passed = append(passed, tx)
		} else {
			pending = append(pending, tx)
		}
	}
	if err := s.settlePassed(ctx, head, passed); err != nil {
		return err
	}
	return s.resend(ctx, head, chainNonce, pending)
}

// resend sends again, replaces or fills the pending transactions that need
// it, all in one JSON-RPC batch, and acts on the answers.
func (s *Sender) resend(ctx context.Context, head, chainNonce uint64, pending []*Transaction) error {
	c := &s.ledger
	every, replaceAfter := s.net.rebroadcastBlocks(), s.net.replaceBlocks()
	stalled := blocksSince(head, c.moved)
	var fees *feeQuote
	quote := func() (feeQuote, error) {
		if fees == nil {
			q, err := s.fees(ctx)
			if err != nil {
				return q, err
			}
			fees = &q
		}
		return *fees, nil
	}
	var out []*types.Transaction
	var owners []*Transaction
	for _, tx := range pending {
		old, ok := s.storedVersion(tx)
		if !ok {
			continue
		}
		var next *types.Transaction
		switch {
		case tx.Error != nil && !IsFiller(old, s.account.Address):
			q, err := quote()
			if err != nil {
				return err
			}
			if next, err = s.filler(ctx, tx, old, q); err != nil {
				return err
			}
		case stalled >= replaceAfter && blocksSince(head, c.signed[tx.ID]) >= replaceAfter:
			q, err := quote()
			if err != nil {
				return err
			}
			if *tx.Nonce != chainNonce && !s.belowQuote(old, q) {
				break // waits for the stuck one before it, at fees that will do
			}
			if next, err = s.replacement(ctx, tx, old, q); err != nil {
				return err
			}
		}
		switch {
		case next != nil:
			out, owners = append(out, next), append(owners, tx)
			c.recordSent(tx.ID, head, true)
		case c.sent[tx.ID] == 0 || blocksSince(head, c.sent[tx.ID]) >= every && stalled >= every:
			// Asked to go again at this check (a broadcast refused for now), or due.
			out, owners = append(out, old), append(owners, tx)
			c.recordSent(tx.ID, head, false)
		}
	}
	if len(out) == 0 {
		return nil
	}
	errs, err := s.io.Send(ctx, out)
	if err != nil && IsRateLimit(err) {
		// The provider refused the whole request (429): none was sent;
		// they go again at the next check, not blocks later.
		s.ledger.sendAgain(owners)
		return err
	}
	if err != nil {
		s.log.Warn("sending in-flight transactions again: outcome unknown", "transactions", len(out), "err", err)
		return nil
	}
	return s.actOnAnswers(ctx, head, owners, out, errs)
}

// actOnAnswers acts on the node's answers to versions sent again: a
// transient refusal waits (underpriced: replaced at a fresh quote at the
// next check), a final one fails the transaction with the node's reason
// and fills its nonce.
func (s *Sender) actOnAnswers(ctx context.Context, head uint64, owners []*Transaction, sent []*types.Transaction, errs []error) error {
	var failing []*Transaction
	for i, tx := range owners {
		kind := ClassifyNodeError(errs[i])
		if capacityRefusal(kind) {
			s.refusedForCapacity(tx, head)
		}
		switch {
		case kind == NodeUnderpriced:
			s.net.forgetFees()
			s.ledger.signed[tx.ID] = 0 // replace at the next check
			s.ledger.checkNow = true
		case kind.Final() && !IsFiller(sent[i], s.account.Address):
			cp := *tx
			cp.Error = refusal(kind, errs[i])
			failing = append(failing, &cp)
		case kind != NodeOK && kind != NodeAlreadyKnown && kind != NodeNonceTooLow:
			s.log.Warn("node refused an in-flight transaction sent again", "tx", tx.ID, "nonce", *tx.Nonce, "kind", kind)
		}
	}
	if len(failing) == 0 {
		return nil
	}
	q, err := s.fees(ctx)
	if err != nil {
		return err
	}
	return s.fillRefused(ctx, head, failing, sent, q)
}

// fillRefused fails each of txs (in flight, Error set to the node's final
// refusal) by filling its nonce: one filler each, raised over its version
// among versions, stored, then sent in one batch. A refused filler is sent
// again at the next check.
func (s *Sender) fillRefused(ctx context.Context, head uint64, txs []*Transaction, versions []*types.Transaction, fees feeQuote) error {
	if len(txs) == 0 {
		return nil
	}
	byNonce := make(map[uint64]*types.Transaction, len(versions))
	for _, v := range versions {
		byNonce[v.Nonce()] = v
	}
	var out []*types.Transaction
	var owners []*Transaction
	for _, tx := range txs {
		s.log.Warn("node refused a transaction for good; failing it and filling its nonce", "tx", tx.ID, "nonce", *tx.Nonce, "reason", tx.Error.Message)
		f, err := s.filler(ctx, tx, byNonce[*tx.Nonce], fees)
		if err != nil {
			return err
		}
		if f != nil { // nil: it left flight meanwhile
			out, owners = append(out, f), append(owners, tx)
			s.ledger.recordSent(tx.ID, head, true)
		}
	}
	if len(out) == 0 {
		return nil
	}
	errs, err := s.io.Send(ctx, out)
	if err != nil {
		s.log.Warn("broadcast of fillers: outcome unknown", "transactions", len(out), "err", err)
		return nil
	}
	for i, tx := range owners {
		if kind := ClassifyNodeError(errs[i]); kind != NodeOK && kind != NodeAlreadyKnown && kind != NodeNonceTooLow {
			s.log.Warn("node refused a filler; it is sent again at the next check", "tx", tx.ID, "nonce", *tx.Nonce, "kind", kind)
			s.ledger.sent[tx.ID] = 0
			s.ledger.checkNow = true
		}
	}
	return nil
}

// storedVersion decodes tx's newest stored signed version; false (logged)
// when the stored bytes do not decode.
func (s *Sender) storedVersion(tx *Transaction) (*types.Transaction, bool) {
	var st types.Transaction
	if err := st.UnmarshalBinary(tx.RawTx); err != nil {
		s.log.Error("stored signed transaction unreadable", "tx", tx.ID, "err", err)
		return nil, false
	}
	return &st, true
}

// belowQuote reports whether old's fee cap (or gas price) is below what a
// transaction signed at q would offer: it would wait for the base fee to
// fall.
func (s *Sender) belowQuote(old *types.Transaction, q feeQuote) bool {
	if q.baseFee != nil {
		return old.GasFeeCap().Cmp(q.baseFee) < 0
	}
	return old.GasPrice().Cmp(q.gasPrice) < 0
}

// replacement signs tx again with the same nonce and fees raised by at
// least the network's bump (or today's quote when higher), up to the fee
// cap, and stores the version before it is sent; whichever version the
// chain mines completes the transaction. At the cap no new version is
// signed: nil, and the stored one is sent again as it is.
func (s *Sender) replacement(ctx context.Context, tx *Transaction, old *types.Transaction, q feeQuote) (*types.Transaction, error) {
	unsigned, ok := s.raisedFees(old, q, old.To(), old.Value(), old.Data(), old.Gas())
	if !ok {
		s.log.Warn("stuck transaction at the fee cap; sending it again as it is", "tx", tx.ID, "nonce", old.Nonce())
		return nil, nil
	}
	signed, err := s.storeVersion(ctx, tx, unsigned)
	if err != nil || signed == nil {
		return nil, err
	}
	s.log.Info("replacing a stuck transaction", "tx", tx.ID, "nonce", old.Nonce(), "old", old.Hash().Hex(), "new", signed.Hash().Hex())
	return signed, nil
}

// filler signs a 0-value transfer from the account to itself with tx's
// nonce, fees raised over old's, and stores it as tx's newest version with
// tx.Error: the transaction fails with that error when the filler is
// mined (or completes, if an earlier version is mined first).
func (s *Sender) filler(ctx context.Context, tx *Transaction, old *types.Transaction, q feeQuote) (*types.Transaction, error) {
	self := s.account.Address
	unsigned, ok := s.raisedFees(old, q, &self, new(big.Int), nil, FillerGas)
	if !ok {
		// At the cap: the filler goes at the cap itself (a node may refuse
		// it as an underpriced replacement until the old one leaves).
		unsigned = s.atCap(old, q, &self, FillerGas)
	}
	signed, err := s.storeVersion(ctx, tx, unsigned)
	if err != nil || signed == nil {
		return nil, err
	}
	s.log.Info("filling the nonce of a failing transaction", "tx", tx.ID, "nonce", old.Nonce(), "reason", tx.Error.Code, "filler", signed.Hash().Hex())
	return signed, nil
}

// storeVersion signs unsigned as tx's newest version and stores it (with
// tx.Error) before it is sent. Nil when tx left flight meanwhile.
func (s *Sender) storeVersion(ctx context.Context, tx *Transaction, unsigned *types.Transaction) (*types.Transaction, error) {
	if err := s.checkFence(ctx); err != nil {
		return nil, fmt.Errorf("new version of %s: %w", tx.ID, err)
	}
	signed, err := s.signer.SignTx(ctx, s.account.Key(), unsigned, s.net.ChainID)
	if err != nil {
		return nil, fmt.Errorf("new version of %s: sign: %w", tx.ID, err)
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("new version of %s: encode: %w", tx.ID, err)
	}
	hash, now := signed.Hash(), s.clock.Now()
	next := *tx
	next.Hash, next.RawTx, next.Replaced = &hash, raw, &now
	if err := s.store.MarkReplaced(ctx, s.fence, &next); err != nil {
		if errors.Is(err, ErrConflict) {
			return nil, nil // mined or failed meanwhile
		}
		return nil, fmt.Errorf("new version of %s: %w", tx.ID, err)
	}
	return signed, nil
}

// raisedFees builds a transaction with old's nonce and the given call, at
// fees raised by at least the network's bump over old's (or today's quote
// when higher), up to the fee cap (the network's MaxFeePerGasCap, or ten
// times today's quote). False when the cap leaves no room for the bump.
func (s *Sender) raisedFees(old *types.Transaction, q feeQuote, to *common.Address, value *big.Int, data []byte, gas uint64) (*types.Transaction, bool) {
	if old.Type() == types.DynamicFeeTxType && q.baseFee != nil {
		quoteCap := MaxFeePerGas(q.baseFee, q.tip)
		tip := maxOf(s.bump(old.GasTipCap()), q.tip)
		feeCap := maxOf(s.bump(old.GasFeeCap()), MaxFeePerGas(q.baseFee, tip))
		limit := new(big.Int).Mul(quoteCap, big.NewInt(10))
		if s.net.MaxFeePerGasCap != nil {
			limit = s.net.MaxFeePerGasCap
		}
		if feeCap.Cmp(limit) > 0 {
			feeCap = new(big.Int).Set(limit)
		}
		if tip.Cmp(feeCap) > 0 {
			tip = new(big.Int).Set(feeCap)
		}
		if feeCap.Cmp(s.bump(old.GasFeeCap())) < 0 || tip.Cmp(s.bump(old.GasTipCap())) < 0 {
			return nil, false
		}
		return types.NewTx(&types.DynamicFeeTx{
			ChainID: s.net.ChainID, Nonce: old.Nonce(), GasTipCap: tip, GasFeeCap: feeCap,
			Gas: gas, To: to, Value: value, Data: data,
		}), true
	}
	quote := q.gasPrice
	if quote == nil {
		quote = MaxFeePerGas(q.baseFee, q.tip)
	}
	price := maxOf(s.bump(old.GasPrice()), quote)
	price, _ = s.net.CapFees(price, nil)
	if price.Cmp(s.bump(old.GasPrice())) < 0 {
		return nil, false
	}
	return types.NewTx(&types.LegacyTx{Nonce: old.Nonce(), GasPrice: price, Gas: gas, To: to, Value: value, Data: data}), true
}

// atCap builds a transaction with old's nonce at the fee cap.
func (s *Sender) atCap(old *types.Transaction, q feeQuote, to *common.Address, gas uint64) *types.Transaction {
	if old.Type() == types.DynamicFeeTxType {
		return types.NewTx(&types.DynamicFeeTx{
			ChainID: s.net.ChainID, Nonce: old.Nonce(), GasTipCap: old.GasTipCap(), GasFeeCap: old.GasFeeCap(),
			Gas: gas, To: to, Value: new(big.Int),
		})
	}
	return types.NewTx(&types.LegacyTx{Nonce: old.Nonce(), GasPrice: old.GasPrice(), Gas: gas, To: to, Value: new(big.Int)})
}

// bump raises v by the network's fee bump, rounding up, so the result is
// strictly above what nodes require of a replacement.
func (s *Sender) bump(v *big.Int) *big.Int {
	out := new(big.Int).Mul(v, new(big.Int).SetUint64(100+s.net.feeBump()))
	out.Add(out, big.NewInt(99))
	return out.Div(out, big.NewInt(100))
}

// maxOf returns the larger of a and b.
func maxOf(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// refusal is the failure of a transaction the node refused for good, with
// the node's own words.
func refusal(kind NodeErrorKind, err error) *TxError {
	if kind == NodeInsufficientFunds {
		return &TxError{Code: TxInsufficientFunds, Message: "the account cannot pay for gas and value: " + nodeMessage(err)}
	}
	return &TxError{Code: TxInvalid, Message: "rejected by the node: " + nodeMessage(err)}
}

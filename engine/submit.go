package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"

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
	if err := s.io.MarkSubmitted(ctx, s.fence, chosen); err != nil {
		for _, tx := range chosen {
			tx.Nonce, tx.Hash, tx.RawTx, tx.Submitted, tx.GasLimit = nil, nil, nil, nil, 0
		}
		if !errors.Is(err, ErrConflict) {
			if !IsNotCommitted(err) {
				// The outcome is unknown: the rows may be stored, with
				// their nonces. Before another nonce is assigned the next
				// one is read again from the store (and what it holds in
				// flight is broadcast again): never reused.
				s.synced = false
			}
			return 0, fmt.Errorf("persist %d signed transactions: %w", len(chosen), err)
		}
		if len(chosen) == 1 {
			// Cancelled meanwhile (the nonce was not used), or its nonce is
			// held already by a stored row: read the next nonce again
			// before the next is assigned, so a refusal is never retried
			// with the same nonce.
			load.queued--
			s.synced = false
			return 0, nodeErr
		}
		return s.submitEach(ctx, chosen, fees, load, nodeErr)
	}
	first := s.next
	s.next += uint64(len(chosen))
	load.queued -= len(chosen)
	sendErrs, err := s.io.Send(ctx, signed)
	if err != nil && IsRateLimit(err) {
		// The provider refused the whole request (429): the node took
		// none of them, each is refused for now.
		sendErrs = make([]error, len(signed))
		for i := range sendErrs {
			sendErrs[i] = err
		}
	} else if err != nil {
		// Unknown outcome for all: they count as sent and are broadcast again.
		s.log.Warn("batch broadcast outcome unknown; will re-broadcast", "transactions", len(signed), "err", err)
		sendErrs = make([]error, len(signed))
	}
	kept, busy, err := s.actOnSend(ctx, first, chosen, signed, sendErrs, fees, load)
	if err != nil {
		return kept, err
	}
	if nodeErr == nil && busy == NodePoolFull && load.inFlight > 0 {
		// The node holds all it keeps of the account: the block that takes
		// them makes room, and its wake pumps again.
		return kept, fmt.Errorf("%w: %s: %w", ErrNodeBusy, busy, errWaitForBlock)
	}
	if nodeErr == nil && busy != NodeOK {
		nodeErr = fmt.Errorf("%w: %s", ErrNodeBusy, busy)
		if busy == NodeRateLimited {
			nodeErr = nodeCall(nodeErr)
		}
	}
	return kept, nodeErr
}

// submitEach submits txs one by one, after a batch of them was refused
// because one was cancelled meanwhile; it stops when the sender must sync
// again.
func (s *Sender) submitEach(ctx context.Context, txs []*Transaction, fees feeQuote, load *accountLoad, nodeErr error) (int, error) {
	n := 0
	for _, tx := range txs {
		if !s.synced {
			break
		}
		k, err := s.submitBatch(ctx, []*Transaction{tx}, fees, load)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nodeErr
}

// estimateAndSign estimates the gas of txs and signs, with the next
// nonces, those that can go: it stops at the first the node refuses to
// estimate (nodeErr says why) and fails those whose estimation reverts or
// cannot be paid. Signing is signPlanned's (a KMS that does not sign
// stops the batch there, nodeErr says why). err is a store or signer
// failure.
func (s *Sender) estimateAndSign(ctx context.Context, txs []*Transaction, fees feeQuote, load *accountLoad) (chosen []*Transaction, signed []*types.Transaction, nodeErr, err error) {
	msgs := make([]ethereum.CallMsg, len(txs))
	for i, tx := range txs {
		msgs[i] = ethereum.CallMsg{From: s.account.Address, To: txTo(tx), Value: valueOf(tx), Data: tx.Data}
	}
	gas, estErrs, err := s.io.Estimate(ctx, msgs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("estimate gas of %d transactions: %w", len(txs), nodeCall(err))
	}
	nonce := s.next
	var plan []plannedTx
	// The gas before each transaction: the other accounts' in flight, the
	// account's own (at this batch's first estimate each), then the batch's.
	var own uint64
	if len(gas) > 0 {
		own = uint64(load.inFlight) * gas[0]
	}
	ahead := s.net.backlogAhead(s.account.ID, s.clock.Now()) + own
	for i, tx := range txs {
		if estErrs[i] != nil {
			txErr, gone := s.estimateRefused(ctx, tx, estErrs[i])
			if txErr != nil {
				s.log.Info("transaction fails estimation", "tx", tx.ID, "code", txErr.Code, "reason", txErr.Message)
				if err := s.fail(ctx, tx.ID, txErr, load); err != nil {
					return nil, nil, nil, err
				}
				continue
			}
			if gone {
				continue // parked: the account's later transactions go on
			}
			nodeErr = fmt.Errorf("estimate gas of %s: %w", tx.ID, nodeCall(estErrs[i]))
			break
		}
		delete(s.parked, tx.ID)
		g := gas[i] + gas[i]*s.net.GasMarginPercent/100 + batchGasHeadroom(tx)
		plan = append(plan, plannedTx{tx: tx, nonce: nonce, gas: g, ahead: ahead})
		ahead += gas[i]
		nonce++
	}
	chosen, signed, signErr, err := s.signPlanned(ctx, plan, fees, load)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(plan) > 0 {
		for _, p := range plan[:len(chosen)] {
			own += p.gas
		}
		s.net.noteBacklog(s.account.ID, own, s.clock.Now())
	}
	if signErr != nil && nodeErr == nil {
		nodeErr = signErr
	}
	return chosen, signed, nodeErr, nil
}

// feeCap is p's fee cap: feeCapAhead, within the account's capLimit when
// it has one, and never below MaxFeePerGas's.
func (s *Sender) feeCap(p plannedTx, fees feeQuote) *big.Int {
	feeCap := feeCapAhead(fees.baseFee, fees.tip, p.ahead, fees.blockGas)
	if s.capLimit != nil && feeCap.Cmp(s.capLimit) > 0 {
		feeCap = maxOf(s.capLimit, MaxFeePerGas(fees.baseFee, fees.tip))
	}
	return feeCap
}

// estimateRefused acts on the node's refusal (err) to estimate tx.
// It returns the failure of tx when the refusal is its fault (a revert, a
// call that needs more gas than a block allows, funds that cannot pay) or
// the last of its parking (see parkedTx); gone when tx is parked instead.
// Neither: the refusal is not tx's (a transport failure, a rate limit, a
// node that cannot serve the call) and the batch stops there, to be tried
// again soon.
func (s *Sender) estimateRefused(ctx context.Context, tx *Transaction, err error) (txErr *TxError, gone bool) {
	if txErr := estimateFailure(err, s.abiOf(ctx, tx)); txErr != nil {
		delete(s.parked, tx.ID)
		return txErr, false
	}
	if parkable(err) {
		head, herr := s.net.Head(ctx, headFresh)
		if herr != nil {
			head, _ = s.net.LastHead()
		}
		txErr, ok := s.park(tx, head, err)
		if txErr != nil {
			return txErr, false
		}
		if ok {
			s.noteRefusal(ctx, tx, err)
			return nil, true
		}
	}
	s.noteRefusal(ctx, tx, err)
	return nil, false
}

// classifySends classifies the node's answers to a batch of sends in nonce
// order; pending says whether the node held transactions of the account
// before the batch (an insufficient-funds answer is then funds reserved
// by those, which passes as they are mined).
func classifySends(sendErrs []error, pending bool) []NodeErrorKind {
	kinds := make([]NodeErrorKind, len(sendErrs))
	for i, err := range sendErrs {
		kinds[i] = ClassifyNodeError(err)
		if kinds[i] == NodeInsufficientFunds && fundsReserved(err, pending) {
			kinds[i] = NodeFundsReserved
		}
		pending = pending || kinds[i] == NodeOK || kinds[i] == NodeAlreadyKnown
	}
	return kinds
}

// fundsBalanceRE finds the balance and the transaction's own cost in
// geth's insufficient-funds message ("balance B, queued cost Q, tx cost C,
// overshot O").
var fundsBalanceRE = regexp.MustCompile(`balance (\d+).*tx cost (\d+)`)

// fundsReserved reports whether an insufficient-funds refusal is the
// node's reservation for the account's pending transactions, which passes
// (NodeFundsReserved), rather than the account being unable to pay for
// this transaction alone. When the node says both amounts, the balance
// covering the transaction's own cost decides; otherwise, whether the
// account has transactions pending.
func fundsReserved(err error, pending bool) bool {
	if m := fundsBalanceRE.FindStringSubmatch(err.Error()); m != nil {
		balance, ok1 := new(big.Int).SetString(m[1], 10)
		cost, ok2 := new(big.Int).SetString(m[2], 10)
		if ok1 && ok2 {
			return balance.Cmp(cost) >= 0
		}
	}
	return pending
}

// rejectedTail is the start of the batch's tail of certain rejections
// (and nonces too low): no nonce from there on was taken by the node.
func rejectedTail(kinds []NodeErrorKind) int {
	tail := len(kinds)
	for tail > 0 && (kinds[tail-1].CertainlyRejected() || kinds[tail-1] == NodeNonceTooLow) {
		tail--
	}
	return tail
}

// actOnSend acts on the node's answers to the broadcast of chosen (stored
// as submitted with nonces from first on). It returns how many keep their
// nonce, and the first transient refusal of the tail (NodeOK: none).
//
// When the node refuses a tail of the batch, the nonces of that tail are
// released (nothing after them was assigned): a transient refusal
// (underpriced, pool full, rate limit, nonce too high) puts the
// transaction back in the queue, and the caller backs off; a final one
// fails it. The tail is released from its highest nonce down, one
// database transaction each, so that whatever fails midway the nonces the
// store still holds have no gap; after such a failure the next nonce is
// read again from the store. A final refusal followed by accepted
// transactions fails the transaction with the node's reason and fills its
// nonce with a 0-value transfer to itself, so no gap is ever left and
// later nonces proceed; a transient one keeps its nonce and is sent again
// at the next check (reconcileInFlight). A refusal for capacity halves the window;
// a pool-full one drops it to what the node holds (window.full).
func (s *Sender) actOnSend(ctx context.Context, first uint64, chosen []*Transaction, signed []*types.Transaction, sendErrs []error, fees feeQuote, load *accountLoad) (kept int, busy NodeErrorKind, err error) {
	head, _ := s.net.LastHead()
	kinds := classifySends(sendErrs, load.inFlight > 0)
	for i := range kinds {
		if kinds[i] == NodeInsufficientFunds && (s.raisedCapUnpaid(signed[i], sendErrs[i], fees) || awaitsTopUp(chosen[i], s.clock.Now())) {
			kinds[i] = NodeFundsReserved // back to the queue: signed again within the balance, or after the top-up
		}
	}
	tail := rejectedTail(kinds)
	var fill []*Transaction
	poolFull := false
	for i, tx := range chosen {
		if capacityRefusal(kinds[i]) {
			s.refusedForCapacity(tx, head)
			poolFull = poolFull || kinds[i] == NodePoolFull
		}
		if i >= tail {
			if busy == NodeOK && kinds[i].Transient() {
				busy = kinds[i]
			}
			continue
		}
		kept++
		load.inFlight++
		if f := s.recordBroadcast(tx, head, kinds[i], sendErrs[i]); f != nil {
			fill = append(fill, f)
		}
	}
	if poolFull {
		// The node keeps no more of the account than it holds now, nor,
		// as far as we know, of any other sender.
		s.window.full(head, load.inFlight)
		s.net.learnSenderLimit(s.window.ceiling, head)
	}
	if err := s.releaseTail(ctx, first, tail, chosen, kinds, sendErrs, load); err != nil {
		return kept, busy, err
	}
	if tookAll(kinds) {
		// A block is packed by the gas used, about the estimate: the
		// margin on each limit is refunded.
		s.window.fit(head, fees.blockGas, maxGas(signed)*100/(100+s.net.GasMarginPercent))
	}
	if s.ledger.checked == 0 && kept > 0 && head > 0 {
		// The window was empty: the blocks are counted from here.
		s.ledger.checked, s.ledger.since, s.ledger.moved, s.ledger.lowest = head, head, head, first
	}
	return kept, busy, s.fillRefused(ctx, head, fill, signed, fees)
}

// awaitsTopUp reports whether tx is a transfer through a sender pool (not
// one of the treasury's top-ups): its member's lack of funds is the
// keeper's to fill, so the transfer waits in its queue for the top-up
// instead of failing. A transfer that waited for the member's token may be
// released by the token's top-up before the gas top-up of the same round
// is mined (the keeper holds an asset's top-ups for its batch). The wait
// ends at the transfer's waitTimeout, as its wait for the token would: a
// refusal after WaitUntil fails it (insufficient_funds), so a pool whose
// treasury cannot pay does not keep it queued past the deadline its sender
// gave.
func awaitsTopUp(tx *Transaction, now time.Time) bool {
	return tx.PoolID != "" && !strings.HasPrefix(tx.OrderingKey, TopUpKeyPrefix) &&
		(tx.WaitUntil == nil || now.Before(*tx.WaitUntil))
}

// raisedCapUnpaid reports whether tx, which the node refused for
// insufficient funds (err), was signed with a fee cap above MaxFeePerGas's
// (one that covers the blocks ahead, feeCapAhead) while the account may
// afford the plain cap: tx goes back to the queue instead of failing, and
// the account's caps stay within what the balance the node reported pays
// for tx's gas and value from now on (capLimit; the plain cap when the
// node did not say).
func (s *Sender) raisedCapUnpaid(tx *types.Transaction, err error, fees feeQuote) bool {
	if fees.baseFee == nil || tx == nil || tx.Gas() == 0 {
		return false
	}
	plain, _ := s.net.CapFees(MaxFeePerGas(fees.baseFee, fees.tip), fees.tip)
	if tx.GasFeeCap().Cmp(plain) <= 0 || (s.capLimit != nil && tx.GasFeeCap().Cmp(s.capLimit) <= 0) {
		return false
	}
	limit := new(big.Int)
	if m := fundsBalanceRE.FindStringSubmatch(err.Error()); m != nil {
		if balance, ok := new(big.Int).SetString(m[1], 10); ok && balance.Cmp(tx.Value()) > 0 {
			limit.Div(balance.Sub(balance, tx.Value()), new(big.Int).SetUint64(tx.Gas()))
		}
	}
	if limit.Cmp(tx.GasFeeCap()) >= 0 {
		limit.Set(plain) // the balance paid it: reserved by others; only the plain cap is sure
	}
	s.capLimit = limit
	s.log.Info("the account cannot pay a fee cap for the blocks ahead; its caps stay within its balance", "feeCap", tx.GasFeeCap(), "limit", limit, "plain", plain)
	return true
}

// tookAll reports whether the node accepted every transaction of a batch.
func tookAll(kinds []NodeErrorKind) bool {
	for _, k := range kinds {
		if k != NodeOK && k != NodeAlreadyKnown {
			return false
		}
	}
	return true
}

// maxGas is the highest gas limit of txs.
func maxGas(txs []*types.Transaction) uint64 {
	var g uint64
	for _, tx := range txs {
		g = max(g, tx.Gas())
	}
	return g
}

// recordBroadcast records tx, which keeps its nonce, as sent at head and
// acts on the node's answer (kind, err): a final refusal returns a copy of
// tx with the node's reason, to fail by filling its nonce; an underpriced
// one is replaced, any other refusal sent again, at the next check.
func (s *Sender) recordBroadcast(tx *Transaction, head uint64, kind NodeErrorKind, err error) *Transaction {
	s.metrics.TxSubmitted(s.accountRef(), s.net.Name)
	s.ledger.recordSent(tx.ID, head, true)
	switch {
	case kind.Final():
		// Later nonces were accepted: it fails with the node's reason and
		// a filler takes its nonce.
		cp := *tx
		cp.Error = refusal(kind, err)
		return &cp
	case kind == NodeUnderpriced:
		s.net.forgetFees()
		s.ledger.signed[tx.ID] = 0 // replaced at a fresh quote at the next check
		s.ledger.checkNow = true
	case kind != NodeOK && kind != NodeAlreadyKnown:
		if kind == NodeNonceTooLow || kind == NodeNonceTooHigh {
			s.synced = false
		}
		s.ledger.sent[tx.ID] = 0 // sent again at the next check
		s.ledger.checkNow = true
		s.log.Warn("broadcast not accepted; will send it again", "tx", tx.ID, "nonce", *tx.Nonce, "kind", kind)
	}
	return nil
}

// releaseTail gives back the nonces of chosen[tail:] (numbered from first),
// which the node certainly refused, highest first: a transient refusal
// goes back to the queue, a final one fails. With a NonceBatchReleaser
// store they go in one database transaction (all or none); otherwise one
// each, s.next following each release. Either way the nonces held stay
// gapless whatever fails; on a failure (whose outcome may be unknown) the
// next nonce is read again from the store at the next pump.
func (s *Sender) releaseTail(ctx context.Context, first uint64, tail int, chosen []*Transaction, kinds []NodeErrorKind, sendErrs []error, load *accountLoad) error {
	if tail >= len(chosen) {
		return nil
	}
	rs := make([]NonceRelease, 0, len(chosen)-tail)
	requeued := 0
	for i := len(chosen) - 1; i >= tail; i-- {
		r := NonceRelease{ID: chosen[i].ID}
		switch kind := kinds[i]; {
		case kind == NodeNonceTooLow || kind == NodeNonceTooHigh:
			s.synced = false
			requeued++
		case kind == NodeUnderpriced:
			s.net.forgetFees()
			requeued++
		case kind.Transient():
			requeued++
		default:
			r.Err = refusal(kind, sendErrs[i])
			s.log.Info("broadcast rejected", "tx", chosen[i].ID, "kind", kind)
		}
		rs = append(rs, r)
	}
	if requeued > 0 {
		s.log.Warn("node refused transactions for now; requeued", "transactions", requeued, "nonces", fmt.Sprintf("%d-%d", first+uint64(tail), first+uint64(len(chosen)-1)),
			"kind", kinds[tail], "reason", nodeMessage(sendErrs[tail]))
	}
	now := s.clock.Now()
	if br, ok := s.store.(NonceBatchReleaser); ok && len(rs) > 1 {
		if err := br.ReleaseNonces(ctx, s.fence, rs, now); err != nil {
			s.next, s.synced = first+uint64(len(chosen)), false
			return fmt.Errorf("release nonces %d-%d: %w", first+uint64(tail), first+uint64(len(chosen)-1), err)
		}
		s.next = first + uint64(tail)
		for _, r := range rs {
			s.released(r, load)
		}
		return nil
	}
	for k, r := range rs {
		i := len(chosen) - 1 - k
		if err := s.store.ReleaseNonce(ctx, s.fence, r.ID, r.Err, now); err != nil {
			s.next, s.synced = first+uint64(i)+1, false
			return fmt.Errorf("release nonce %d of %s: %w", *chosen[i].Nonce, r.ID, err)
		}
		s.next = first + uint64(i)
		s.released(r, load)
	}
	return nil
}

// released counts a nonce given back: to the queue, or failed.
func (s *Sender) released(r NonceRelease, load *accountLoad) {
	if r.Err == nil {
		load.queued++
		return
	}
	s.failed = append(s.failed, r.ID)
	s.metrics.TxFailed(s.accountRef(), s.net.Name, r.Err.Code)
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

// sign builds p's transaction with its nonce and gas and fees (a fee cap
// that covers the blocks p waits for, feeCapAhead), signs it and records nonce,
// gas limit, hash, signed bytes and the submitted time on tx (not stored).
func (s *Sender) sign(ctx context.Context, p plannedTx, fees feeQuote) (*types.Transaction, error) {
	tx, nonce, gas := p.tx, p.nonce, p.gas
	to := txTo(tx)
	var unsigned *types.Transaction
	if fees.baseFee != nil {
		feeCap, tip := s.net.CapFees(s.feeCap(p, fees), fees.tip)
		unsigned = types.NewTx(&types.DynamicFeeTx{
			ChainID: s.net.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: gas, To: to, Value: valueOf(tx), Data: tx.Data,
		})
	} else {
		price, _ := s.net.CapFees(fees.gasPrice, nil)
		unsigned = types.NewTx(&types.LegacyTx{Nonce: nonce, GasPrice: price, Gas: gas, To: to, Value: valueOf(tx), Data: tx.Data})
	}
	signed, err := s.signer.SignTx(ctx, s.account.Key(), unsigned, s.net.ChainID)
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

package engine

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"
)

// SenderStore is what a Sender needs of the store.
type SenderStore interface {
	InsertTransactions(ctx context.Context, txs []*Transaction) error
	ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*Transaction, error)
	InFlight(ctx context.Context, accountID, network string) ([]*Transaction, error)
	MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error)
	MarkSubmitted(ctx context.Context, tx *Transaction) error
	MarkFailed(ctx context.Context, id string, txErr *TxError, ended time.Time) error
	ReleaseNonce(ctx context.Context, id string, txErr *TxError, ended time.Time) error
}

// Sender is the logic of one account on one network: it accepts
// transactions (one database transaction per batch), assigns gapless nonces
// in acceptance order, signs, persists the signed bytes before broadcasting,
// and keeps at most Network.InFlight transactions unconfirmed. It is not safe
// for concurrent use: the account actor owns it and calls it from one
// goroutine at a time.
type Sender struct {
	account *Account
	net     *Network
	store   SenderStore
	signer  Signer
	clock   Clock
	log     *slog.Logger

	// next is the nonce the next submitted transaction gets; valid when
	// synced is true.
	next   uint64
	synced bool
	// rebroadcastAfter is how long a submitted transaction may stay
	// unmined before its signed bytes are sent again.
	rebroadcastAfter time.Duration

	metrics Metrics
	// load is what was last reported to metrics.AccountLoad, so that the
	// next report sends deltas; countedAt is when queued was last counted
	// in the store.
	load      accountLoad
	countedAt time.Time
}

// accountLoad is an account's queue depth and in-flight count.
type accountLoad struct{ queued, inFlight int }

// queueCountEvery bounds how often a Sender counts its queue in the store
// for the queue depth gauge; in between it tracks the count itself.
const queueCountEvery = time.Second

// NewSender returns the sender of account on net.
func NewSender(account *Account, net *Network, store SenderStore, signer Signer, clock Clock, log *slog.Logger) *Sender {
	return &Sender{
		account: account, net: net, store: store, signer: signer, clock: clock,
		log:              log.With("account", account.ID, "network", net.Name),
		rebroadcastAfter: 30 * time.Second,
		metrics:          NopMetrics{},
	}
}

// SetMetrics makes the sender report to m (NopMetrics when nil).
func (s *Sender) SetMetrics(m Metrics) {
	if m == nil {
		m = NopMetrics{}
	}
	s.metrics = m
}

// reportLoad sends the change of the account's load since the last report.
func (s *Sender) reportLoad(l accountLoad) {
	l.queued, l.inFlight = max(l.queued, 0), max(l.inFlight, 0)
	if l != s.load {
		s.metrics.AccountLoad(s.account.ID, s.net.Name, l.queued-s.load.queued, l.inFlight-s.load.inFlight)
		s.load = l
	}
}

// ForgetLoad withdraws the account's load from the gauges; the actor calls
// it when it stops, since nobody reports for the account until it runs again.
func (s *Sender) ForgetLoad() { s.reportLoad(accountLoad{}) }

// countQueue recounts the account's queue in the store, at most once per
// queueCountEvery, when the store can; between counts the sender's own
// bookkeeping stands.
func (s *Sender) countQueue(ctx context.Context, load *accountLoad) {
	qc, ok := s.store.(QueueCounter)
	if !ok {
		return
	}
	now := s.clock.Now()
	if !s.countedAt.IsZero() && now.Sub(s.countedAt) < queueCountEvery {
		return
	}
	n, err := qc.CountQueued(ctx, s.account.ID, s.net.Name)
	if err != nil {
		s.log.Warn("count queued transactions for metrics", "err", err)
		return
	}
	load.queued, s.countedAt = n, now
}

// Accept stores txs durably (status new) in one database transaction.
func (s *Sender) Accept(ctx context.Context, txs []*Transaction) error {
	if err := s.store.InsertTransactions(ctx, txs); err != nil {
		return fmt.Errorf("accept %d transactions: %w", len(txs), err)
	}
	s.metrics.TxAccepted(s.account.ID, s.net.Name, len(txs))
	s.reportLoad(accountLoad{queued: s.load.queued + len(txs), inFlight: s.load.inFlight})
	return nil
}

// Sync reconciles the next nonce with the store and the chain and
// re-broadcasts the signed bytes of every in-flight transaction. The next
// nonce is the larger of the store's highest assigned nonce + 1 and the
// chain's confirmed nonce: never the pending nonce of a pool, which may hold
// transactions we do not know of, so the counter can never run ahead of
// what the store holds.
func (s *Sender) Sync(ctx context.Context) error {
	maxNonce, any, err := s.store.MaxNonce(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return fmt.Errorf("sync nonce: %w", err)
	}
	chainNonce, err := s.net.Chain.NonceAt(ctx, s.account.Address, nil)
	if err != nil {
		return fmt.Errorf("sync nonce: read chain nonce: %w", err)
	}
	next := chainNonce
	if any && maxNonce+1 > next {
		next = maxNonce + 1
	}
	s.next, s.synced = next, true
	inflight, err := s.store.InFlight(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return fmt.Errorf("sync: in flight: %w", err)
	}
	s.rebroadcast(ctx, inflight)
	return nil
}

// Resync makes the next Pump reconcile the nonce and broadcast the
// in-flight transactions again (Sync), e.g. after their blocks left the chain.
func (s *Sender) Resync() { s.synced = false }

// Pump submits ready transactions while the in-flight window has room. It
// returns how many it submitted or failed; an error means the node or the
// store is unavailable and the caller should retry later.
func (s *Sender) Pump(ctx context.Context) (int, error) {
	if !s.synced {
		if err := s.Sync(ctx); err != nil {
			return 0, err
		}
	}
	inflight, err := s.store.InFlight(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return 0, fmt.Errorf("pump: in flight: %w", err)
	}
	// The load as this pump leaves it: submit moves transactions from the
	// queue to in flight.
	load := accountLoad{queued: s.load.queued, inFlight: len(inflight)}
	defer func() {
		s.countQueue(ctx, &load)
		s.reportLoad(load)
		if s.synced {
			s.metrics.NextNonce(s.account.ID, s.net.Name, s.next)
		}
	}()
	if len(inflight) > 0 && s.clock.Now().Sub(*inflight[0].Submitted) > s.rebroadcastAfter {
		s.rebroadcast(ctx, inflight)
	}
	free := s.net.InFlight - len(inflight)
	if free <= 0 {
		return 0, nil
	}
	ready, err := s.store.ReadyTransactions(ctx, s.account.ID, s.net.Name, free)
	if err != nil {
		return 0, fmt.Errorf("pump: ready: %w", err)
	}
	if len(ready) == 0 {
		return 0, nil
	}
	fees, err := s.fees(ctx)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, tx := range ready {
		if err := s.submit(ctx, tx, fees, &load); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// feeQuote is the fee part of the transactions of one pump.
type feeQuote struct {
	baseFee  *big.Int // nil on legacy networks
	tip      *big.Int
	gasPrice *big.Int
}

func (s *Sender) fees(ctx context.Context) (feeQuote, error) {
	head, err := s.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return feeQuote{}, fmt.Errorf("fees: head: %w", err)
	}
	if head.BaseFee == nil {
		price, err := s.net.Chain.SuggestGasPrice(ctx)
		if err != nil {
			return feeQuote{}, fmt.Errorf("fees: gas price: %w", err)
		}
		return feeQuote{gasPrice: price}, nil
	}
	tip, err := s.net.Chain.SuggestGasTipCap(ctx)
	if err != nil {
		return feeQuote{}, fmt.Errorf("fees: tip: %w", err)
	}
	return feeQuote{baseFee: head.BaseFee, tip: tip}, nil
}

// submit estimates, assigns the nonce, signs, persists and broadcasts tx.
// It updates load as the transaction leaves the queue.
func (s *Sender) submit(ctx context.Context, tx *Transaction, fees feeQuote, load *accountLoad) error {
	value := tx.Value
	if value == nil {
		value = new(big.Int)
	}
	to := tx.ContractAddress
	gas, err := s.net.Chain.EstimateGas(ctx, ethereum.CallMsg{From: s.account.Address, To: &to, Value: value, Data: tx.Data})
	if err != nil {
		if txErr := estimateFailure(err); txErr != nil {
			// The transaction can not succeed now: fail it before a nonce is taken.
			s.log.Info("transaction fails estimation", "tx", tx.ID, "code", txErr.Code, "reason", txErr.Message)
			if err := s.store.MarkFailed(ctx, tx.ID, txErr, s.clock.Now()); err != nil {
				return err
			}
			load.queued--
			s.metrics.TxFailed(s.account.ID, s.net.Name, txErr.Code)
			return nil
		}
		return fmt.Errorf("estimate gas of %s: %w", tx.ID, err)
	}
	gas += gas * s.net.GasMarginPercent / 100

	nonce := s.next
	var unsigned *types.Transaction
	if fees.baseFee != nil {
		feeCap := new(big.Int).Add(new(big.Int).Mul(fees.baseFee, big.NewInt(2)), fees.tip)
		unsigned = types.NewTx(&types.DynamicFeeTx{
			ChainID: s.net.ChainID, Nonce: nonce, GasTipCap: fees.tip, GasFeeCap: feeCap,
			Gas: gas, To: &to, Value: value, Data: tx.Data,
		})
	} else {
		unsigned = types.NewTx(&types.LegacyTx{Nonce: nonce, GasPrice: fees.gasPrice, Gas: gas, To: &to, Value: value, Data: tx.Data})
	}
	signed, err := s.signer.SignTx(ctx, s.account, unsigned, s.net.ChainID)
	if err != nil {
		return fmt.Errorf("sign %s: %w", tx.ID, err)
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		return fmt.Errorf("encode %s: %w", tx.ID, err)
	}
	hash := signed.Hash()
	now := s.clock.Now()
	tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = &nonce, gas, &hash, raw, &now
	// Persist before broadcast: after a crash the signed bytes are sent again as they are.
	if err := s.store.MarkSubmitted(ctx, tx); err != nil {
		if errors.Is(err, ErrConflict) {
			// Cancelled meanwhile: the nonce was not used.
			load.queued--
			return nil
		}
		return fmt.Errorf("persist signed %s: %w", tx.ID, err)
	}
	s.next = nonce + 1
	load.queued--

	kind := ClassifyNodeError(s.net.Chain.SendTransaction(ctx, signed))
	switch {
	case kind == NodeOK || kind == NodeAlreadyKnown:
		load.inFlight++
		s.metrics.TxSubmitted(s.account.ID, s.net.Name)
		return nil
	case kind == NodeNonceTooLow:
		// Our nonce is behind the chain (the key was used elsewhere): the node
		// certainly did not take this one. Requeue it and resync.
		s.synced = false
		s.next = nonce
		s.log.Warn("nonce too low; requeued and resyncing", "tx", tx.ID, "nonce", nonce)
		load.queued++
		return s.store.ReleaseNonce(ctx, tx.ID, nil, now)
	case kind.CertainlyRejected():
		// Nothing later was assigned yet (we broadcast before assigning the
		// next), so releasing this nonce leaves no gap.
		s.next = nonce
		txErr := &TxError{Code: TxInvalid, Message: "rejected by the node: " + string(kind)}
		if kind == NodeInsufficientFunds {
			txErr = &TxError{Code: TxInsufficientFunds, Message: "the account cannot pay for gas and value"}
		}
		s.log.Info("broadcast rejected", "tx", tx.ID, "kind", kind)
		if err := s.store.ReleaseNonce(ctx, tx.ID, txErr, now); err != nil {
			return err
		}
		s.metrics.TxFailed(s.account.ID, s.net.Name, txErr.Code)
		return nil
	default:
		// Unknown outcome: counts as sent; re-broadcast until the chain settles it.
		s.log.Warn("broadcast outcome unknown; will re-broadcast", "tx", tx.ID, "kind", kind)
		load.inFlight++
		s.metrics.TxSubmitted(s.account.ID, s.net.Name)
		return nil
	}
}

// rebroadcast sends the persisted signed bytes of txs again, in nonce order.
func (s *Sender) rebroadcast(ctx context.Context, txs []*Transaction) {
	for _, tx := range txs {
		var signed types.Transaction
		if err := signed.UnmarshalBinary(tx.RawTx); err != nil {
			s.log.Error("stored signed transaction unreadable", "tx", tx.ID, "err", err)
			continue
		}
		if kind := ClassifyNodeError(s.net.Chain.SendTransaction(ctx, &signed)); kind != NodeOK && kind != NodeAlreadyKnown && kind != NodeNonceTooLow {
			s.log.Warn("re-broadcast failed", "tx", tx.ID, "kind", kind)
		}
	}
}

// estimateFailure turns an estimation error into the failure of the
// transaction when the error is the transaction's fault (revert,
// insufficient funds), or nil when it is the node's.
func estimateFailure(err error) *TxError {
	switch {
	case IsRevert(err):
		msg := "execution reverted"
		if reason, ok := revertReasonOf(err); ok {
			msg = "execution reverted: " + reason
		}
		return &TxError{Code: TxReverted, Message: msg}
	case ClassifyNodeError(err) == NodeInsufficientFunds:
		return &TxError{Code: TxInsufficientFunds, Message: "the account cannot pay for gas and value"}
	}
	return nil
}

// revertReasonOf extracts the decoded revert reason from a JSON-RPC error
// that carries revert data (go-ethereum's rpc.DataError), or from its text.
func revertReasonOf(err error) (string, bool) {
	var de interface{ ErrorData() interface{} }
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			if data, herr := hex.DecodeString(strings.TrimPrefix(s, "0x")); herr == nil {
				if reason, ok := RevertReason(data); ok {
					return reason, true
				}
			}
		}
	}
	msg := err.Error()
	if i := strings.Index(msg, "execution reverted: "); i >= 0 {
		return msg[i+len("execution reverted: "):], true
	}
	return "", false
}

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
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// SenderStore is what a Sender needs of the store.
type SenderStore interface {
	InsertTransactions(ctx context.Context, txs []*Transaction) error
	ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*Transaction, error)
	InFlight(ctx context.Context, accountID, network string) ([]*Transaction, error)
	InFlightSummary(ctx context.Context, accountID, network string) (InFlightSummary, error)
	MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error)
	MarkSubmittedMany(ctx context.Context, f Fence, txs []*Transaction) error
	FailQueued(ctx context.Context, f Fence, id string, txErr *TxError, ended time.Time) error
	ReleaseNonce(ctx context.Context, f Fence, id string, txErr *TxError, ended time.Time) error
	MarkReplaced(ctx context.Context, f Fence, tx *Transaction) error
	FailSubmitted(ctx context.Context, f Fence, id string, txErr *TxError, ended time.Time) error
	NoteError(ctx context.Context, id string, status TxStatus, txErr *TxError) error
	HashesOf(ctx context.Context, ids []string) (map[string][]common.Hash, error)
	MarkMined(ctx context.Context, outcomes []Mined) error
	ContractByID(ctx context.Context, id string) (*Contract, error)
	CheckFence(ctx context.Context, f Fence) error
}

// Sender is the logic of one account on one network: it accepts
// transactions (one database transaction per batch), assigns gapless nonces
// in acceptance order, signs, persists the signed bytes before broadcasting,
// and keeps at most Network.InFlight transactions unconfirmed. It is not safe
// for concurrent use: the account actor owns it and calls it from one
// goroutine at a time.
//
// In cluster mode the sender carries the Fence of its activation
// (WithFence): it checks the fence before it signs, and its writes are
// fenced: those that assign a nonce or store signed bytes, and those that
// fail or hold back a queued transaction (FailQueued, MarkWaiting in
// Conditions.Hold). So a stale activation signs, stores and broadcasts
// nothing new and fails or holds back no transaction the current one may
// have taken meanwhile; its Pump then returns an error wrapping ErrFenced
// and the activation must stop.
type Sender struct {
	account *Account
	net     *Network
	store   SenderStore
	signer  Signer
	clock   Clock
	log     *slog.Logger
	// fence is the activation's lease (zero: single-node mode).
	fence Fence
	// stage merges the pumps' round trips with other accounts' (nil: each
	// call on its own).
	stage *SubmitStage

	// next is the nonce the next submitted transaction gets; valid when
	// synced is true.
	next   uint64
	synced bool
	// care is what the sender tracks of its in-flight transactions, in
	// blocks (tend).
	care care
	// win is the account's adaptive in-flight window.
	win window
	// conds holds back transactions whose conditions do not hold (nil:
	// conditions are not looked at).
	conds *Conditions
	// failed collects the ids of the transactions this sender failed since
	// the last TakeFailed: their dependents must be resolved.
	failed []string
	// abis caches the parsed ABIs of contracts, to decode revert reasons
	// (custom errors included).
	abis map[string]*abi.ABI

	metrics Metrics
	// load is what was last reported to metrics.AccountLoad, so that the
	// next report sends deltas; countedAt is when queued was last counted
	// in the store.
	load      accountLoad
	countedAt time.Time
	// drained is set when the last Pump found the queue empty.
	drained bool
}

// accountLoad is an account's queue depth and in-flight count.
type accountLoad struct{ queued, inFlight int }

// queueCountEvery bounds how often a Sender counts its queue in the store
// for the queue depth gauge; in between it tracks the count itself.
const queueCountEvery = time.Second

// WithConditions makes the sender hold back transactions whose
// dependencies or awaited balance are not there yet.
func (s *Sender) WithConditions(c *Conditions) *Sender {
	s.conds = c
	return s
}

// WithFence makes the sender's writes fenced by f, the Fence of the
// account's activation (AcquireAccountLease). The zero Fence, the default,
// is single-node mode: nothing is checked.
func (s *Sender) WithFence(f Fence) *Sender {
	s.fence = f
	return s
}

// WithStage makes the sender's pumps read, write and call the node
// through st, the SubmitStage of its network, merged with the pumps of
// other accounts.
func (s *Sender) WithStage(st *SubmitStage) *Sender {
	s.stage = st
	return s
}

// checkFence returns an error wrapping ErrFenced when the sender's fence is
// no longer current; nil in single-node mode.
func (s *Sender) checkFence(ctx context.Context) error {
	if s.fence.IsZero() {
		return nil
	}
	if err := s.store.CheckFence(ctx, s.fence); err != nil {
		return fmt.Errorf("check the lease of account %s (epoch %d): %w", s.account.ID, s.fence.Epoch, err)
	}
	return nil
}

// TakeFailed returns and forgets the ids of the transactions the sender
// failed (estimation revert, certain rejection, failed condition).
func (s *Sender) TakeFailed() []string {
	f := s.failed
	s.failed = nil
	return f
}

// fail marks tx (queued: new, as the sender read it) failed, remembers it
// for TakeFailed and counts it. The write is fenced and conditional on the
// transaction being still new (FailQueued): a transaction that moved on
// meanwhile (cancelled) is skipped; ErrFenced (another activation took the
// account, and may have submitted it) is returned, wrapped.
func (s *Sender) fail(ctx context.Context, id string, txErr *TxError, load *accountLoad) error {
	if err := s.store.FailQueued(ctx, s.fence, id, txErr, s.clock.Now()); err != nil {
		if errors.Is(err, ErrConflict) {
			load.queued-- // no longer queued: cancelled meanwhile
			return nil
		}
		return fmt.Errorf("fail %s: %w", id, err)
	}
	load.queued--
	s.failed = append(s.failed, id)
	s.metrics.TxFailed(s.account.ID, s.net.Name, txErr.Code)
	return nil
}

// NewSender returns the sender of account on net.
func NewSender(account *Account, net *Network, store SenderStore, signer Signer, clock Clock, log *slog.Logger) *Sender {
	return &Sender{
		account: account, net: net, store: store, signer: signer, clock: clock,
		log:     log.With("account", account.ID, "network", net.Name),
		metrics: NopMetrics{},
		care:    newCare(),
		win:     newWindow(net),
	}
}

// SetMetrics makes the sender report to m (NopMetrics when nil).
func (s *Sender) SetMetrics(m Metrics) {
	if m == nil {
		m = NopMetrics{}
	}
	s.metrics = m
	// The account's load series exist from the start, at zero.
	m.AccountLoad(s.account.ID, s.net.Name, 0, 0)
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
	if !ok && s.stage == nil {
		return
	}
	now := s.clock.Now()
	if !s.countedAt.IsZero() && now.Sub(s.countedAt) < queueCountEvery {
		return
	}
	var n int
	var err error
	if s.stage != nil {
		n, err = s.stage.CountQueued(s.account.ID)
	} else {
		n, err = qc.CountQueued(ctx, s.account.ID, s.net.Name)
	}
	if err != nil {
		s.log.Warn("count queued transactions for metrics", "err", err)
		return
	}
	load.queued, s.countedAt = n, now
}

// Committer stores transactions (status new) in one database transaction:
// every one or none. CommitQueue implements it, merging the commits of
// many callers.
type Committer interface {
	// Commit stores txs and returns the outcome of each (nil: stored).
	// claims (nil, or one per transaction) are taken when their
	// transactions go into the commit; an abandoned one is not written
	// (ErrAbandoned).
	Commit(ctx context.Context, txs []*Transaction, claims []*Claim) []error
}

// Accept stores txs durably (status new) in one database transaction, the
// group commit of an account actor, and returns the outcome of each
// transaction (nil: stored; see Committer).
func Accept(ctx context.Context, store Committer, txs []*Transaction, claims []*Claim) []error {
	errs := store.Commit(ctx, txs, claims)
	for i, err := range errs {
		if err != nil && !errors.Is(err, ErrAbandoned) {
			errs[i] = fmt.Errorf("accept %d transactions: %w", len(txs), err)
		}
	}
	return errs
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
	chainNonce, err := s.chainNonce(ctx)
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
	s.care.reset()
	if len(inflight) == 0 {
		return nil
	}
	head, _ := s.net.LastHead()
	signed := make([]*types.Transaction, 0, len(inflight))
	for _, tx := range inflight {
		st, ok := s.storedVersion(tx)
		if !ok {
			continue
		}
		signed = append(signed, st)
		s.care.sentAt(tx.ID, head, true)
	}
	// One batch; the answers are looked at by the next checks (tend).
	if _, err := s.send(ctx, signed); err != nil {
		s.log.Warn("sync: sending in-flight transactions again: outcome unknown", "transactions", len(signed), "err", err)
	}
	return nil
}

// WindowFull reports whether the last Pump left the in-flight window full:
// then no transaction can be submitted until one leaves the window (mined,
// failed, replaced by a re-sync).
func (s *Sender) WindowFull() bool {
	return s.synced && s.load.inFlight >= s.win.size
}

// Window is the account's in-flight window now.
func (s *Sender) Window() int { return s.win.size }

// Idle reports whether the last Pump left nothing to look after: nothing in
// flight and the queue empty. Until new work wakes it, a periodic check of
// an idle account would only read the store to find that again.
func (s *Sender) Idle() bool {
	return s.synced && s.drained && s.load.inFlight == 0
}

// Resync makes the next Pump reconcile the nonce and broadcast the
// in-flight transactions again (Sync), e.g. after their blocks left the chain.
func (s *Sender) Resync() { s.synced = false }

// Pump submits ready transactions while the in-flight window has room. It
// returns how many it submitted or failed; an error means the node or the
// store is unavailable and the caller should retry later, unless it wraps
// ErrFenced: another activation took the account's lease, and this one must
// stop (nothing was signed, stored, broadcast, failed or held back after
// that).
func (s *Sender) Pump(ctx context.Context) (int, error) {
	if !s.synced {
		if err := s.Sync(ctx); err != nil {
			return 0, err
		}
	}
	sum, err := s.inFlightSummary(ctx)
	if err != nil {
		return 0, fmt.Errorf("pump: in flight: %w", err)
	}
	// The load as this pump leaves it: submit moves transactions from the
	// queue to in flight.
	load := accountLoad{queued: s.load.queued, inFlight: sum.Count}
	head, _ := s.net.LastHead()
	if s.win.grow(head) {
		s.log.Debug("in-flight window grows", "window", s.win.size, "head", head)
	}
	defer func() {
		s.win.limited = s.synced && !s.drained && load.inFlight >= s.win.size
		s.countQueue(ctx, &load)
		s.reportLoad(load)
		if s.synced {
			s.metrics.NextNonce(s.account.ID, s.net.Name, s.next)
		}
	}()
	if err := s.tend(ctx, sum); err != nil {
		return 0, err
	}
	free := s.win.size - sum.Count
	done := 0
	s.drained = false
	var fees *feeQuote
	var batch []*Transaction
	for free > 0 {
		asked := free
		ready, err := s.readyTransactions(ctx, asked)
		if err != nil {
			return done, fmt.Errorf("pump: ready: %w", err)
		}
		// again is set when a transaction left the queue without using the
		// window (held back, failed) or came back to it: fetch once more.
		again := false
		for _, tx := range ready {
			if s.conds != nil && tx.HasConditions() {
				v, txErr, err := s.conds.Check(ctx, s.net, tx)
				if err != nil {
					return done, err
				}
				if v == Fail {
					if err := s.fail(ctx, tx.ID, txErr, &load); err != nil {
						return done, err
					}
					done, again = done+1, true
					continue
				}
				if v == Wait {
					if _, err := s.conds.Hold(ctx, s.fence, tx); err != nil {
						return done, err
					}
					again = true
					continue
				}
			}
			batch = append(batch, tx)
		}
		if len(batch) > 0 {
			if fees == nil {
				q, err := s.fees(ctx)
				if err != nil {
					return done, err
				}
				fees = &q
			}
			n, err := s.submitBatch(ctx, batch, *fees, &load)
			done, free = done+n, free-n
			if err != nil {
				return done, err
			}
			if n < len(batch) {
				again = true // some failed before taking a nonce, or went back to the queue
			}
			batch = batch[:0]
			if !s.synced {
				break // the chain's nonce is not what we thought: resync first
			}
		}
		if !again && len(ready) < asked {
			s.drained = true
			break // the queue is empty
		}
		if !again {
			continue // the window decides (free is 0 now)
		}
		if len(ready) == 0 {
			break
		}
	}
	return done, nil
}

// submitBatch submits txs (ready, in acceptance order) with one JSON-RPC
// batch of estimates, one database transaction for the signed versions and
// one JSON-RPC batch of broadcasts. It returns how many took a nonce and
// kept it. A transaction whose estimation reverts fails before a nonce is
// taken; a node error during estimation stops the batch there (the rest
// stays queued; a refusal by the node is noted on the transaction, so its
// record says why it waits). When the node refuses a tail of the batch,
// the nonces of that tail are released (nothing after them was assigned):
// a transient refusal (underpriced, pool full, rate limit, nonce too high)
// puts the transaction back in the queue and the error returned wraps
// ErrNodeBusy, so the caller backs off; a final one fails it. A final
// refusal followed by accepted transactions fails the transaction with the
// node's reason and fills its nonce with a 0-value transfer to itself, so
// no gap is ever left and later nonces proceed; a transient one keeps its
// nonce and is sent again at the next check (tend).
func (s *Sender) submitBatch(ctx context.Context, txs []*Transaction, fees feeQuote, load *accountLoad) (int, error) {
	if err := s.checkFence(ctx); err != nil {
		return 0, err
	}
	msgs := make([]ethereum.CallMsg, len(txs))
	for i, tx := range txs {
		to := tx.ContractAddress
		msgs[i] = ethereum.CallMsg{From: s.account.Address, To: &to, Value: valueOf(tx), Data: tx.Data}
	}
	gas, estErrs, err := s.estimate(ctx, msgs)
	if err != nil {
		return 0, fmt.Errorf("estimate gas of %d transactions: %w", len(txs), err)
	}
	var signed []*types.Transaction
	var chosen []*Transaction
	var nodeErr error
	nonce := s.next
	for i, tx := range txs {
		if estErrs[i] != nil {
			if txErr := estimateFailure(estErrs[i], s.abiOf(ctx, tx)); txErr != nil {
				s.log.Info("transaction fails estimation", "tx", tx.ID, "code", txErr.Code, "reason", txErr.Message)
				if err := s.fail(ctx, tx.ID, txErr, load); err != nil {
					return len(chosen), err
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
			return 0, err
		}
		signed, chosen = append(signed, st), append(chosen, tx)
		nonce++
	}
	if len(chosen) == 0 {
		return 0, nodeErr
	}
	// Persist before broadcast: after a crash the signed bytes are sent again as they are.
	if err := s.markSubmitted(ctx, chosen); err != nil {
		for _, tx := range chosen {
			tx.Nonce, tx.Hash, tx.RawTx, tx.Submitted, tx.GasLimit = nil, nil, nil, nil, 0
		}
		if errors.Is(err, ErrConflict) {
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
		return 0, fmt.Errorf("persist %d signed transactions: %w", len(chosen), err)
	}
	first := s.next
	s.next = nonce
	load.queued -= len(chosen)
	head, _ := s.net.LastHead()

	sendErrs, err := s.send(ctx, signed)
	if err != nil {
		// Unknown outcome for all: they count as sent and are broadcast again.
		s.log.Warn("batch broadcast outcome unknown; will re-broadcast", "transactions", len(signed), "err", err)
		sendErrs = make([]error, len(signed))
	}
	kinds := make([]NodeErrorKind, len(signed))
	tail := len(signed) // start of the tail of certain rejections
	for i := range signed {
		kinds[i] = ClassifyNodeError(sendErrs[i])
	}
	for tail > 0 && (kinds[tail-1].CertainlyRejected() || kinds[tail-1] == NodeNonceTooLow) {
		tail--
	}
	now := s.clock.Now()
	kept := 0
	var busy NodeErrorKind
	var fill []*Transaction
	for i, tx := range chosen {
		kind := kinds[i]
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
			if capacityRefusal(kind) {
				s.win.shrink(head)
			}
			load.queued++
			s.log.Warn("node refused the transaction for now; requeued", "tx", tx.ID, "nonce", *tx.Nonce, "kind", kind, "reason", nodeMessage(sendErrs[i]))
			if err := s.store.ReleaseNonce(ctx, s.fence, tx.ID, nil, now); err != nil {
				return kept, fmt.Errorf("release nonce %d of %s: %w", *tx.Nonce, tx.ID, err)
			}
		case i >= tail:
			txErr := refusal(kind, sendErrs[i])
			s.log.Info("broadcast rejected", "tx", tx.ID, "kind", kind)
			if err := s.store.ReleaseNonce(ctx, s.fence, tx.ID, txErr, now); err != nil {
				return kept, fmt.Errorf("release nonce %d of %s: %w", *tx.Nonce, tx.ID, err)
			}
			s.failed = append(s.failed, tx.ID)
			s.metrics.TxFailed(s.account.ID, s.net.Name, txErr.Code)
		default:
			kept++
			load.inFlight++
			s.metrics.TxSubmitted(s.account.ID, s.net.Name)
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
				s.win.shrink(head)
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
	if err := s.fillRefused(ctx, head, fill, signed, fees); err != nil {
		return kept, err
	}
	if nodeErr == nil && busy != NodeOK {
		nodeErr = fmt.Errorf("%w: %s", ErrNodeBusy, busy)
	}
	return kept, nodeErr
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

// fees returns the network's fee quote (cached for FeeQuoteTTL).
func (s *Sender) fees(ctx context.Context) (feeQuote, error) {
	return s.net.cachedFees(ctx, s.quoteFees)
}

// quoteFees asks the node for the fees of the next block.
func (s *Sender) quoteFees(ctx context.Context) (feeQuote, error) {
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

// abiOf returns the ABI of tx's contract (nil when unknown), to decode
// its custom revert errors.
func (s *Sender) abiOf(ctx context.Context, tx *Transaction) *abi.ABI {
	if len(tx.ABI) > 0 {
		a, _ := ParseABI(tx.ABI)
		return a
	}
	if tx.ContractID == "" {
		return nil
	}
	if a, ok := s.abis[tx.ContractID]; ok {
		return a
	}
	var a *abi.ABI
	if c, err := s.store.ContractByID(ctx, tx.ContractID); err == nil {
		a, _ = ParseABI(c.ABI)
	}
	if s.abis == nil {
		s.abis = map[string]*abi.ABI{}
	}
	s.abis[tx.ContractID] = a
	return a
}

// estimateFailure turns an estimation error into the failure of the
// transaction when the error is the transaction's fault (revert,
// insufficient funds), or nil when it is the node's. The revert reason is
// decoded with the contract's ABI when known (custom errors).
func estimateFailure(err error, a *abi.ABI) *TxError {
	switch {
	case IsRevert(err):
		return &TxError{Code: TxReverted, Message: RevertMessage(a, err)}
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

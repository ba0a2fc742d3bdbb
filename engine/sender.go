package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/core/types"
)

// SenderStore is what a Sender needs of the store: its queue, the writes
// of its pump, the outcomes it settles, the contracts whose ABIs decode
// revert reasons, and its activation's fence.
type SenderStore interface {
	TxInserter
	QueueReader
	SubmitWriter
	MinedWriter
	ContractReader
	FenceChecker
}

// senderChain is what a Sender calls on its network's node: nonces
// (settle.go), receipts (settle.go), fees (fees.go), balances
// (conditions.go) and, through its perAccountIO, estimates and broadcasts.
type senderChain interface {
	stageChain
	feeSource
	BalanceReader
	ReceiptReader
}

// chain returns the network's node as the sender uses it.
func (s *Sender) chain() senderChain { return s.net.Chain }

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
	// capLimit (nil: none) is set when the node refused a transaction whose
	// fee cap covered the blocks ahead (feeCapAhead) for funds the account
	// lacks: the highest cap its balance paid then (at least MaxFeePerGas's;
	// 0 when the node did not say the balance), which later caps do not pass
	// (raisedCapUnpaid).
	capLimit *big.Int
	// io reaches the store and the node for the calls a SubmitStage
	// merges with other accounts' (batchedIO, WithStage), or each call on
	// its own (perAccountIO, the default).
	io pumpIO

	// next is the nonce the next submitted transaction gets; valid when
	// synced is true.
	next   uint64
	synced bool
	// ledger is what the sender tracks of its in-flight transactions, in
	// blocks, between the checks of reconcileInFlight.
	ledger inFlightLedger
	// window is the account's adaptive in-flight window.
	window window
	// doctor is the nonce doctor's memory (doctor.go).
	doctor doctor
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
	// drained is set when the last Pump found the queue empty (none
	// parked).
	drained bool
	// parked holds the queued transactions whose estimate the node
	// refused, by id (park.go); at most maxParked.
	parked map[string]*parkedTx
}

// accountLoad is an account's queue depth and in-flight count.
type accountLoad struct{ queued, inFlight int }

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
	s.io = batchedIO{st: st}
	return s
}

// checkFence returns an error wrapping ErrFenced when the sender's fence is
// no longer current; nil in single-node mode.
func (s *Sender) checkFence(ctx context.Context) error {
	if s.fence.IsZero() {
		return nil
	}
	err := ctx.Err()
	if sp, ok := s.io.(batchedIO); ok && err == nil {
		var merged bool
		if merged, err = sp.st.CheckFence(s.fence); !merged {
			err = s.store.CheckFence(ctx, s.fence)
		}
	} else if err == nil {
		err = s.store.CheckFence(ctx, s.fence)
	}
	if err != nil {
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
	s.metrics.TxFailed(s.accountRef(), s.net.Name, txErr.Code)
	return nil
}

// NewSender returns the sender of account on net.
func NewSender(account *Account, net *Network, store SenderStore, signer Signer, clock Clock, log *slog.Logger) *Sender {
	return &Sender{
		account: account, net: net, store: store, signer: signer, clock: clock,
		log:     log.With("account", account.ID, "network", net.Name),
		metrics: NopMetrics{},
		ledger:  newInFlightLedger(),
		window:  newWindow(net),
		io:      perAccountIO{store: store, net: net},
	}
}

// accountRef names the sender's account in the measurements.
func (s *Sender) accountRef() MetricAccount {
	return MetricAccount{ID: s.account.ID, Address: s.account.Address}
}

// SetMetrics makes the sender report to m (NopMetrics when nil).
func (s *Sender) SetMetrics(m Metrics) {
	if m == nil {
		m = NopMetrics{}
	}
	s.metrics = m
	// The account's load series exist from the start, at zero.
	m.AccountLoad(s.accountRef(), s.net.Name, 0, 0)
}

// reportLoad sends the change of the account's load since the last report.
func (s *Sender) reportLoad(l accountLoad) {
	l.queued, l.inFlight = max(l.queued, 0), max(l.inFlight, 0)
	if l != s.load {
		s.metrics.AccountLoad(s.accountRef(), s.net.Name, l.queued-s.load.queued, l.inFlight-s.load.inFlight)
		s.load = l
	}
}

// ForgetLoad withdraws the account's load and nonce health from the gauges
// (and the nonce book); the actor calls it when it stops, since nobody
// reports for the account until it runs again.
func (s *Sender) ForgetLoad() {
	s.reportLoad(accountLoad{})
	s.net.noteBacklog(s.account.ID, 0, s.clock.Now())
	s.forgetNonces()
}

// queueCountEvery bounds how often a Sender counts its queue in the store
// for the queue depth gauge; in between it tracks the count itself.
const queueCountEvery = time.Second

// countQueue recounts the account's queue in the store, at most once per
// queueCountEvery, when the store can; between counts the sender's own
// bookkeeping stands.
func (s *Sender) countQueue(ctx context.Context, load *accountLoad) {
	now := s.clock.Now()
	if !s.countedAt.IsZero() && now.Sub(s.countedAt) < queueCountEvery {
		return
	}
	n, ok, err := s.io.CountQueued(ctx, s.account.ID)
	if !ok {
		return
	}
	if err != nil {
		s.log.Warn("count queued transactions for metrics", "err", err)
		return
	}
	load.queued, s.countedAt = n, now
}

// Sync reconciles the next nonce with the store and the chain and
// re-broadcasts the signed bytes of every in-flight transaction. The next
// nonce is the larger of the store's highest assigned nonce + 1 and the
// chain's confirmed nonce: never the pending nonce of a pool, which may hold
// transactions we do not know of, so the counter can never run ahead of
// what the store holds.
func (s *Sender) Sync(ctx context.Context) error {
	_, err := s.sync(ctx)
	return err
}

// sync is Sync returning the account's in-flight summary it read, when
// nothing was in flight (a cold account's): the pump that follows needs
// it and nothing but this sender can change it meanwhile.
func (s *Sender) sync(ctx context.Context) (*InFlightSummary, error) {
	maxNonce, any, err := s.io.MaxNonce(ctx, s.account.ID)
	if err != nil {
		return nil, fmt.Errorf("sync nonce: %w", err)
	}
	chainNonce, err := s.io.NonceAt(ctx, s.account.Address)
	if err != nil {
		return nil, fmt.Errorf("sync nonce: read chain nonce: %w", nodeCall(err))
	}
	next := chainNonce
	if any && maxNonce+1 > next {
		next = maxNonce + 1
	}
	s.next, s.synced = next, true
	// What the ledger counts (blocks since the lowest nonce last moved,
	// since each transaction was signed) survives a re-sync: a node that
	// refuses every nonce gap asks for one at each pump, and a ledger
	// started over
	// each time never reached a check (the lowest nonce, refused for good
	// with its answer lost, was never replaced nor filled).
	// A cold account has nothing in flight: the merged count says so
	// without reading its rows.
	sum, err := s.io.InFlightSummary(ctx, s.account.ID)
	if err != nil {
		return nil, fmt.Errorf("sync: in flight: %w", err)
	}
	if sum.Count == 0 {
		return &sum, nil
	}
	inflight, err := s.store.InFlight(ctx, s.account.ID, s.net.Name)
	if err != nil {
		return nil, fmt.Errorf("sync: in flight: %w", err)
	}
	head, _ := s.net.LastHead()
	signed := make([]*types.Transaction, 0, len(inflight))
	for _, tx := range inflight {
		st, ok := s.storedVersion(tx)
		if !ok {
			continue
		}
		signed = append(signed, st)
		_, known := s.ledger.signed[tx.ID] // sent again, not signed again
		s.ledger.recordSent(tx.ID, head, !known)
	}
	// One batch; the answers are looked at by the next checks (reconcileInFlight).
	if _, err := s.io.Send(ctx, signed); IsRateLimit(err) {
		s.ledger.sendAgain(inflight) // refused whole: none reached the node
	} else if err != nil {
		s.log.Warn("sync: sending in-flight transactions again: outcome unknown", "transactions", len(signed), "err", err)
	}
	return nil, nil
}

// WindowFull reports whether the last Pump left the in-flight window full:
// then no transaction can be submitted until one leaves the window (mined,
// failed, replaced by a re-sync).
func (s *Sender) WindowFull() bool {
	return s.synced && s.load.inFlight >= s.window.size
}

// Window is the account's in-flight window now.
func (s *Sender) Window() int { return s.window.size }

// Idle reports whether the last Pump left nothing to look after: nothing in
// flight and the queue empty. Until new work wakes it, a periodic check of
// an idle account would only read the store to find that again.
func (s *Sender) Idle() bool {
	return s.synced && s.drained && s.load.inFlight == 0
}

// Resync makes the next Pump reconcile the nonce and broadcast the
// in-flight transactions again (Sync), e.g. after their blocks left the chain.
func (s *Sender) Resync() { s.synced = false }

// syncedSummary syncs the sender with the chain when it is not, and
// returns the account's in-flight summary (the one the sync read, if any).
func (s *Sender) syncedSummary(ctx context.Context) (InFlightSummary, error) {
	var synced *InFlightSummary
	if !s.synced {
		var err error
		if synced, err = s.sync(ctx); err != nil {
			return InFlightSummary{}, err
		}
	}
	sum, err := s.inFlightSummary(ctx, synced)
	if err != nil {
		return InFlightSummary{}, fmt.Errorf("pump: in flight: %w", err)
	}
	return sum, nil
}

// Pump submits ready transactions while the in-flight window has room. It
// returns how many it submitted or failed; an error means the node or the
// store is unavailable and the caller should retry later, unless it wraps
// ErrFenced: another activation took the account's lease, and this one must
// stop (nothing was signed, stored, broadcast, failed or held back after
// that).
func (s *Sender) Pump(ctx context.Context) (int, error) {
	sum, err := s.syncedSummary(ctx)
	if err != nil {
		return 0, err
	}
	// The load as this pump leaves it: submit moves transactions from the
	// queue to in flight.
	load := accountLoad{queued: s.load.queued, inFlight: sum.Count}
	head, _ := s.net.LastHead()
	s.window.adopt(s.net.senderLimitAt(head))
	if s.growWindow(head, sum.Count) {
		s.log.Debug("in-flight window grows", "window", s.window.size, "head", head)
	}
	defer func() {
		s.window.limited = s.synced && !s.drained && load.inFlight >= s.window.size
		s.countQueue(ctx, &load)
		s.reportLoad(load)
		if load.inFlight == 0 {
			s.net.noteBacklog(s.account.ID, 0, s.clock.Now()) // nothing of the account's ahead of others
		}
		if s.synced {
			s.metrics.NextNonce(s.accountRef(), s.net.Name, s.next)
		}
		s.reportNonces()
	}()
	if err := s.reconcileInFlight(ctx, sum); err != nil {
		return 0, err
	}
	free := s.window.size - sum.Count
	done := 0
	s.drained = false
	var fees *feeQuote
	for free > 0 {
		ready, exhausted, err := s.readyToSend(ctx, free)
		if err != nil {
			return done, err
		}
		// again is set when a transaction left the queue without using the
		// window (held back, failed) or came back to it: fetch once more.
		batch, failed, again, err := s.admit(ctx, ready, nil, &load)
		done += failed
		if err != nil {
			return done, err
		}
		if len(batch) > 0 {
			if fees == nil {
				q, err := s.fees(ctx)
				if err != nil {
					return done, err
				}
				fees = &q
			}
			size := s.window.size
			n, err := s.submitBatch(ctx, batch, *fees, &load)
			done, free = done+n, free-n+s.window.size-size // the node's answers move the window
			if errors.Is(err, errWaitForBlock) {
				return done, nil // not a failure: no pause, the next block's wake pumps
			}
			if err != nil {
				return done, err
			}
			if n < len(batch) {
				again = true // some failed before taking a nonce, or went back to the queue
			}
			if !s.synced {
				break // the chain's nonce is not what we thought: resync first
			}
		}
		if !again && exhausted {
			s.drained = len(s.parked) == 0
			break // the queue is empty (but for parked transactions)
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

// inFlightSummary is the account's in-flight summary: read, unless sync
// just read it.
func (s *Sender) inFlightSummary(ctx context.Context, synced *InFlightSummary) (InFlightSummary, error) {
	if synced != nil {
		return *synced, nil
	}
	return s.io.InFlightSummary(ctx, s.account.ID)
}

// check evaluates tx's conditions; a transfer through a pool that waits
// for its member's asset counts what the member has promised already
// (cover: its in-flight pool transfers and this round's).
func (s *Sender) check(ctx context.Context, tx *Transaction, cover *poolCover) (Verdict, *TxError, error) {
	if tx.PoolID == "" || tx.WaitForAsset == "" {
		return s.conds.Check(ctx, s.net, tx)
	}
	return s.conds.CheckWith(ctx, tx, func(ctx context.Context) (*big.Int, *TxError, error) {
		have, err := cover.have(ctx, tx)
		return have, nil, err
	})
}

// admit returns, appended to batch, the transactions of ready whose
// conditions (dependsOn, waitForAsset) hold: those whose conditions failed
// are failed (counted in failed), those that must wait are held back.
// again is set when any left the queue without using the window.
//
// The values that admitted transactions sent through a pool move are
// counted against the waitForAsset of the pool's transactions after them
// (poolCover): one top-up releases as many as it covers, not all.
func (s *Sender) admit(ctx context.Context, ready, batch []*Transaction, load *accountLoad) (_ []*Transaction, failed int, again bool, err error) {
	cover := poolCover{s: s}
	for _, tx := range ready {
		if s.conds == nil || !tx.HasConditions() {
			batch = append(batch, tx)
			cover.admitted.add(tx)
			continue
		}
		v, txErr, err := s.check(ctx, tx, &cover)
		if err != nil {
			return batch, failed, again, err
		}
		switch v {
		case Fail:
			if err := s.fail(ctx, tx.ID, txErr, load); err != nil {
				return batch, failed, again, err
			}
			failed, again = failed+1, true
		case Wait:
			if _, err := s.conds.Hold(ctx, s.fence, tx); err != nil {
				return batch, failed, again, err
			}
			again = true
		default:
			batch = append(batch, tx)
			cover.admitted.add(tx)
		}
	}
	return batch, failed, again, nil
}

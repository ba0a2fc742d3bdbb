package engine

import (
	"context"
	"fmt"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/core/types"
)

// The nonce doctor (ENGINE.md promise 14) looks, at each check of the
// in-flight transactions (reconcileInFlight: the lowest nonce in flight
// has not moved for RebroadcastBlocks blocks), at two things the rest of
// the sender takes for granted:
//
//   - a gap: the chain's nonce is below the lowest nonce in flight, so
//     nothing of ours is pending at the chain's nonce and nothing in flight
//     can ever be mined. When the same gap is still there DoctorBlocks
//     blocks after it was first seen, its nonces are filled with 0-value
//     transfers to the account itself (fillers, as a refused nonce is
//     filled), sent in one batch; fillers not mined are raised and sent
//     again DoctorBlocks blocks later.
//   - the counter: the sender's next nonce must be the larger of the chain's
//     nonce and the store's highest assigned nonce + 1. Below the chain's
//     nonce its transactions would be refused (nonce too low); below the
//     store's it would reuse a nonce; above both it would leave a gap. It
//     is re-read at once: nothing else can have moved it since the check
//     read both.
//
// Every repair is logged and counted (Metrics.NonceRepaired).
//
// Gap fillers are not stored: no transaction row owns a gap's nonce, and
// nothing depends on which filler is mined. After a crash the gap is seen
// again and filled again.

// Kinds of repair counted by Metrics.NonceRepaired.
const (
	// NonceRepairGapFilled: fillers sent for the nonces of a gap below the
	// lowest nonce in flight.
	NonceRepairGapFilled = "gap_filled"
	// NonceRepairNextResynced: the next nonce was off and was re-read.
	NonceRepairNextResynced = "next_resynced"
)

// DoctorBlocksFactor makes the default DoctorBlocks: this many times
// RebroadcastBlocks.
const DoctorBlocksFactor = 3

// maxGapFill bounds the fillers of one repair; a larger gap is filled in
// turns (a lagging node's nonce must not make us sign thousands).
const maxGapFill = 64

// doctorBlocks returns DoctorBlocks or its default.
func (n *Network) doctorBlocks() uint64 {
	if n.DoctorBlocks > 0 {
		return n.DoctorBlocks
	}
	return DoctorBlocksFactor * n.rebroadcastBlocks()
}

// NonceHealth is an account's nonce on one network as its sender last saw
// it: the chain's nonce at the last check, the next nonce, the lowest nonce
// in flight and since which block that one has not moved.
type NonceHealth struct {
	// ChainNonce is the account's nonce on chain at the last check
	// (ChainKnown false: no check yet).
	ChainNonce uint64
	ChainKnown bool
	// NextNonce is the nonce the next transaction gets (NextKnown false:
	// not synced yet).
	NextNonce uint64
	NextKnown bool
	// LowestInFlight is the lowest nonce in flight; nil when none is.
	LowestInFlight *uint64
	// StuckSince is the head at which the lowest nonce in flight (or the
	// chain's nonce) last moved, when a check found neither moving for
	// RebroadcastBlocks blocks; nil when not stuck. StuckBlocks is how many
	// blocks have passed since (0 when not stuck).
	StuckSince  *uint64
	StuckBlocks uint64
	// DoctorBlocks is the network's threshold of the doctor: a gap that
	// lasts that many blocks is filled.
	DoctorBlocks uint64
}

// doctor is the nonce doctor's memory of one sender.
type doctor struct {
	chainNonce uint64
	chainKnown bool
	// gap is set while a gap [gapFrom, gapTo) is seen; gapSince is the head
	// at which it was first seen, or last filled.
	gap            bool
	gapFrom, gapTo uint64
	gapSince       uint64
	// fillers are the gap fillers sent while the gap lasts, by nonce: a
	// filler sent again is raised over the last one.
	fillers map[uint64]*types.Transaction
	// book receives the health while stuck (nil: none); bookedStuckSince
	// is what it was last given (nil: absent from it).
	book             *NonceBook
	bookedStuckSince *uint64
	// bookedWindow is the window size last given to the book (0: none).
	bookedWindow int
	// reported is the health last sent to the metrics (nil: none yet).
	reported *NonceHealth
}

// WithNonceBook makes the sender publish its account's nonce health in b
// while the account is stuck (the API's account view reads it).
func (s *Sender) WithNonceBook(b *NonceBook) *Sender {
	s.doctor.book = b
	return s
}

// heal is the nonce doctor's look at a check: chainNonce just read,
// inflight the account's in-flight transactions, head the chain's head.
func (s *Sender) heal(ctx context.Context, head, chainNonce uint64, inflight []*Transaction) error {
	d := &s.doctor
	d.chainNonce, d.chainKnown = chainNonce, true
	if err := s.healNext(ctx, chainNonce); err != nil {
		return err
	}
	lowest, any := lowestNonce(inflight)
	if !any || lowest <= chainNonce {
		d.gap, d.fillers = false, nil
		return nil
	}
	if !d.gap || d.gapFrom != chainNonce || d.gapTo != lowest {
		if d.gap {
			s.log.Info("nonce doctor: the gap changed", "from", chainNonce, "lowestInFlight", lowest, "was", d.gapFrom)
		}
		d.gap, d.gapFrom, d.gapTo, d.gapSince = true, chainNonce, lowest, head
		for n := range d.fillers {
			if n < chainNonce {
				delete(d.fillers, n)
			}
		}
		return nil
	}
	if blocksSince(head, d.gapSince) < s.net.doctorBlocks() {
		return nil
	}
	if processed, local := s.net.processedThrough(); local && processed < d.gapSince {
		// The watcher of this process has not followed the chain to
		// where the gap was first seen: a transaction of ours completed
		// in a block a reorg took back still holds the gap's nonce until
		// the watcher moves it back, and a filler would take its place.
		return nil
	}
	return s.fillGap(ctx, head)
}

// lowestNonce is the lowest nonce of txs; false when none has one.
func lowestNonce(txs []*Transaction) (uint64, bool) {
	var lowest uint64
	found := false
	for _, tx := range txs {
		if tx.Nonce != nil && (!found || *tx.Nonce < lowest) {
			lowest, found = *tx.Nonce, true
		}
	}
	return lowest, found
}

// healNext re-reads the next nonce when it is not the larger of the
// chain's nonce and the store's highest + 1.
func (s *Sender) healNext(ctx context.Context, chainNonce uint64) error {
	if !s.synced {
		return nil // the next pump syncs anyway
	}
	maxNonce, any, err := s.io.MaxNonce(ctx, s.account.ID)
	if err != nil {
		return fmt.Errorf("nonce doctor: highest stored nonce: %w", err)
	}
	want := chainNonce
	if any && maxNonce+1 > want {
		want = maxNonce + 1
	}
	if s.next == want {
		return nil
	}
	s.log.Warn("nonce doctor: next nonce off; re-read", "next", s.next, "chainNonce", chainNonce,
		"storeMax", maxNonce, "stored", any, "now", want)
	s.next = want
	s.metrics.NonceRepaired(s.accountRef(), s.net.Name, NonceRepairNextResynced)
	return nil
}

// fillGap signs a filler for each nonce of the gap (raised over the filler
// sent before at that nonce, if any) and sends them in one batch.
func (s *Sender) fillGap(ctx context.Context, head uint64) error {
	d := &s.doctor
	from, to := d.gapFrom, min(d.gapTo, d.gapFrom+maxGapFill)
	q, err := s.fees(ctx)
	if err != nil {
		// The pump goes on; the next check tries again.
		s.log.Warn("nonce doctor: no fee quote to fill a gap", "from", from, "to", to-1, "err", err)
		return nil
	}
	if err := s.checkFence(ctx); err != nil {
		return fmt.Errorf("nonce doctor: %w", err)
	}
	if d.fillers == nil {
		d.fillers = map[uint64]*types.Transaction{}
	}
	out := make([]*types.Transaction, 0, to-from)
	for n := from; n < to; n++ {
		signed, err := s.signer.SignTx(ctx, s.account.Key(), s.gapFiller(n, q), s.net.ChainID)
		if err != nil {
			return fmt.Errorf("nonce doctor: sign filler of nonce %d: %w", n, err)
		}
		d.fillers[n] = signed
		out = append(out, signed)
	}
	s.log.Warn("nonce doctor: filling a gap below the lowest nonce in flight", "from", from, "to", to-1,
		"lowestInFlight", d.gapTo, "seenSince", d.gapSince, "head", head)
	s.metrics.NonceRepaired(s.accountRef(), s.net.Name, NonceRepairGapFilled)
	d.gapSince = head // not mined within DoctorBlocks: raised and sent again
	errs, err := s.io.Send(ctx, out)
	if err != nil {
		s.log.Warn("nonce doctor: broadcast of gap fillers: outcome unknown", "fillers", len(out), "err", err)
		return nil
	}
	for i, e := range errs {
		if kind := ClassifyNodeError(e); kind != NodeOK && kind != NodeAlreadyKnown {
			s.log.Warn("nonce doctor: node refused a gap filler", "nonce", out[i].Nonce(), "kind", kind, "reason", nodeMessage(e))
		}
	}
	return nil
}

// gapFiller is the unsigned filler of nonce n: at q's fees, or raised over
// the filler sent before at n (at the cap: that one again).
func (s *Sender) gapFiller(n uint64, q feeQuote) *types.Transaction {
	self := s.account.Address
	if old := s.doctor.fillers[n]; old != nil {
		if next, ok := s.raisedFees(old, q, &self, new(big.Int), nil, FillerGas); ok {
			return next
		}
		return s.atCap(old, q, &self, FillerGas)
	}
	if q.baseFee != nil {
		feeCap, tip := s.net.CapFees(MaxFeePerGas(q.baseFee, q.tip), q.tip)
		return types.NewTx(&types.DynamicFeeTx{ChainID: s.net.ChainID, Nonce: n, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: FillerGas, To: &self, Value: new(big.Int)})
	}
	price, _ := s.net.CapFees(q.gasPrice, nil)
	return types.NewTx(&types.LegacyTx{Nonce: n, GasPrice: price, Gas: FillerGas, To: &self, Value: new(big.Int)})
}

// NonceHealth is the account's nonce health as the sender sees it now.
func (s *Sender) NonceHealth() NonceHealth {
	head, _ := s.net.LastHead()
	h := NonceHealth{DoctorBlocks: s.net.doctorBlocks(), ChainNonce: s.doctor.chainNonce, ChainKnown: s.doctor.chainKnown}
	if s.synced {
		h.NextNonce, h.NextKnown = s.next, true
	}
	c := &s.ledger
	if c.checked == 0 {
		return h // nothing in flight
	}
	lowest := c.lowest
	h.LowestInFlight = &lowest
	// Stuck once a check found nothing moving for RebroadcastBlocks blocks.
	if blocksSince(c.checked, c.moved) >= s.net.rebroadcastBlocks() {
		since := c.moved
		h.StuckSince, h.StuckBlocks = &since, blocksSince(head, since)
	}
	return h
}

// reportNonces sends the account's nonce health to the metrics when it
// changed and, while it is stuck, to the nonce book.
func (s *Sender) reportNonces() {
	if s.doctor.book != nil && s.doctor.bookedWindow != s.window.size {
		s.doctor.book.setWindow(s.account.ID, s.net.Name, s.window.size)
		s.doctor.bookedWindow = s.window.size
	}
	h := s.NonceHealth()
	if s.doctor.reported != nil && sameHealth(*s.doctor.reported, h) {
		return
	}
	s.doctor.reported = &h
	s.metrics.NonceHealth(s.accountRef(), s.net.Name, h)
	if s.doctor.book == nil {
		return
	}
	switch {
	case h.StuckSince != nil:
		s.doctor.book.put(s.account.ID, s.net.Name, h)
	case s.doctor.bookedStuckSince != nil:
		s.doctor.book.forget(s.account.ID, s.net.Name)
	}
	s.doctor.bookedStuckSince = h.StuckSince
}

// forgetNonces withdraws the account from the nonce book and reports it
// neither stuck nor in flight: its actor stops, and another (maybe on
// another node) reports for it from now on.
func (s *Sender) forgetNonces() {
	h := NonceHealth{DoctorBlocks: s.net.doctorBlocks(), ChainNonce: s.doctor.chainNonce, ChainKnown: s.doctor.chainKnown}
	s.metrics.NonceHealth(s.accountRef(), s.net.Name, h)
	s.doctor.reported = &h
	if s.doctor.book != nil && s.doctor.bookedStuckSince != nil {
		s.doctor.book.forget(s.account.ID, s.net.Name)
	}
	if s.doctor.book != nil && s.doctor.bookedWindow != 0 {
		s.doctor.book.setWindow(s.account.ID, s.net.Name, 0)
	}
	s.doctor.bookedStuckSince, s.doctor.bookedWindow = nil, 0
}

// sameHealth reports whether a and b say the same.
func sameHealth(a, b NonceHealth) bool {
	eq := func(x, y *uint64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.ChainNonce == b.ChainNonce && a.ChainKnown == b.ChainKnown && a.NextNonce == b.NextNonce &&
		a.NextKnown == b.NextKnown && eq(a.LowestInFlight, b.LowestInFlight) && eq(a.StuckSince, b.StuckSince) &&
		a.StuckBlocks == b.StuckBlocks && a.DoctorBlocks == b.DoctorBlocks
}

// NonceBook holds the nonce health of the accounts whose senders in this
// process find them stuck; the others are absent. Safe for concurrent use.
type NonceBook struct {
	mu    sync.Mutex
	stuck map[nonceKey]NonceHealth
	// windows are the in-flight windows of the accounts whose senders run
	// in this process (a pool's GET shows its members').
	windows map[nonceKey]int
}

// nonceKey names an account on a network.
type nonceKey struct{ account, network string }

// NewNonceBook returns an empty book.
func NewNonceBook() *NonceBook {
	return &NonceBook{stuck: map[nonceKey]NonceHealth{}, windows: map[nonceKey]int{}}
}

// Window returns the in-flight window of the account's sender on network
// in this process (0: it does not run here).
func (b *NonceBook) Window(accountID, network string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.windows[nonceKey{accountID, network}]
}

// setWindow records the sender's window (0: it stops).
func (b *NonceBook) setWindow(accountID, network string, size int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size == 0 {
		delete(b.windows, nonceKey{accountID, network})
	} else {
		b.windows[nonceKey{accountID, network}] = size
	}
}

// Stuck returns the nonce health of the account on network when its
// sender (in this process) finds it stuck; false otherwise.
func (b *NonceBook) Stuck(accountID, network string) (NonceHealth, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.stuck[nonceKey{accountID, network}]
	return h, ok
}

func (b *NonceBook) put(accountID, network string, h NonceHealth) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stuck[nonceKey{accountID, network}] = h
}

func (b *NonceBook) forget(accountID, network string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.stuck, nonceKey{accountID, network})
}

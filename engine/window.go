package engine

import (
	"errors"
	"sync"
)

// window is an account's adaptive in-flight window: how many of its
// transactions may be unconfirmed at once. It starts at Network.InFlight.
// While the window is what holds the account back (it was full with work
// queued) and the node takes everything it is sent, it grows once per new
// head, up to Network.MaxInFlight: four times when the last block took all
// the account had in flight (the window, not the chain, was the bound),
// twice otherwise. A burst from one account so reaches the pace of the
// chain within a few blocks instead of sending a fixed number per block.
// Until the node first refuses the account for capacity, the window is
// also at least what one block can include of the account's transactions
// (the block's gas limit over their gas, see fit): fewer in flight would
// leave room in every block while the window ramps up, and the node takes
// that many into its pool anyway before the next block.
// It halves, down to Network.MinInFlight, when the node
// refuses for capacity (pool full, rate limit, a fee too low to replace or
// enter a full pool) or the account's lowest nonce stays pending for
// RebroadcastBlocks blocks, so a node with small pools is not pushed to
// evict and then asked again for the same room.
//
// A node whose pool is full for the account ("txpool is full" while it
// holds some of the account's transactions) has said how many it keeps
// per sender: the window drops to what the account has in flight (not
// below the minimum) and that becomes its ceiling, which growth does not
// pass for probeBlocks blocks. A busy public node that keeps 16 pending
// per sender so gets 16 every block, instead of a window that halves to
// 16 over several blocks and doubles past it again, each time sending
// transactions that come straight back. The limit is the node's, not the
// account's: the network keeps the last one learned (senderLimit), and
// every other account of the network takes it as its ceiling too (adopt)
// instead of learning it with a refused batch of its own.
type window struct {
	size, min, max int
	// base is the size the window started at (Network.InFlight): fit
	// does not take it below that.
	base int
	// limited is set when the last pump ended with the window full and
	// work queued; grownAt and refusedAt are the heads of the last growth
	// and of the last refusal for capacity or stall.
	limited, refused   bool
	grownAt, refusedAt uint64
	// ceiling (0: none) is the node's per-sender limit learned at head
	// ceilingAt from a pool-full refusal.
	ceiling   int
	ceilingAt uint64
	// block (0: unknown) is what one block can include of the account's
	// transactions, as the last fit saw it: growth stops at blocksAhead
	// of it.
	block int
}

// blocksAhead bounds the window's growth in blocks of the account's
// transactions: the pump tops the window up after each block, so two
// blocks in flight keep every block full, and more only wait in the
// node's pool. Measured on the embedded chain (pool of 4,096 a sender):
// one account's burst to fresh addresses (408 a block) grew its window to
// 4,096, and each pump round then estimated, signed and wrote thousands
// of transactions the chain would take ten blocks later, while the
// account's requests waited for the writer and the cores.
const blocksAhead = 2

// errWaitForBlock marks a pool-full refusal while the node holds some of
// the account's transactions: the pump stops without a failure, and the
// wake of the block that takes them pumps again.
var errWaitForBlock = errors.New("the node holds all it keeps of the account until a block")

// probeBlocks is how long a learned ceiling holds before the window may
// grow past it once, to find whether the node takes more now.
const probeBlocks = 64

// Defaults of the window's bounds.
const (
	DefaultMinInFlight = 16
	DefaultMaxInFlight = 4096
)

// newWindow returns the window of an account on net.
func newWindow(net *Network) window {
	w := window{size: max(net.InFlight, 1), min: net.MinInFlight, max: net.MaxInFlight}
	w.base = w.size
	if w.min <= 0 {
		w.min = DefaultMinInFlight
	}
	if w.max <= 0 {
		w.max = DefaultMaxInFlight
	}
	w.min = min(w.min, w.size)
	w.max = max(w.max, w.size)
	return w
}

// grow widens the window when the last pump found it full with work
// queued and head (0: unknown) is a block after the last growth and after
// the last refusal: four times when the chain took everything the account
// had in flight (inFlight is 0 now: the window, not the chain, was the
// bound), twice otherwise, and not past blocksAhead blocks of the
// account's transactions once a fit has seen their gas. It reports whether
// it grew.
func (w *window) grow(head uint64, inFlight int) bool {
	bound := w.max
	if w.block > 0 {
		bound = min(bound, blocksAhead*w.block)
	}
	if !w.limited || w.size >= bound || head == 0 || head <= w.grownAt || head <= w.refusedAt {
		return false
	}
	if w.ceiling > 0 && w.size >= w.ceiling && head < w.ceilingAt+probeBlocks {
		return false
	}
	factor := 2
	if inFlight == 0 {
		factor = 4
	}
	w.size = min(factor*w.size, bound)
	w.grownAt, w.limited = head, false
	return true
}

// fit widens the window to what one block of blockGas can include of
// transactions of txGas each (at most the window's maximum, and at most a
// ceiling learned at or after head-probeBlocks), unless the node has
// refused the account for capacity: then only grow widens it. A window
// wider than blocksAhead such blocks (it grew while the account sent
// lighter transactions) narrows to that, not below where it started. The
// caller calls it when the node took every transaction of a batch.
//
// The narrowing is measured: one account's burst of transfers to holders
// (1,229 a block) grew its window to 2,458; its next burst, to fresh
// addresses (408 a block), kept six blocks in flight, so each pump round
// estimated, signed and wrote thousands of transactions while the
// account's requests waited for the cores (accepts 5,000/s, p99 60-90 ms,
// against 9,000/s and 22-30 ms for the same burst from a new account).
func (w *window) fit(head, blockGas, txGas uint64) {
	if w.refused || blockGas == 0 || txGas == 0 {
		return
	}
	size := int(min(blockGas/txGas, uint64(w.max)))
	w.block = size
	if w.ceiling > 0 && head < w.ceilingAt+probeBlocks {
		size = min(size, w.ceiling)
	}
	w.size = min(max(w.size, size), max(blocksAhead*w.block, w.base, w.min))
}

// adopt takes the per-sender limit another account of the network learned
// at head at (see senderLimit) as the window's ceiling, when it is newer
// than the window's own: the window drops to it (not below the minimum),
// and as after a refusal of its own, only growth widens it from then on
// (fit does not): when the ceiling's probeBlocks have passed, one account
// probes and its refusal renews every window's ceiling, instead of every
// account offering a block's worth that comes back.
func (w *window) adopt(limit int, at uint64) {
	if limit <= 0 || (w.ceiling > 0 && at <= w.ceilingAt) {
		return
	}
	w.ceiling, w.ceilingAt, w.refused = max(limit, w.min), at, true
	w.size = min(w.size, w.ceiling)
}

// senderLimit is the per-sender limit of a network's node as the last
// pool-full refusal of any of its accounts taught it (window.full): how
// many of one sender's transactions the node kept, and at which head.
type senderLimit struct {
	mu    sync.Mutex
	limit int
	at    uint64
	// probedAt is the last head at which an account was let past an
	// expired ceiling (claimProbe).
	probedAt uint64
}

// probing reports whether growing at head would take the window past a
// ceiling whose probeBlocks have passed.
func (w *window) probing(head uint64) bool {
	return w.limited && w.size < w.max && head > w.grownAt && head > w.refusedAt &&
		w.ceiling > 0 && w.size >= w.ceiling && head >= w.ceilingAt+probeBlocks
}

// growWindow grows the account's window at head (window.grow), past an
// expired ceiling only with the network's claim for head (claimProbe).
func (s *Sender) growWindow(head uint64, inFlight int) bool {
	if s.window.probing(head) && !s.net.claimProbe(head) {
		return false
	}
	return s.window.grow(head, inFlight)
}

// claimProbe reports whether an account may probe past its expired
// ceiling at head: one account of the network per head. Its refusal
// renews every window's ceiling (adopt); without the claim, the accounts
// that learned the limit together would all probe at once and all be
// refused.
func (n *Network) claimProbe(head uint64) bool {
	n.senders.mu.Lock()
	defer n.senders.mu.Unlock()
	if head <= n.senders.probedAt {
		return false
	}
	n.senders.probedAt = head
	return true
}

// learnSenderLimit records that the node keeps limit transactions per
// sender, learned at head.
func (n *Network) learnSenderLimit(limit int, head uint64) {
	n.senders.mu.Lock()
	defer n.senders.mu.Unlock()
	if head >= n.senders.at {
		n.senders.limit, n.senders.at = limit, head
	}
}

// senderLimitAt returns the node's per-sender limit and the head it was
// learned at, when it was learned within probeBlocks of head (0 otherwise:
// none, or too old to trust).
func (n *Network) senderLimitAt(head uint64) (int, uint64) {
	n.senders.mu.Lock()
	defer n.senders.mu.Unlock()
	if n.senders.limit == 0 || head >= n.senders.at+probeBlocks {
		return 0, 0
	}
	return n.senders.limit, n.senders.at
}

// shrink halves the window after a refusal for capacity or a stall seen
// at head, once per head (the refusals of one batch are one signal); it
// grows again only at a later head.
func (w *window) shrink(head uint64) {
	if w.refused && head == w.refusedAt {
		return
	}
	w.size = max(w.size/2, w.min)
	w.refused, w.refusedAt, w.limited = true, head, false
}

// full acts on a pool-full refusal at head while the node holds inFlight
// of the account's transactions: the window drops to inFlight (not below
// the minimum, and at most halved once per head, as shrink) and that is
// its ceiling until probeBlocks blocks pass.
func (w *window) full(head uint64, inFlight int) {
	w.shrink(head)
	w.size = max(min(w.size, inFlight), w.min)
	w.ceiling, w.ceilingAt = w.size, head
}

// capacityRefusal reports whether kind says the node has no room for more
// of our transactions now.
func capacityRefusal(kind NodeErrorKind) bool {
	return kind == NodePoolFull || kind == NodeRateLimited || kind == NodeUnderpriced || kind == NodeFundsReserved
}

// refusedForCapacity acts on the node's refusal of tx for capacity at
// head: the window halves (once per head; a pool-full refusal of a new
// batch then drops it to what the node holds, see window.full), and a
// member of a sender pool counts the refusal for its pool (PoolMetrics,
// where the metrics have it), so an operator sees which pools outgrow what
// the node takes per sender.
func (s *Sender) refusedForCapacity(tx *Transaction, head uint64) {
	s.window.shrink(head)
	s.log.Debug("in-flight window halves: the node refused for capacity", "window", s.window.size, "head", head)
	if tx.PoolID == "" {
		return
	}
	if pm, ok := s.metrics.(PoolMetrics); ok {
		pm.PoolRefused(tx.PoolID, s.net.Name)
	}
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// TestWindowAdapts: the window doubles at most once per head, only while
// it held the account back, up to its maximum; a refusal halves it down to
// its minimum and stops growth until a later head.
func TestWindowAdapts(t *testing.T) {
	w := newWindow(&Network{InFlight: 64, MinInFlight: 16, MaxInFlight: 300})
	if w.grow(10, 1) {
		t.Fatal("grew without having been full")
	}
	w.limited = true
	if !w.grow(10, 1) || w.size != 128 {
		t.Fatalf("after a full pump at head 10: size %d, want 128", w.size)
	}
	w.limited = true
	if w.grow(10, 1) {
		t.Fatal("grew twice at head 10")
	}
	if !w.grow(11, 1) || w.size != 256 {
		t.Fatalf("head 11: size %d, want 256", w.size)
	}
	w.limited = true
	if !w.grow(12, 1) || w.size != 300 {
		t.Fatalf("head 12: size %d, want the maximum 300", w.size)
	}
	w.limited = true
	if w.grow(13, 1) {
		t.Fatal("grew past the maximum")
	}
	w.shrink(13)
	w.shrink(13)
	if w.size != 150 {
		t.Fatalf("after two refusals at one head: size %d, want 150 (halved once)", w.size)
	}
	for i, want := range []int{75, 37, 18, 16, 16} {
		w.shrink(uint64(14 + i))
		if w.size != want {
			t.Fatalf("after a refusal at head %d: size %d, want %d", 14+i, w.size, want)
		}
	}
	w.limited = true
	if w.grow(18, 1) {
		t.Fatal("grew at the head of a refusal")
	}
	if !w.grow(19, 1) || w.size != 32 {
		t.Fatalf("head 19: size %d, want 32", w.size)
	}
	q := newWindow(&Network{InFlight: 64, MaxInFlight: 4096})
	q.limited = true
	if !q.grow(5, 0) || q.size != 256 {
		t.Fatalf("after a block that took everything in flight: size %d, want 256 (four times)", q.size)
	}
	if got := newWindow(&Network{InFlight: 8}); got.min != 8 || got.max != DefaultMaxInFlight {
		t.Fatalf("defaults with inFlight 8: min %d max %d, want 8 and %d", got.min, got.max, DefaultMaxInFlight)
	}
}

// TestSenderWindowGrowsWithBlocksAndShrinksOnRefusal: a sender whose
// window is full with work queued sends four times as many once a new head
// came and all its transactions left the window; a pool-full refusal
// halves the window.
func TestSenderWindowGrowsWithBlocksAndShrinksOnRefusal(t *testing.T) {
	full := false
	chain := &fakeChain{send: func(*types.Transaction) error {
		if full {
			return errors.New("txpool is full")
		}
		return nil
	}}
	s, store := windowSender(t, chain, 4, 200)
	mine := func() {
		for _, tx := range store.txs {
			if tx.Status == StatusSubmitted {
				tx.Status = StatusCompleted
			}
		}
	}
	s.net.ObserveHead(1)
	for i, want := range []int{4, 16, 64} { // four times after a block that took all in flight
		if n, err := s.Pump(context.Background()); err != nil || n != want {
			t.Fatalf("pump %d at head %d: %d, %v; want %d", i, i+1, n, err, want)
		}
		mine()
		s.net.ObserveHead(uint64(i + 2))
	}
	full = true
	if _, err := s.Pump(context.Background()); !errors.Is(err, ErrNodeBusy) {
		t.Fatalf("pump against a full pool with nothing in flight: %v, want ErrNodeBusy (a pause before asking again)", err)
	}
	if s.window.size != 2 {
		t.Fatalf("window after a pool-full refusal holding none: %d, want the minimum 2", s.window.size)
	}
}

// TestWindowLearnsTheNodesLimit: a pool-full refusal while the node holds
// some of the account's transactions drops the window to that many (not
// below the minimum) and growth stops there for probeBlocks blocks; then
// it may grow once to find whether the node takes more now.
func TestWindowLearnsTheNodesLimit(t *testing.T) {
	w := newWindow(&Network{InFlight: 64, MinInFlight: 16, MaxInFlight: 4096})
	w.size = 1229
	w.full(10, 40)
	if w.size != 40 {
		t.Fatalf("after pool full holding 40: size %d, want 40", w.size)
	}
	for head := uint64(11); head < 10+probeBlocks; head++ {
		w.limited = true
		if w.grow(head, 40) {
			t.Fatalf("grew past the node's limit at head %d (size %d)", head, w.size)
		}
	}
	w.limited = true
	if !w.grow(10+probeBlocks, 40) || w.size != 80 {
		t.Fatalf("after %d blocks: size %d, want one probe to 80", probeBlocks, w.size)
	}
	w.full(80, 3)
	if w.size != 16 {
		t.Fatalf("pool full holding 3: size %d, want the minimum 16", w.size)
	}
}

// TestSenderKeepsToTheNodesSlots: against a node that keeps 16 pending
// transactions per sender (txpool is full past them), the first pump
// learns the limit and ends without a failure (no pause: the next block's
// wake pumps); every later block gets exactly 16, none refused.
func TestSenderKeepsToTheNodesSlots(t *testing.T) {
	const slots = 16
	pending, refused := 0, 0
	chain := &fakeChain{send: func(*types.Transaction) error {
		if pending >= slots {
			refused++
			return errors.New("txpool is full")
		}
		pending++
		return nil
	}}
	s, store := windowSender(t, chain, 64, 200)
	s.net.MinInFlight = 4
	s.window = newWindow(s.net)
	s.net.ObserveHead(1)
	if n, err := s.Pump(context.Background()); err != nil || n != slots {
		t.Fatalf("first pump: %d, %v; want %d sent and no error", n, err, slots)
	}
	if s.window.size != slots || refused == 0 {
		t.Fatalf("after the first refusal: window %d (want %d), %d refused", s.window.size, slots, refused)
	}
	first := refused
	for head := uint64(2); head < 8; head++ {
		for _, tx := range store.txs {
			if tx.Status == StatusSubmitted {
				tx.Status = StatusCompleted
			}
		}
		pending = 0
		s.net.ObserveHead(head)
		if n, err := s.Pump(context.Background()); err != nil || n != slots {
			t.Fatalf("pump at head %d: %d, %v; want %d", head, n, err, slots)
		}
	}
	if refused != first {
		t.Fatalf("%d refused after the first pump, want none (the window keeps to the node's %d)", refused-first, slots)
	}
}

// TestSendersShareTheNodesLimit: the per-sender limit one account of a
// network learned from a pool-full refusal is every other account's
// ceiling: a second account's first pump offers the node only that many,
// where it would otherwise offer its initial window and then what a block
// holds, and have the rest refused. Once the limit is older than
// probeBlocks it no longer binds a new window.
func TestSendersShareTheNodesLimit(t *testing.T) {
	const slots = 16
	pending := map[common.Address]int{}
	refused := map[common.Address]int{}
	chain := &fakeChain{send: func(tx *types.Transaction) error {
		from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
		if err != nil {
			return err
		}
		if pending[from] >= slots {
			refused[from]++
			return errors.New("txpool is full")
		}
		pending[from]++
		return nil
	}}
	a, _ := windowSender(t, chain, 64, 100)
	a.net.ObserveHead(1)
	if n, err := a.Pump(context.Background()); err != nil || n != slots {
		t.Fatalf("first account's pump: %d, %v; want %d", n, err, slots)
	}
	if refused[a.account.Address] == 0 {
		t.Fatal("the first account was not refused: the test's node keeps no limit")
	}
	b, _ := windowSender(t, chain, 64, 100)
	b.net = a.net // the same network: what one account learned, the other knows
	b.window = newWindow(a.net)
	if n, err := b.Pump(context.Background()); err != nil || n != slots {
		t.Fatalf("second account's pump: %d, %v; want %d", n, err, slots)
	}
	if r := refused[b.account.Address]; r != 0 || b.window.size != slots {
		t.Fatalf("second account: %d refused, window %d; want none refused and a window of %d (the first account's lesson)", r, b.window.size, slots)
	}
	// A limit learned probeBlocks ago binds no new window.
	a.net.ObserveHead(1 + probeBlocks)
	if limit, _ := a.net.senderLimitAt(1 + probeBlocks); limit != 0 {
		t.Fatalf("a limit learned %d blocks ago still binds: %d", probeBlocks, limit)
	}
	w := newWindow(a.net)
	w.adopt(a.net.senderLimitAt(1 + probeBlocks))
	if w.fit(1+probeBlocks, 10_000_000, 50_000); w.size != 200 {
		t.Fatalf("a new window after the limit expired fits %d, want 200 (a block of 10M gas at 50k)", w.size)
	}
	// The second account's window, which adopted the limit, does not fit
	// to a block once the limit expired: only growth widens it, as after
	// a refusal of its own.
	if b.window.fit(1+probeBlocks, 10_000_000, 50_000); b.window.size != slots {
		t.Fatalf("the adopting window fitted to a block after the limit expired: %d, want %d", b.window.size, slots)
	}
}

// TestOneSenderProbesPerHead: accounts whose ceilings expired together
// probe past them one per head, not all at once (each probe of a busy node
// is a batch refused).
func TestOneSenderProbesPerHead(t *testing.T) {
	chain := &fakeChain{}
	a, _ := windowSender(t, chain, 16, 0)
	b, _ := windowSender(t, chain, 16, 0)
	b.net = a.net
	for _, s := range []*Sender{a, b} {
		s.window.ceiling, s.window.ceilingAt, s.window.limited = 16, 1, true
	}
	head := uint64(1 + probeBlocks)
	if a.growWindow(head-1, 16) || b.growWindow(head-1, 16) {
		t.Fatal("a window grew past its ceiling before probeBlocks passed")
	}
	grown := 0
	for _, s := range []*Sender{a, b} {
		if s.growWindow(head, 16) {
			grown++
		}
	}
	if grown != 1 {
		t.Fatalf("%d accounts probed past their ceiling at head %d, want 1", grown, head)
	}
	if !b.growWindow(head+1, 16) || b.window.size != 32 {
		t.Fatalf("the second account did not probe at the next head: window %d", b.window.size)
	}
}

// TestSenderWindowFitsABlock: once the node took a whole batch, the window
// is at least what one block can include of the account's transactions, in
// the same pump; after a refusal for capacity only blocks widen it.
func TestSenderWindowFitsABlock(t *testing.T) {
	chain := &fakeChain{gasLimit: 1_000_000}
	s, store := windowSender(t, chain, 4, 100)
	s.net.ObserveHead(1)
	store.summaries = 0
	// A block holds what the estimates say (50,000 each), not what the
	// limits with their margin would.
	gas := uint64(50_000)
	want := int(1_000_000 / gas)
	if n, err := s.Pump(context.Background()); err != nil || n != want {
		t.Fatalf("first pump: %d, %v; want %d (4, then what a block of 1M gas holds at %d gas)", n, err, want, gas)
	}
	if store.summaries != 1 {
		t.Fatalf("a cold account's first pump read its in-flight summary %d times, want once (sync's answer serves the pump)", store.summaries)
	}
	// After a refusal for capacity the block's size no longer counts.
	w := window{size: 8, min: 2, max: 100}
	w.shrink(5)
	if w.fit(6, 1_000_000, gas); w.size != 4 {
		t.Fatalf("a refused window fitted to a block: %d, want 4 (8 halved)", w.size)
	}
}

// TestSenderFundsReservedIsNotFinal: a node that refuses for insufficient
// funds while the account's earlier transactions are pending (it reserves
// their whole cost) gets the transaction again later, with a smaller
// window; with nothing pending the refusal fails the transaction.
func TestSenderFundsReservedIsNotFinal(t *testing.T) {
	broke := false
	chain := &fakeChain{}
	chain.send = func(tx *types.Transaction) error {
		switch {
		case broke:
			return errors.New("insufficient funds for gas * price + value: balance 1, tx cost 2")
		case tx.Nonce() >= 2:
			return errors.New("insufficient funds for gas * price + value: balance 10, queued cost 9, tx cost 2, overshot 1")
		}
		return nil
	}
	s, store := windowSender(t, chain, 8, 4)
	if _, err := s.Pump(context.Background()); !errors.Is(err, ErrNodeBusy) {
		t.Fatalf("pump: %v, want ErrNodeBusy (a refusal that passes)", err)
	}
	for _, id := range []string{"t002", "t003"} {
		if tx := store.txs[id]; tx.Status != StatusNew || tx.Nonce != nil {
			t.Fatalf("%s: %s, nonce %v; want new again without a nonce", id, tx.Status, tx.Nonce)
		}
	}
	if s.window.size != 4 {
		t.Fatalf("window %d, want 4 (8 halved)", s.window.size)
	}
	// An account that cannot pay for the transaction alone: final.
	for _, id := range []string{"t000", "t001"} {
		store.txs[id].Status = StatusCompleted
	}
	broke = true
	s.net.ObserveHead(20)
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatalf("pump: %v", err)
	}
	if tx := store.txs["t002"]; tx.Status != StatusFailed || tx.Error == nil || tx.Error.Code != TxInsufficientFunds {
		t.Fatalf("t002 with nothing pending: %s %+v, want failed for insufficient funds", tx.Status, tx.Error)
	}
}

// windowSender returns a sender on chain with an initial window of window
// (at least 2) and n transactions queued, t000 on.
func windowSender(t *testing.T, chain *fakeChain, window, n int) (*Sender, *memStore) {
	t.Helper()
	store := newMemStore()
	s := newTestSender(t, chain, store, window)
	s.net.MinInFlight = 2
	s.window = newWindow(s.net)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%03d", i)
	}
	queue(t, s, ids...)
	return s, store
}

// TestWindowGrowsToTwoBlocks: once a fit has seen the gas of the account's
// transactions, growth stops at blocksAhead blocks of them; a window
// already wider (a fit, or the initial size) stays as it is.
func TestWindowGrowsToTwoBlocks(t *testing.T) {
	w := window{size: 100, min: 16, max: 4096}
	w.fit(1, 1_000_000, 10_000) // a block holds 100
	for head := uint64(2); head < 10; head++ {
		w.limited = true
		w.grow(head, 10)
	}
	if w.size != blocksAhead*100 {
		t.Fatalf("window grew to %d, want %d (blocksAhead blocks of 100)", w.size, blocksAhead*100)
	}
	// Without a fit the maximum bounds it, as before.
	u := window{size: 100, min: 16, max: 4096}
	for head := uint64(2); head < 10; head++ {
		u.limited = true
		u.grow(head, 10)
	}
	if u.size != 4096 {
		t.Fatalf("unfitted window grew to %d, want 4096", u.size)
	}
	// Wider than two blocks already: no growth, no shrink.
	v := window{size: 512, base: 512, min: 16, max: 4096}
	v.fit(1, 1_000_000, 10_000)
	v.limited = true
	if v.grow(2, 10) || v.size != 512 {
		t.Fatalf("a window of 512 beside blocks of 100: grew to %d", v.size)
	}
}

// A window that grew for light transactions narrows to blocksAhead blocks
// of heavier ones, not below where it started; growth then follows the
// new size.
func TestWindowNarrowsToTwoBlocksOfHeavierTransactions(t *testing.T) {
	w := newWindow(&Network{InFlight: 512, MinInFlight: 16, MaxInFlight: 4096})
	const blockGas = 60_000_000
	w.fit(1, blockGas, 48_783) // transfers to holders: 1,229 a block
	if w.size != 1229 {
		t.Fatalf("fitted to %d, want 1229", w.size)
	}
	w.limited = true
	w.grow(2, 100)
	if w.size != 2458 {
		t.Fatalf("grew to %d, want 2458", w.size)
	}
	w.fit(3, blockGas, 146_703) // transfers to fresh addresses: 408 a block
	if w.size != 816 {
		t.Fatalf("after a batch of 408 a block the window is %d, want 816 (two blocks)", w.size)
	}
	w.fit(4, blockGas, 6_000_000) // 10 a block: not below the start
	if w.size != 512 {
		t.Fatalf("after a batch of 10 a block the window is %d, want 512 (where it started)", w.size)
	}
	w.fit(5, blockGas, 48_783) // light again: one block at once
	if w.size != 1229 {
		t.Fatalf("after light transactions again the window is %d, want 1229", w.size)
	}
}

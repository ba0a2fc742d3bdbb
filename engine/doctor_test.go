package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
)

// doctorMetrics records what the nonce doctor reports.
type doctorMetrics struct {
	NopMetrics
	mu      sync.Mutex
	repairs map[string]int
	health  NonceHealth
	reports int
}

func (m *doctorMetrics) NonceRepaired(_ MetricAccount, _ string, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.repairs == nil {
		m.repairs = map[string]int{}
	}
	m.repairs[kind]++
}

func (m *doctorMetrics) NonceHealth(_ MetricAccount, _ string, h NonceHealth) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.health, m.reports = h, m.reports+1
}

// fillersOf are the transactions sent that are fillers of s's account.
func fillersOf(s *Sender, sent []*types.Transaction) []*types.Transaction {
	var out []*types.Transaction
	for _, tx := range sent {
		if IsFiller(tx, s.account.Address) {
			out = append(out, tx)
		}
	}
	return out
}

// TestDoctorFillsGapBelowHeldNonce: a nonce given back below held ones
// (the store freed a's nonce 0 while b and c hold 1 and 2) leaves the
// chain's nonce below the lowest in flight with nothing of ours pending
// there. Once the gap lasted DoctorBlocks blocks its nonce is filled with a
// 0-value transfer to the account itself, counted; a filler the chain does
// not mine is raised and sent again DoctorBlocks blocks later.
func TestDoctorFillsGapBelowHeldNonce(t *testing.T) {
	chain := &fakeChain{}
	s, store, _ := newBatchSender(t, chain, 4)
	m := &doctorMetrics{}
	s.SetMetrics(m)
	observe(chain, s.net, 10)
	queue(t, s, "a", "b", "c")
	pumpAt(t, s, chain, 10)
	if err := store.ReleaseNonce(context.Background(), Fence{}, "a", &TxError{Code: TxInvalid, Message: "test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	doctor := s.net.doctorBlocks() // 15
	every := s.net.rebroadcastBlocks()
	// Checks every RebroadcastBlocks blocks: the gap is first seen at 15,
	// filled once it lasted DoctorBlocks blocks (at 30), not before.
	h := uint64(10)
	for ; h < 15+doctor; h += every {
		pumpAt(t, s, chain, h)
		if f := fillersOf(s, chain.sent); len(f) != 0 || m.repairs[NonceRepairGapFilled] != 0 {
			t.Fatalf("at head %d (gap seen at 15, DoctorBlocks %d): %d fillers sent, %d repairs", h, doctor, len(f), m.repairs[NonceRepairGapFilled])
		}
	}
	pumpAt(t, s, chain, h)
	f := fillersOf(s, chain.sent)
	if len(f) != 1 || f[0].Nonce() != 0 || f[0].Gas() != FillerGas {
		t.Fatalf("at head %d: fillers %d (want one at nonce 0)", h, len(f))
	}
	if m.repairs[NonceRepairGapFilled] != 1 {
		t.Fatalf("repairs %v, want one gap_filled", m.repairs)
	}
	if b, c := store.txs["b"], store.txs["c"]; *b.Nonce != 1 || *c.Nonce != 2 || b.Status != StatusSubmitted || c.Status != StatusSubmitted {
		t.Fatalf("held transactions touched: b %s %d, c %s %d", b.Status, *b.Nonce, c.Status, *c.Nonce)
	}
	// Not mined: raised and sent again DoctorBlocks blocks later.
	for h2 := h + every; h2 < h+doctor; h2 += every {
		pumpAt(t, s, chain, h2)
	}
	if n := len(fillersOf(s, chain.sent)); n != 1 {
		t.Fatalf("filler sent again within DoctorBlocks: %d", n)
	}
	pumpAt(t, s, chain, h+doctor)
	f = fillersOf(s, chain.sent)
	if len(f) != 2 || f[1].Nonce() != 0 || f[1].GasFeeCap().Cmp(f[0].GasFeeCap()) <= 0 || f[1].GasTipCap().Cmp(f[0].GasTipCap()) <= 0 {
		t.Fatalf("second filler: %d fillers (want 2, at nonce 0, raised fees)", len(f))
	}
	if m.repairs[NonceRepairGapFilled] != 2 {
		t.Fatalf("repairs %v, want two gap_filled", m.repairs)
	}
	// The fillers are mined with b and c: nothing more to repair.
	chain.nonce = 3
	store.txs["b"].Status, store.txs["c"].Status = StatusCompleted, StatusCompleted
	for h2 := h + doctor + every; h2 <= h+3*doctor; h2 += every {
		pumpAt(t, s, chain, h2)
	}
	if n := len(fillersOf(s, chain.sent)); n != 2 || m.repairs[NonceRepairGapFilled] != 2 {
		t.Fatalf("after the gap closed: %d fillers, repairs %v", n, m.repairs)
	}
}

// TestDoctorGapThatCloses: a gap that closes before DoctorBlocks blocks
// (the chain's nonce reaches the lowest in flight: another sender of the
// key filled it) is not filled.
func TestDoctorGapThatCloses(t *testing.T) {
	chain := &fakeChain{}
	s, store, _ := newBatchSender(t, chain, 4)
	m := &doctorMetrics{}
	s.SetMetrics(m)
	observe(chain, s.net, 10)
	queue(t, s, "a", "b")
	pumpAt(t, s, chain, 10)
	if err := store.ReleaseNonce(context.Background(), Fence{}, "a", &TxError{Code: TxInvalid, Message: "test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	pumpAt(t, s, chain, 15) // gap seen
	chain.nonce = 1         // nonce 0 used elsewhere: b is pending at the chain's nonce
	for h := uint64(20); h <= 60; h += 5 {
		pumpAt(t, s, chain, h)
	}
	if n := len(fillersOf(s, chain.sent)); n != 0 || len(m.repairs) != 0 {
		t.Fatalf("%d fillers, repairs %v; want none", n, m.repairs)
	}
}

// TestDoctorResyncsNextNonce: a next nonce ahead of the store's highest
// + 1 (it would leave a gap), behind it (it would reuse a nonce) or behind
// the chain's nonce (refused as too low) is re-read at the next check and
// counted; the next transaction takes the right nonce.
func TestDoctorResyncsNextNonce(t *testing.T) {
	for _, tc := range []struct {
		name              string
		next, chain, want uint64
	}{
		{"ahead of the store", 5, 0, 1},
		{"behind the store", 0, 0, 1},
		{"behind the chain", 1, 5, 5}, // the key was used elsewhere up to nonce 4
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain := &fakeChain{}
			s, store, _ := newBatchSender(t, chain, 4)
			m := &doctorMetrics{}
			s.SetMetrics(m)
			observe(chain, s.net, 10)
			queue(t, s, "a")
			pumpAt(t, s, chain, 10)
			s.next, chain.nonce = tc.next, tc.chain
			pumpAt(t, s, chain, 15)
			queue(t, s, "b")
			pumpAt(t, s, chain, 16)
			if b := store.txs["b"]; b.Nonce == nil || *b.Nonce != tc.want {
				t.Fatalf("b: nonce %v, want %d", b.Nonce, tc.want)
			}
			if m.repairs[NonceRepairNextResynced] != 1 {
				t.Fatalf("repairs %v, want one next_resynced", m.repairs)
			}
		})
	}
}

// TestDoctorLeavesHealthyAccountAlone: an account whose lowest nonce in
// flight is pending at the chain's nonce, even for long (the chain takes
// nothing), and one whose nonce moves, are left alone: no filler, no
// repair, the next nonce as it was. The stuck one is reported stuck since
// the block its nonce last moved, the moving one not.
func TestDoctorLeavesHealthyAccountAlone(t *testing.T) {
	chain := &fakeChain{}
	s, store, _ := newBatchSender(t, chain, 4)
	m := &doctorMetrics{}
	s.SetMetrics(m)
	book := NewNonceBook()
	s.WithNonceBook(book)
	observe(chain, s.net, 10)
	queue(t, s, "a", "b", "c")
	pumpAt(t, s, chain, 10)
	for h := uint64(11); h <= 80; h++ {
		pumpAt(t, s, chain, h)
	}
	if n := len(fillersOf(s, chain.sent)); n != 0 || len(m.repairs) != 0 || s.next != 3 {
		t.Fatalf("stuck at the chain's nonce: %d fillers, repairs %v, next %d", n, m.repairs, s.next)
	}
	h := m.health
	if !h.ChainKnown || h.ChainNonce != 0 || !h.NextKnown || h.NextNonce != 3 || h.LowestInFlight == nil || *h.LowestInFlight != 0 ||
		h.StuckSince == nil || *h.StuckSince != 10 || h.StuckBlocks != 70 || h.DoctorBlocks != 15 {
		t.Fatalf("health %+v (stuck since %v), want chain 0, next 3, lowest 0, stuck since 10 (70 blocks)", h, h.StuckSince)
	}
	if got, ok := book.Stuck("acct", "dev"); !ok || *got.StuckSince != 10 {
		t.Fatalf("book: %+v %v, want stuck since 10", got, ok)
	}
	// The chain takes them one per check: moving, not stuck, nothing repaired.
	for i, id := range []string{"a", "b", "c"} {
		chain.nonce = uint64(i + 1)
		store.txs[id].Status = StatusCompleted
		pumpAt(t, s, chain, 85+uint64(5*i))
		if m.health.StuckSince != nil {
			t.Fatalf("after %s mined: stuck since %d", id, *m.health.StuckSince)
		}
	}
	if n := len(fillersOf(s, chain.sent)); n != 0 || len(m.repairs) != 0 || s.next != 3 {
		t.Fatalf("moving: %d fillers, repairs %v, next %d", n, m.repairs, s.next)
	}
	if _, ok := book.Stuck("acct", "dev"); ok {
		t.Fatal("book still has the account stuck")
	}
	if h := m.health; h.LowestInFlight != nil || h.StuckSince != nil {
		t.Fatalf("nothing in flight: health %+v", h)
	}
}

// TestDoctorForgetsWhenActorStops: a stuck account whose actor stops
// (ForgetLoad) leaves the nonce book and is reported neither stuck nor in
// flight: the node that runs it next reports for it.
func TestDoctorForgetsWhenActorStops(t *testing.T) {
	chain := &fakeChain{}
	s, _, _ := newBatchSender(t, chain, 4)
	m := &doctorMetrics{}
	s.SetMetrics(m)
	book := NewNonceBook()
	s.WithNonceBook(book)
	observe(chain, s.net, 10)
	queue(t, s, "a")
	for h := uint64(10); h <= 20; h++ {
		pumpAt(t, s, chain, h)
	}
	if _, ok := book.Stuck("acct", "dev"); !ok || m.health.StuckSince == nil {
		t.Fatalf("not stuck after 10 blocks: %+v", m.health)
	}
	s.ForgetLoad()
	if _, ok := book.Stuck("acct", "dev"); ok {
		t.Fatal("still in the book after the actor stopped")
	}
	if h := m.health; h.StuckSince != nil || h.StuckBlocks != 0 || h.LowestInFlight != nil || !h.ChainKnown {
		t.Fatalf("health after stop: %+v", h)
	}
}

// TestDoctorWaitsForTheWatcher: a gap seen while the watcher of this
// process has not followed the chain there may be a reorg the watcher has
// not handled yet (a transaction of ours completed in a block taken back
// still holds the nonce, and is not in flight): the doctor fills nothing
// until the watcher's cursor reaches the block the gap was first seen at
// (found by the simulation, seed 507: a filler took the nonce of a
// completed transaction whose block a reorg removed, and the transaction
// then failed nonce_consumed).
func TestDoctorWaitsForTheWatcher(t *testing.T) {
	chain := &fakeChain{}
	s, store, _ := newBatchSender(t, chain, 4)
	m := &doctorMetrics{}
	s.SetMetrics(m)
	observe(chain, s.net, 10)
	s.net.ObserveProcessed(12) // the watcher stalls at block 12
	queue(t, s, "a", "b", "c")
	pumpAt(t, s, chain, 10)
	// a was completed in a block a reorg then took back: not in flight,
	// its nonce still the chain's.
	store.txs["a"].Status = StatusCompleted
	doctor, every := s.net.doctorBlocks(), s.net.rebroadcastBlocks()
	h := uint64(10)
	for ; h <= 15+3*doctor; h += every {
		pumpAt(t, s, chain, h)
	}
	if f := fillersOf(s, chain.sent); len(f) != 0 || m.repairs[NonceRepairGapFilled] != 0 {
		t.Fatalf("watcher at 12, head %d: %d fillers sent, %d repairs; want none", h, len(f), m.repairs[NonceRepairGapFilled])
	}
	// The watcher catches up (and finds nothing to move back: the gap is
	// real): the doctor fills it.
	s.net.ObserveProcessed(h)
	pumpAt(t, s, chain, h+every)
	if f := fillersOf(s, chain.sent); len(f) != 1 || f[0].Nonce() != 0 {
		t.Fatalf("watcher caught up: %d fillers, want one at nonce 0", len(f))
	}
}

package storetest

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// testReplacement: a replaced transaction is found by any of its hashes,
// completes with the hash that was mined, and a replacement needs the
// transaction to be submitted with the same nonce.
func testReplacement(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	tx := f.tx("dev", 1)
	insert(t, s, tx)
	submit(t, s, tx, 3)
	first := *tx.Hash

	repl := *tx
	second := randomHash(t)
	repl.Hash, repl.RawTx, repl.Replaced = &second, []byte("signed-again"), ptr(at(200))
	must(t, s.MarkReplaced(ctx, engine.Fence{}, &repl))
	got := get(t, s, tx.ID)
	if *got.Hash != second || string(got.RawTx) != "signed-again" || got.Replaced == nil || !got.Replaced.Equal(at(200)) || *got.Nonce != 3 {
		t.Fatalf("after MarkReplaced: hash %s raw %q replaced %v nonce %d", got.Hash, got.RawTx, got.Replaced, *got.Nonce)
	}
	for _, h := range []common.Hash{first, second} {
		found, err := s.SubmittedByHash(ctx, "dev", []common.Hash{h})
		must(t, err)
		if len(found) != 1 || found[0].ID != tx.ID || *found[0].Hash != h {
			t.Fatalf("SubmittedByHash(%s) = %v", h, txIDs(found))
		}
	}
	if found, err := s.SubmittedByHash(ctx, "other", []common.Hash{first}); err != nil || len(found) != 0 {
		t.Fatalf("SubmittedByHash on another network = %v, %v", txIDs(found), err)
	}
	wrong := repl
	wrong.Nonce = ptr(uint64(4))
	wantCode(t, s.MarkReplaced(ctx, engine.Fence{}, &wrong), engine.CodeConflict, "MarkReplaced with another nonce")

	// The first version is the one mined: the transaction keeps that hash.
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: tx.ID, Hash: first, Status: engine.StatusCompleted, BlockNumber: 9, GasUsed: 1, Events: []engine.Event{}, Ended: at(300)}}))
	if got := get(t, s, tx.ID); got.Status != engine.StatusCompleted || *got.Hash != first {
		t.Fatalf("mined: %s hash %s, want completed with %s", got.Status, got.Hash, first)
	}
	wantCode(t, s.MarkReplaced(ctx, engine.Fence{}, &repl), engine.CodeConflict, "MarkReplaced of a completed transaction")
	if found, err := s.SubmittedByHash(ctx, "dev", []common.Hash{first, second}); err != nil || len(found) != 0 {
		t.Fatalf("completed transaction still found as submitted: %v %v", txIDs(found), err)
	}
}

// testMarkSubmittedMany: a batch is stored whole, or not at all when one
// of its transactions is no longer new.
func testMarkSubmittedMany(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b, c := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	insert(t, s, a, b, c)
	sign := func(tx *engine.Transaction, nonce uint64) {
		tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = ptr(nonce), 21000, ptr(randomHash(t)), []byte{byte(nonce)}, ptr(at(100))
	}
	sign(a, 0)
	sign(b, 1)
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{a, b}))
	for _, tx := range []*engine.Transaction{a, b} {
		got := get(t, s, tx.ID)
		if got.Status != engine.StatusSubmitted || *got.Nonce != *tx.Nonce || *got.Hash != *tx.Hash {
			t.Fatalf("%s: %s nonce %v", tx.ID, got.Status, got.Nonce)
		}
		if found, err := s.SubmittedByHash(ctx, "dev", []common.Hash{*tx.Hash}); err != nil || len(found) != 1 {
			t.Fatalf("SubmittedByHash after MarkSubmittedMany: %v %v", txIDs(found), err)
		}
	}
	// b is submitted already: the batch {c, b} fails whole, c stays new.
	sign(c, 2)
	b2 := *b
	b2.Nonce = ptr(uint64(3))
	wantCode(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{c, &b2}), engine.CodeConflict, "MarkSubmittedMany with a submitted transaction")
	if got := get(t, s, c.ID); got.Status != engine.StatusNew || got.Nonce != nil {
		t.Fatalf("c after a failed batch: %s nonce %v", got.Status, got.Nonce)
	}
}

// testInFlightSummary: count and lowest nonce of the submitted
// transactions of one account on one network.
func testInFlightSummary(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	if sum, err := s.InFlightSummary(ctx, f.account.ID, "dev"); err != nil || sum.Count != 0 || sum.LowestNonce != 0 {
		t.Fatalf("empty summary = %+v, %v", sum, err)
	}
	a, b, c, other := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3), f.tx("main", 4)
	insert(t, s, a, b, c, other)
	submit(t, s, a, 0) // submitted at(100)
	submit(t, s, b, 1) // submitted at(101)
	submit(t, s, other, 0)
	// a was replaced later: its last signing is at(500); b's stays at(101).
	repl := *a
	h := randomHash(t)
	repl.Hash, repl.Replaced = &h, ptr(at(500))
	must(t, s.MarkReplaced(ctx, engine.Fence{}, &repl))
	sum, err := s.InFlightSummary(ctx, f.account.ID, "dev")
	must(t, err)
	if sum.Count != 2 || sum.LowestNonce != 0 {
		t.Fatalf("summary = %+v; want 2 in flight, lowest nonce 0", sum)
	}
	// Once a (nonce 0) is mined, the lowest in flight is b's.
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: a.ID, Hash: h, Status: engine.StatusCompleted, BlockNumber: 9, GasUsed: 1, Events: []engine.Event{}, Ended: at(600)}}))
	if sum, err := s.InFlightSummary(ctx, f.account.ID, "dev"); err != nil || sum.Count != 1 || sum.LowestNonce != 1 {
		t.Fatalf("summary after a was mined = %+v, %v; want 1 in flight, lowest nonce 1", sum, err)
	}
}

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
	must(t, s.MarkReplaced(ctx, &repl))
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
	wantCode(t, s.MarkReplaced(ctx, &wrong), engine.CodeConflict, "MarkReplaced with another nonce")

	// The first version is the one mined: the transaction keeps that hash.
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: tx.ID, Hash: first, Status: engine.StatusCompleted, BlockNumber: 9, GasUsed: 1, Events: []engine.Event{}, Ended: at(300)}}))
	if got := get(t, s, tx.ID); got.Status != engine.StatusCompleted || *got.Hash != first {
		t.Fatalf("mined: %s hash %s, want completed with %s", got.Status, got.Hash, first)
	}
	wantCode(t, s.MarkReplaced(ctx, &repl), engine.CodeConflict, "MarkReplaced of a completed transaction")
	if found, err := s.SubmittedByHash(ctx, "dev", []common.Hash{first, second}); err != nil || len(found) != 0 {
		t.Fatalf("completed transaction still found as submitted: %v %v", txIDs(found), err)
	}
}

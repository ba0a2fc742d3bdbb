package storetest

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// testFailSubmitted: a submitted transaction whose nonce was used
// elsewhere fails keeping its nonce and versions, with its callbacks; a
// transaction in another status is left alone.
func testFailSubmitted(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	tx, queued := f.tx("dev", 1), f.tx("dev", 2)
	tx.Callbacks = []string{"https://a.example/cb"}
	insert(t, s, tx, queued)
	submit(t, s, tx, 7)
	txErr := &engine.TxError{Code: engine.TxNonceConsumed, Message: "used elsewhere"}
	must(t, s.FailSubmitted(ctx, engine.Fence{}, tx.ID, txErr, at(500)))
	got := get(t, s, tx.ID)
	if got.Status != engine.StatusFailed || got.Error == nil || *got.Error != *txErr || got.Nonce == nil || *got.Nonce != 7 || got.Ended == nil {
		t.Fatalf("after FailSubmitted: %s %+v nonce %v ended %v", got.Status, got.Error, got.Nonce, got.Ended)
	}
	if n, ok, err := s.MaxNonce(ctx, tx.AccountID, "dev"); err != nil || !ok || n != 7 {
		t.Fatalf("MaxNonce after FailSubmitted = %d, %v, %v; the nonce stays used", n, ok, err)
	}
	wantPending(t, s, 1)
	wantCode(t, s.FailSubmitted(ctx, engine.Fence{}, tx.ID, txErr, at(501)), engine.CodeConflict, "FailSubmitted of a failed transaction")
	wantCode(t, s.FailSubmitted(ctx, engine.Fence{}, queued.ID, txErr, at(501)), engine.CodeConflict, "FailSubmitted of a new transaction")
	if got := get(t, s, queued.ID); got.Status != engine.StatusNew {
		t.Fatalf("new transaction changed: %s", got.Status)
	}
	wantPending(t, s, 1)
}

// testNoteErrorAndFiller: an error noted on a new transaction shows on its
// record until it is submitted; one noted on a submitted transaction (the
// failure a filler will end it with) is stored with a new version by
// MarkReplaced; every version's hash is known to HashesOf.
func testNoteErrorAndFiller(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	tx := f.tx("dev", 1)
	insert(t, s, tx)
	refused := &engine.TxError{Code: engine.TxNodeRefused, Message: "duplicate field data"}
	must(t, s.NoteError(ctx, tx.ID, engine.StatusNew, refused))
	if got := get(t, s, tx.ID); got.Status != engine.StatusNew || got.Error == nil || *got.Error != *refused {
		t.Fatalf("noted: %s %+v", got.Status, got.Error)
	}
	wantCode(t, s.NoteError(ctx, tx.ID, engine.StatusSubmitted, refused), engine.CodeConflict, "NoteError in the wrong status")
	submit(t, s, tx, 0)
	first := *tx.Hash
	if got := get(t, s, tx.ID); got.Error != nil {
		t.Fatalf("submitted with the note still on: %+v", got.Error)
	}
	if sum, err := s.InFlightSummary(ctx, tx.AccountID, "dev"); err != nil || sum.Count != 1 || sum.LowestNonce != 0 {
		t.Fatalf("InFlightSummary = %+v, %v", sum, err)
	}

	abandoned := &engine.TxError{Code: engine.TxAbandoned, Message: "abandoned by an operator"}
	must(t, s.NoteError(ctx, tx.ID, engine.StatusSubmitted, abandoned))
	filler := *tx
	second := randomHash(t)
	filler.Hash, filler.RawTx, filler.Replaced, filler.Error = &second, []byte("filler"), ptr(at(200)), abandoned
	must(t, s.MarkReplaced(ctx, engine.Fence{}, &filler))
	got := get(t, s, tx.ID)
	if got.Status != engine.StatusSubmitted || *got.Hash != second || got.Error == nil || *got.Error != *abandoned {
		t.Fatalf("filler stored: %s hash %s error %+v", got.Status, got.Hash, got.Error)
	}
	hashes, err := s.HashesOf(ctx, []string{tx.ID, "no-such-tx"})
	must(t, err)
	if len(hashes) != 1 || len(hashes[tx.ID]) != 2 || !hasHash(hashes[tx.ID], first) || !hasHash(hashes[tx.ID], second) {
		t.Fatalf("HashesOf = %v, want both versions of %s", hashes, tx.ID)
	}
	// The filler is mined: failed with the noted error.
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: tx.ID, Hash: second, Status: engine.StatusFailed, Error: abandoned, BlockNumber: 9, GasUsed: engine.FillerGas, Events: []engine.Event{}, Ended: at(300)}}))
	if got := get(t, s, tx.ID); got.Status != engine.StatusFailed || got.Error.Code != engine.TxAbandoned {
		t.Fatalf("filler mined: %s %+v", got.Status, got.Error)
	}
}

func hasHash(hs []common.Hash, h common.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

package storetest

import (
	"slices"
	"testing"

	"github.com/txengine/txengine/engine"
)

func testReleaseNonce(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	requeued, failed, fresh := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	insert(t, s, requeued, failed, fresh)
	submit(t, s, requeued, 4)
	submit(t, s, failed, 5)

	must(t, s.ReleaseNonce(ctx, engine.Fence{}, failed.ID, &engine.TxError{Code: engine.TxInsufficientFunds, Message: "no gas"}, at(50)))
	got := get(t, s, failed.ID)
	if got.Status != engine.StatusFailed || got.Error == nil || got.Error.Code != engine.TxInsufficientFunds || got.Ended == nil || !got.Ended.Equal(at(50)) {
		t.Fatalf("released with error: %+v", got)
	}
	if got.Nonce != nil || got.Hash != nil || got.RawTx != nil || got.Submitted != nil || got.GasLimit != 0 {
		t.Fatalf("released transaction keeps submission fields: nonce %v hash %v raw %d", got.Nonce, got.Hash, len(got.RawTx))
	}
	if max, ok, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || !ok || max != 4 {
		t.Fatalf("MaxNonce after release = %d %v %v, want 4", max, ok, err)
	}

	must(t, s.ReleaseNonce(ctx, engine.Fence{}, requeued.ID, nil, at(51)))
	got = get(t, s, requeued.ID)
	if got.Status != engine.StatusNew || got.Nonce != nil || got.Ended != nil || got.Error != nil {
		t.Fatalf("requeued: %+v", got)
	}
	// Requeued keeps its place in the queue: ahead of fresh.
	ready, err := s.ReadyTransactions(ctx, f.account.ID, "dev", 10)
	must(t, err)
	if ids := txIDs(ready); !slices.Equal(ids, []string{requeued.ID, fresh.ID}) {
		t.Fatalf("ready after requeue = %v, want [requeued fresh]", ids)
	}
	if _, ok, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || ok {
		t.Fatalf("MaxNonce with every nonce released: ok=%v err=%v", ok, err)
	}
	// Only a submitted transaction can be released.
	wantCode(t, s.ReleaseNonce(ctx, engine.Fence{}, fresh.ID, nil, at(52)), engine.CodeConflict, "ReleaseNonce of a new transaction")
	wantCode(t, s.ReleaseNonce(ctx, engine.Fence{}, failed.ID, nil, at(52)), engine.CodeConflict, "ReleaseNonce of a failed transaction")
}

// testReleaseNonces: a batch of releases goes in one database transaction,
// all or none: a batch naming a transaction that is not submitted changes
// nothing, a good one requeues and fails as ReleaseNonce does.
func testReleaseNonces(t *testing.T, s engine.Store) {
	br, ok := s.(engine.NonceBatchReleaser)
	if !ok {
		t.Skip("the store gives nonces back one at a time")
	}
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b, c, fresh := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3), f.tx("dev", 4)
	insert(t, s, a, b, c, fresh)
	submit(t, s, a, 7)
	submit(t, s, b, 8)
	submit(t, s, c, 9)
	noGas := &engine.TxError{Code: engine.TxInsufficientFunds, Message: "no gas"}
	wantCode(t, br.ReleaseNonces(ctx, engine.Fence{}, []engine.NonceRelease{{ID: c.ID}, {ID: fresh.ID}}, at(60)), engine.CodeConflict, "ReleaseNonces naming a new transaction")
	if got := get(t, s, c.ID); got.Status != engine.StatusSubmitted || got.Nonce == nil || *got.Nonce != 9 {
		t.Fatalf("c after a refused batch: %s nonce %v, want submitted with 9 (all or none)", got.Status, got.Nonce)
	}
	must(t, br.ReleaseNonces(ctx, engine.Fence{}, []engine.NonceRelease{{ID: c.ID}, {ID: b.ID, Err: noGas}}, at(61)))
	if got := get(t, s, c.ID); got.Status != engine.StatusNew || got.Nonce != nil || got.Hash != nil {
		t.Fatalf("c released: %s nonce %v hash %v", got.Status, got.Nonce, got.Hash)
	}
	if got := get(t, s, b.ID); got.Status != engine.StatusFailed || got.Error == nil || *got.Error != *noGas || got.Nonce != nil {
		t.Fatalf("b failed by the batch: %+v", got)
	}
	if max, ok, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || !ok || max != 7 {
		t.Fatalf("MaxNonce after the batch = %d %v %v, want 7", max, ok, err)
	}
}

func testUnmine(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	g := newFixture(t, s)
	early, late, lateFailed, other, otherNet := f.tx("dev", 1), f.tx("dev", 2), g.tx("dev", 3), f.tx("dev", 4), f.tx("main", 5)
	insert(t, s, early, late, lateFailed, other, otherNet)
	for i, tx := range []*engine.Transaction{early, late, lateFailed, other, otherNet} {
		submit(t, s, tx, uint64(i))
	}
	blk := randomHash(t)
	must(t, s.MarkMined(ctx, []engine.Mined{
		{ID: early.ID, Status: engine.StatusCompleted, BlockNumber: 9, BlockHash: blk, GasUsed: 1, Events: []engine.Event{}, Ended: at(10)},
		{ID: late.ID, Status: engine.StatusCompleted, BlockNumber: 10, BlockHash: blk, GasUsed: 1, Events: []engine.Event{}, Ended: at(10)},
		{ID: lateFailed.ID, Status: engine.StatusFailed, BlockNumber: 11, BlockHash: blk, GasUsed: 1, Error: &engine.TxError{Code: engine.TxReverted}, Ended: at(10)},
		{ID: otherNet.ID, Status: engine.StatusCompleted, BlockNumber: 12, BlockHash: blk, GasUsed: 1, Ended: at(10)},
	}))
	accounts, err := s.Unmine(ctx, "dev", 10)
	must(t, err)
	want := []string{f.account.ID, g.account.ID}
	slices.Sort(want)
	slices.Sort(accounts)
	if !slices.Equal(accounts, want) {
		t.Fatalf("Unmine accounts = %v, want %v", accounts, want)
	}
	for _, tx := range []*engine.Transaction{late, lateFailed} {
		got := get(t, s, tx.ID)
		if got.Status != engine.StatusSubmitted || got.BlockNumber != nil || got.Ended != nil || got.Error != nil || got.Events != nil {
			t.Fatalf("unmined %s: %+v", tx.ID, got)
		}
		if got.Nonce == nil || got.Hash == nil || len(got.RawTx) == 0 {
			t.Fatalf("unmined %s lost its signed transaction", tx.ID)
		}
	}
	if got := get(t, s, early.ID); got.Status != engine.StatusCompleted {
		t.Fatalf("block 9 was unmined: %s", got.Status)
	}
	if got := get(t, s, otherNet.ID); got.Status != engine.StatusCompleted {
		t.Fatalf("another network was unmined: %s", got.Status)
	}
	if got := get(t, s, other.ID); got.Status != engine.StatusSubmitted {
		t.Fatalf("pending transaction changed: %s", got.Status)
	}
}

func testPendingAccounts(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	idle, queued, inflight := newFixture(t, s), newFixture(t, s), newFixture(t, s)
	done, waiting, sent, elsewhere := idle.tx("dev", 1), queued.tx("dev", 2), inflight.tx("dev", 3), idle.tx("main", 4)
	waiting.Status = engine.StatusWaiting
	insert(t, s, done, waiting, sent, elsewhere)
	submit(t, s, done, 0)
	submit(t, s, sent, 0)
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: done.ID, Status: engine.StatusCompleted, BlockNumber: 1, GasUsed: 1, Ended: at(9)}}))
	got, err := s.PendingAccounts(ctx, "dev")
	must(t, err)
	want := []string{queued.account.ID, inflight.account.ID}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("PendingAccounts = %v, want %v (idle account and other network excluded)", got, want)
	}
}

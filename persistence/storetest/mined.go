package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

func testSubmittedByHash(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b, c, d := f.tx("dev", 1), f.tx("dev", 2), f.tx("sepolia", 3), f.tx("dev", 4)
	insert(t, s, a, b, c, d)
	submit(t, s, a, 0)
	submit(t, s, b, 1)
	submit(t, s, c, 0)
	submit(t, s, d, 2)
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: d.ID, Status: engine.StatusCompleted, BlockNumber: 1, Ended: at(9)}}))

	got, err := s.SubmittedByHash(ctx, "dev", []common.Hash{*b.Hash, *c.Hash, *d.Hash, randomHash(t), *a.Hash})
	must(t, err)
	ids := txIDs(got)
	slices.Sort(ids)
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("SubmittedByHash(dev) = %v, want %v (c is on sepolia, d is completed)", ids, want)
	}
	for _, tx := range got {
		if tx.ID == a.ID {
			wantTx(t, tx, a)
		}
	}

	got, err = s.SubmittedByHash(ctx, "sepolia", []common.Hash{*a.Hash, *c.Hash})
	must(t, err)
	if ids := txIDs(got); !slices.Equal(ids, []string{c.ID}) {
		t.Fatalf("SubmittedByHash(sepolia) = %v, want %v", ids, []string{c.ID})
	}
	got, err = s.SubmittedByHash(ctx, "dev", nil)
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("SubmittedByHash(no hashes) = %v", txIDs(got))
	}

	// Many hashes at once (more than one statement's worth of parameters in
	// some databases).
	many := make([]common.Hash, 0, 2001)
	for range 2000 {
		many = append(many, randomHash(t))
	}
	many = append(many, *b.Hash)
	got, err = s.SubmittedByHash(ctx, "dev", many)
	must(t, err)
	if ids := txIDs(got); !slices.Equal(ids, []string{b.ID}) {
		t.Fatalf("SubmittedByHash(2001 hashes) = %v, want %v", ids, []string{b.ID})
	}
}

func testMarkMined(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	ok, bad := f.tx("dev", 1), f.tx("dev", 2)
	insert(t, s, ok, bad)
	submit(t, s, ok, 0)
	submit(t, s, bad, 1)

	blockHash := randomHash(t)
	events := []engine.Event{{
		Event: "Transfer", Signature: "Transfer(address,address,uint256)", Address: randomAddress(t),
		BlockNumber: 42, BlockHash: blockHash, TransactionHash: *ok.Hash, LogIndex: 3,
		ReturnValues: map[string]any{"to": "0x00000000000000000000000000000000000000aa", "value": "1000", "ok": true, "n": float64(1)},
	}}
	txErr := &engine.TxError{Code: engine.TxReverted, Message: "execution reverted: nope"}
	must(t, s.MarkMined(ctx, []engine.Mined{
		{ID: ok.ID, Status: engine.StatusCompleted, BlockNumber: 42, BlockHash: blockHash, GasUsed: 51000, Events: events, Ended: at(300)},
		{ID: bad.ID, Status: engine.StatusFailed, BlockNumber: 42, BlockHash: blockHash, GasUsed: 30000, Error: txErr, Ended: at(301)},
	}))

	ok.Status, ok.BlockNumber, ok.BlockHash, ok.GasUsed, ok.Events, ok.Ended =
		engine.StatusCompleted, ptr(uint64(42)), ptr(blockHash), ptr(uint64(51000)), events, ptr(at(300))
	wantTx(t, get(t, s, ok.ID), ok)
	bad.Status, bad.BlockNumber, bad.BlockHash, bad.GasUsed, bad.Error, bad.Ended =
		engine.StatusFailed, ptr(uint64(42)), ptr(blockHash), ptr(uint64(30000)), txErr, ptr(at(301))
	wantTx(t, get(t, s, bad.ID), bad)

	must(t, s.MarkMined(ctx, nil))
}

func testMarkMinedIsAtomic(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a := f.tx("dev", 1)
	insert(t, s, a)
	submit(t, s, a, 0)
	err := s.MarkMined(ctx, []engine.Mined{
		{ID: a.ID, Status: engine.StatusCompleted, BlockNumber: 5, GasUsed: 1, Ended: at(10)},
		{ID: newID(), Status: engine.StatusCompleted, BlockNumber: 5, GasUsed: 1, Ended: at(10)},
	})
	if err == nil {
		t.Fatalf("MarkMined with an unknown transaction succeeded")
	}
	wantCode(t, err, engine.CodeNotFound, "MarkMined with an unknown transaction")
	wantTx(t, get(t, s, a.ID), a) // still submitted, no block
}

func testMarkFailed(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	fresh, waiting, sent, done := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3), f.tx("dev", 4)
	waiting.Status = engine.StatusWaiting
	insert(t, s, fresh, waiting, sent, done)
	submit(t, s, sent, 0)
	submit(t, s, done, 1)
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: done.ID, Status: engine.StatusCompleted, BlockNumber: 9, Ended: at(9)}}))

	for i, tx := range []*engine.Transaction{fresh, waiting, sent} {
		txErr := &engine.TxError{Code: engine.TxDependencyFailed, Message: fmt.Sprintf("dependency %d failed", i)}
		ended := at(500 + i)
		must(t, s.MarkFailed(ctx, tx.ID, txErr, ended))
		tx.Status, tx.Error, tx.Ended = engine.StatusFailed, txErr, &ended
		wantTx(t, get(t, s, tx.ID), tx)
	}

	wantCode(t, s.MarkFailed(ctx, fresh.ID, &engine.TxError{Code: engine.TxExpired}, at(600)), engine.CodeConflict, "MarkFailed of a failed transaction")
	wantTx(t, get(t, s, fresh.ID), fresh) // first failure kept
	wantCode(t, s.MarkFailed(ctx, done.ID, &engine.TxError{Code: engine.TxExpired}, at(600)), engine.CodeConflict, "MarkFailed of a completed transaction")
	if got := get(t, s, done.ID); got.Status != engine.StatusCompleted || got.Error != nil {
		t.Fatalf("completed transaction changed: status %s, error %v", got.Status, got.Error)
	}
	wantCode(t, s.MarkFailed(ctx, newID(), &engine.TxError{Code: engine.TxExpired}, at(600)), engine.CodeNotFound, "MarkFailed of an unknown transaction")
}

func testCursors(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	wantCursor := func(network string, want uint64, wantOK bool) {
		t.Helper()
		got, ok, err := s.Cursor(ctx, network)
		must(t, err)
		if got != want || ok != wantOK {
			t.Fatalf("Cursor(%s) = %d, %v; want %d, %v", network, got, ok, want, wantOK)
		}
	}
	wantCursor("dev", 0, false)
	must(t, s.SetCursor(ctx, "dev", 0, common.Hash{0xa0}))
	wantCursor("dev", 0, true)
	must(t, s.SetCursor(ctx, "dev", 100, common.Hash{0xa1}))
	wantCursor("dev", 100, true)
	wantCursor("sepolia", 0, false)
	must(t, s.SetCursor(ctx, "sepolia", 1<<40, common.Hash{0xb0}))
	must(t, s.SetCursor(ctx, "dev", 97, common.Hash{0xa2})) // back, after a reorg
	wantCursor("dev", 97, true)
	wantCursor("sepolia", 1<<40, true)
}

func testProcessedHashes(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	wantHash := func(n uint64, want common.Hash, wantOK bool) {
		t.Helper()
		got, ok, err := s.ProcessedHash(ctx, "dev", n)
		must(t, err)
		if got != want || ok != wantOK {
			t.Fatalf("ProcessedHash(%d) = %s, %v; want %s, %v", n, got, ok, want, wantOK)
		}
	}
	for n := uint64(1); n <= 10; n++ {
		must(t, s.SetCursor(ctx, "dev", n, common.Hash{byte(n)}))
	}
	wantHash(10, common.Hash{10}, true)
	wantHash(3, common.Hash{3}, true)
	wantHash(11, common.Hash{}, false)
	// Another network keeps its own hashes.
	must(t, s.SetCursor(ctx, "main", 3, common.Hash{0xee}))
	wantHash(3, common.Hash{3}, true)
	// Going back forgets the hashes above the new cursor.
	must(t, s.SetCursor(ctx, "dev", 6, common.Hash{6}))
	wantHash(7, common.Hash{}, false)
	wantHash(6, common.Hash{6}, true)
	// Replacing a block's hash (same height, other block) keeps the new one.
	must(t, s.SetCursor(ctx, "dev", 6, common.Hash{0x66}))
	wantHash(6, common.Hash{0x66}, true)
	// Only the last ProcessedRetention hashes are kept.
	far := uint64(6 + engine.ProcessedRetention + 1)
	must(t, s.SetCursor(ctx, "dev", far, common.Hash{0xff}))
	wantHash(5, common.Hash{}, false)
	wantHash(far, common.Hash{0xff}, true)
}

// testConcurrentWriters runs writers that group-commit batches at once,
// with readers polling meanwhile: every row lands, each writer's rows keep
// their order, nothing fails with a lock error.
func testConcurrentWriters(t *testing.T, s engine.Store) {
	const (
		writers = 8
		batches = 10
		perTx   = 20
	)
	ctx := ctxOf(t)
	f := newFixture(t, s)

	byWriter := make([][]string, writers)
	errs := make(chan error, writers+4)
	done := make(chan struct{})
	start := make(chan struct{})
	var readers, all sync.WaitGroup
	for w := range writers {
		all.Go(func() {
			<-start
			for b := range batches {
				batch := make([]*engine.Transaction, perTx)
				for i := range batch {
					batch[i] = f.tx("dev", w*1000+b*perTx+i)
					byWriter[w] = append(byWriter[w], batch[i].ID)
				}
				if err := s.InsertTransactions(ctx, batch); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, b, err)
					return
				}
			}
		})
	}
	for r := range 4 {
		readers.Go(func() {
			<-start
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := s.ReadyTransactions(ctx, f.account.ID, "dev", 50); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if _, _, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	all.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	ready, err := s.ReadyTransactions(ctx, f.account.ID, "dev", writers*batches*perTx+10)
	must(t, err)
	if len(ready) != writers*batches*perTx {
		t.Fatalf("ready = %d rows, want %d", len(ready), writers*batches*perTx)
	}
	pos := make(map[string]int, len(ready))
	for i, tx := range ready {
		if _, dup := pos[tx.ID]; dup {
			t.Fatalf("transaction %s listed twice", tx.ID)
		}
		pos[tx.ID] = i
	}
	for w, ids := range byWriter {
		for i := 1; i < len(ids); i++ {
			if pos[ids[i-1]] >= pos[ids[i]] {
				t.Fatalf("writer %d: transaction %d is before %d in acceptance order", w, i, i-1)
			}
		}
	}
}

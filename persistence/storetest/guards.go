package storetest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// The schema and status guards of issue 15: one nonce per (account,
// network), transitions only from the statuses they may come from, and the
// watcher's writes fenced by the network lease.

// signedAt returns tx with nonce, a fresh hash and signed bytes, submitted
// at at(sec), without storing it.
func signedAt(t *testing.T, tx *engine.Transaction, nonce uint64, sec int) *engine.Transaction {
	t.Helper()
	tx.Nonce = ptr(nonce)
	tx.GasLimit = 21000
	tx.Hash = ptr(randomHash(t))
	tx.RawTx = []byte("signed-" + tx.ID)
	tx.Submitted = ptr(at(sec))
	return tx
}

// testNonceUnique: a nonce is held by one transaction per (account,
// network); the same nonce on another network or of another account is
// fine, and a released nonce can be taken again.
func testNonceUnique(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f, g := newFixture(t, s), newFixture(t, s)
	first, dup, batchA, batchB := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3), f.tx("dev", 4)
	otherNet, otherAccount := f.tx("main", 5), g.tx("dev", 6)
	insert(t, s, first, dup, batchA, batchB, otherNet, otherAccount)

	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, first, 7, 10)}))
	err := s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, dup, 7, 11)})
	wantCode(t, err, engine.CodeConflict, "a second transaction of the account on the network with nonce 7")
	if got := get(t, s, dup.ID); got.Status != engine.StatusNew || got.Nonce != nil || got.Hash != nil {
		t.Fatalf("the refused transaction changed: status %s, nonce %v, hash %v", got.Status, got.Nonce, got.Hash)
	}
	// Within one batch too, all or none.
	err = s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, batchA, 8, 12), signedAt(t, batchB, 8, 12)})
	wantCode(t, err, engine.CodeConflict, "a batch assigning nonce 8 twice")
	for _, tx := range []*engine.Transaction{batchA, batchB} {
		if got := get(t, s, tx.ID); got.Status != engine.StatusNew || got.Nonce != nil {
			t.Fatalf("a transaction of the refused batch changed: status %s, nonce %v", got.Status, got.Nonce)
		}
	}
	if n, ok, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || !ok || n != 7 {
		t.Fatalf("MaxNonce after the refusals = %d, %v, %v; want 7", n, ok, err)
	}

	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, otherNet, 7, 13)}))
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, otherAccount, 7, 14)}))

	// A released nonce is free again.
	must(t, s.ReleaseNonce(ctx, engine.Fence{}, first.ID, nil, time.Time{}))
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, dup, 7, 15)}))
	// A transaction that ended keeps its nonce: it stays taken.
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: dup.ID, Status: engine.StatusCompleted, BlockNumber: 3, BlockHash: randomHash(t),
		GasUsed: 1, Events: []engine.Event{}, Ended: at(16)}}))
	err = s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signedAt(t, first, 7, 17)})
	wantCode(t, err, engine.CodeConflict, "nonce 7 again after its transaction completed")
}

// statusRows inserts one transaction of f per status that MarkMined must
// not move (new, waiting, completed, failed), with a callback URL each, and
// returns them by status.
func statusRows(t *testing.T, s engine.Store, f fixture) map[engine.TxStatus]*engine.Transaction {
	t.Helper()
	ctx := ctxOf(t)
	rows := map[engine.TxStatus]*engine.Transaction{}
	for i, st := range []engine.TxStatus{engine.StatusNew, engine.StatusWaiting, engine.StatusCompleted, engine.StatusFailed} {
		tx := f.tx("dev", 20+i)
		tx.Callbacks = []string{"http://127.0.0.1:9/cb"}
		if st == engine.StatusWaiting {
			tx.Status = st
		}
		insert(t, s, tx)
		rows[st] = tx
	}
	done, failed := rows[engine.StatusCompleted], rows[engine.StatusFailed]
	submit(t, s, done, 40)
	must(t, s.MarkMined(ctx, []engine.Mined{{ID: done.ID, Status: engine.StatusCompleted, BlockNumber: 2,
		BlockHash: randomHash(t), GasUsed: 1, Events: []engine.Event{}, Ended: at(41)}}))
	must(t, s.MarkFailed(ctx, failed.ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(42)))
	for st, tx := range rows {
		rows[st] = get(t, s, tx.ID)
	}
	return rows
}

// testMarkMinedOnlySubmitted: MarkMined moves transactions only from
// submitted. The strict MarkMined refuses a batch holding another status
// (ErrConflict, nothing applied); MarkMinedFenced applies the submitted
// ones and names the others, left unchanged with no callback added.
func testMarkMinedOnlySubmitted(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	rows := statusRows(t, s, f)
	sent := f.tx("dev", 30)
	sent.Callbacks = []string{"http://127.0.0.1:9/cb"}
	insert(t, s, sent)
	submit(t, s, sent, 50)
	sent = get(t, s, sent.ID)
	pendingBefore := len(outbox(t, s))

	mined := func(id string) engine.Mined {
		return engine.Mined{ID: id, Status: engine.StatusCompleted, BlockNumber: 7, BlockHash: randomHash(t),
			GasUsed: 21000, Events: []engine.Event{}, Ended: at(60)}
	}
	for st, tx := range rows {
		err := s.MarkMined(ctx, []engine.Mined{mined(sent.ID), mined(tx.ID)})
		wantCode(t, err, engine.CodeConflict, "MarkMined of a "+string(st)+" transaction")
		wantTx(t, get(t, s, tx.ID), tx)
		wantTx(t, get(t, s, sent.ID), sent) // all or none
	}

	outcomes := []engine.Mined{mined(sent.ID)}
	var wantSkipped []string
	for _, tx := range rows {
		outcomes = append(outcomes, mined(tx.ID))
		wantSkipped = append(wantSkipped, tx.ID)
	}
	skipped, err := s.MarkMinedFenced(ctx, engine.NetworkFence{Network: "dev"}, outcomes)
	must(t, err)
	slices.Sort(skipped)
	slices.Sort(wantSkipped)
	if !slices.Equal(skipped, wantSkipped) {
		t.Fatalf("MarkMinedFenced skipped %v, want %v", skipped, wantSkipped)
	}
	for _, tx := range rows {
		wantTx(t, get(t, s, tx.ID), tx)
	}
	if got := get(t, s, sent.ID); got.Status != engine.StatusCompleted || got.BlockNumber == nil || *got.BlockNumber != 7 {
		t.Fatalf("the submitted transaction was not mined: status %s, block %v", got.Status, got.BlockNumber)
	}
	if got := outbox(t, s); len(got) != pendingBefore+1 || len(got[sent.ID]) != 1 {
		t.Fatalf("outbox after MarkMinedFenced: %d transactions with rows (want %d), %d rows of the mined one (want 1)",
			len(got), pendingBefore+1, len(got[sent.ID]))
	}
	// Mined twice (the watcher read it before it completed): skipped.
	skipped, err = s.MarkMinedFenced(ctx, engine.NetworkFence{Network: "dev"}, []engine.Mined{mined(sent.ID)})
	must(t, err)
	if !slices.Equal(skipped, []string{sent.ID}) {
		t.Fatalf("MarkMinedFenced of a completed transaction skipped %v, want it", skipped)
	}
	if got := outbox(t, s); len(got[sent.ID]) != 1 {
		t.Fatalf("a second MarkMined added callbacks: %d rows", len(got[sent.ID]))
	}
	_, err = s.MarkMinedFenced(ctx, engine.NetworkFence{Network: "dev"}, []engine.Mined{mined(newID())})
	wantCode(t, err, engine.CodeNotFound, "MarkMinedFenced of an unknown transaction")
}

// testUnmineOnlyMined: Unmine moves back completed and failed rows of the
// blocks that left and nothing else: a transaction cancelled meanwhile or
// still submitted keeps its status.
func testUnmineOnlyMined(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	rows := statusRows(t, s, f) // the completed one is in block 2
	accounts, err := s.UnmineFenced(ctx, engine.NetworkFence{Network: "dev"}, 1)
	must(t, err)
	if !slices.Equal(accounts, []string{f.account.ID}) {
		t.Fatalf("UnmineFenced accounts = %v, want %v", accounts, []string{f.account.ID})
	}
	for st, tx := range rows {
		if st == engine.StatusCompleted {
			if got := get(t, s, tx.ID); got.Status != engine.StatusSubmitted || got.BlockNumber != nil {
				t.Fatalf("the mined transaction was not unmined: %s, block %v", got.Status, got.BlockNumber)
			}
			continue
		}
		wantTx(t, get(t, s, tx.ID), tx)
	}
}

// wantLeaseLost fails the test unless err wraps engine.ErrLeaseLost.
func wantLeaseLost(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("%s: got %v, want engine.ErrLeaseLost", what, err)
	}
}

// testNetworkFence: the watcher's writes go through only while the fence's
// node holds the network's lease at the fence's epoch and the lease has not
// expired; a write of an earlier tenure, another node, an expired lease or
// a network without a lease is refused with ErrLeaseLost and writes
// nothing. The zero fence is not checked.
func testNetworkFence(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b, c := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	insert(t, s, a, b, c)
	submit(t, s, a, 0)
	submit(t, s, b, 1)
	submit(t, s, c, 2)
	mined := func(tx *engine.Transaction, block uint64) []engine.Mined {
		return []engine.Mined{{ID: tx.ID, Status: engine.StatusCompleted, BlockNumber: block, BlockHash: randomHash(t),
			GasUsed: 1, Events: []engine.Event{}, Ended: at(70)}}
	}
	wantCursor := func(want uint64, wantHash common.Hash) {
		t.Helper()
		got, ok, err := s.Cursor(ctx, "dev")
		must(t, err)
		h, known, err := s.ProcessedHash(ctx, "dev", want)
		must(t, err)
		if !ok || got != want || !known || h != wantHash {
			t.Fatalf("cursor = %d, %v (hash %s, %v); want %d (hash %s)", got, ok, h.Hex(), known, want, wantHash.Hex())
		}
	}
	// refused checks that every write of fence is refused and changes nothing.
	refused := func(fence engine.NetworkFence, why string) {
		t.Helper()
		cursor, _, err := s.Cursor(ctx, "dev")
		must(t, err)
		beforeA, beforeC := get(t, s, a.ID), get(t, s, c.ID)
		wantLeaseLost(t, s.SetCursorFenced(ctx, fence, cursor+1, randomHash(t)), "SetCursorFenced "+why)
		_, err = s.MarkMinedFenced(ctx, fence, mined(c, cursor+1))
		wantLeaseLost(t, err, "MarkMinedFenced "+why)
		_, err = s.UnmineFenced(ctx, fence, 0)
		wantLeaseLost(t, err, "UnmineFenced "+why)
		if got, _, err := s.Cursor(ctx, "dev"); err != nil || got != cursor {
			t.Fatalf("cursor after a refused write = %d (%v), want %d", got, err, cursor)
		}
		wantTx(t, get(t, s, a.ID), beforeA)
		wantTx(t, get(t, s, c.ID), beforeC)
	}

	refused(engine.NetworkFence{Network: "dev", Node: "a", Epoch: 1}, "on a network without a lease")

	held, epoch, err := s.AcquireNetworkLease(ctx, "dev", "a", networkLeaseTTL)
	must(t, err)
	if !held || epoch != 1 {
		t.Fatalf("AcquireNetworkLease = %v, %d; want held at epoch 1", held, epoch)
	}
	fa := engine.NetworkFence{Network: "dev", Node: "a", Epoch: 1}
	h5 := randomHash(t)
	must(t, s.SetCursorFenced(ctx, fa, 5, h5))
	wantCursor(5, h5)
	skipped, err := s.MarkMinedFenced(ctx, fa, mined(a, 5))
	must(t, err)
	if len(skipped) != 0 {
		t.Fatalf("MarkMinedFenced skipped %v", skipped)
	}
	must(t, s.MarkMined(ctx, mined(b, 6)))
	if ids, err := s.UnmineFenced(ctx, fa, 6); err != nil || !slices.Equal(ids, []string{f.account.ID}) {
		t.Fatalf("UnmineFenced = %v, %v; want the account", ids, err)
	}

	refused(engine.NetworkFence{Network: "dev", Node: "b", Epoch: 1}, "of another node")
	refused(engine.NetworkFence{Network: "dev", Node: "a", Epoch: 2}, "of a later epoch")
	refused(engine.NetworkFence{Network: "main", Node: "a", Epoch: 1}, "on another network")

	// The lease expires without a taker: a's tenure is over.
	time.Sleep(networkLeaseTTL + 50*time.Millisecond)
	refused(fa, "after the lease expired")
	// a takes it again: a new tenure, and the old fence stays refused.
	held, epoch, err = s.AcquireNetworkLease(ctx, "dev", "a", time.Minute)
	must(t, err)
	if !held || epoch != 2 {
		t.Fatalf("AcquireNetworkLease after expiry = %v, %d; want held at epoch 2", held, epoch)
	}
	refused(fa, "of the expired tenure")
	fa2 := engine.NetworkFence{Network: "dev", Node: "a", Epoch: 2}
	h6 := randomHash(t)
	must(t, s.SetCursorFenced(ctx, fa2, 6, h6))
	wantCursor(6, h6)
	// Released and taken by b: a's writes are refused, b's go through.
	must(t, s.ReleaseNetworkLease(ctx, "dev", "a"))
	refused(fa2, "after the release")
	held, epoch, err = s.AcquireNetworkLease(ctx, "dev", "b", time.Minute)
	must(t, err)
	if !held || epoch != 3 {
		t.Fatalf("AcquireNetworkLease by b = %v, %d; want held at epoch 3", held, epoch)
	}
	refused(fa2, "after b took the lease")
	fb := engine.NetworkFence{Network: "dev", Node: "b", Epoch: 3}
	if _, err := s.MarkMinedFenced(ctx, fb, mined(c, 7)); err != nil {
		t.Fatalf("MarkMinedFenced of the holder: %v", err)
	}
	// The zero fence (single-node mode) is not checked.
	must(t, s.SetCursorFenced(ctx, engine.NetworkFence{Network: "dev"}, 8, randomHash(t)))
}

// DuplicateNonces0009 checks that migration 0009 refuses existing
// transactions sharing an (account, network, nonce), naming how many keys
// are held twice, and applies once they are resolved. old is a store
// migrated up to version 8 only; exec runs a statement on its database
// (placeholders ?) and stays open; migrate opens another store on the same
// database, applying every migration, and arranges for it to be closed.
func DuplicateNonces0009(t *testing.T, old engine.Store, exec func(query string, args ...any) error, migrate func() (engine.Store, error)) {
	f, g := newFixture(t, old), newFixture(t, old)
	var txs []*engine.Transaction
	for i := range 7 {
		txs = append(txs, f.tx("dev", i))
	}
	txs = append(txs, f.tx("main", 8), g.tx("dev", 9))
	insert(t, old, txs...)
	// Nonce 3 three times and nonce 4 twice on (f, dev): 2 keys; nonce 3 of
	// f on main and of g on dev do not count, nor do rows without a nonce.
	for i, nonce := range []int{3, 3, 3, 4, 4, 5, -1, 3, 3} {
		if nonce < 0 {
			continue
		}
		must(t, exec(`UPDATE transactions SET status = 'submitted', nonce = ? WHERE id = ?`, nonce, txs[i].ID))
	}
	_, err := migrate()
	if err == nil {
		t.Fatal("migration 0009 applied over duplicate nonces")
	}
	if !strings.Contains(err.Error(), "2 (account, network, nonce) keys") || !strings.Contains(err.Error(), "0009") {
		t.Fatalf("migration error %q does not name the migration and the count (2)", err)
	}
	// Resolved by the operator (here: the duplicates lose their nonce).
	for _, i := range []int{1, 2, 4} {
		must(t, exec(`UPDATE transactions SET status = 'new', nonce = NULL WHERE id = ?`, txs[i].ID))
	}
	s, err := migrate()
	must(t, err)
	n, ok, err := s.MaxNonce(ctxOf(t), f.account.ID, "dev")
	if err != nil || !ok || n != 5 {
		t.Fatalf("MaxNonce after the migration = %d, %v, %v; want 5", n, ok, err)
	}
	err = s.MarkSubmittedMany(ctxOf(t), engine.Fence{}, []*engine.Transaction{signedAt(t, txs[1], 3, 30)})
	wantCode(t, err, engine.CodeConflict, "nonce 3 again after migration 0009")
}

package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// The writes of many rows in one call (a store may write them in bulk):
// all or none, the error of the first failing row in input order, and the
// same rows stored as one at a time.

// wantNamed fails unless err has code and names the transaction id.
func wantNamed(t *testing.T, err error, code engine.Code, id, what string) {
	t.Helper()
	wantCode(t, err, code, what)
	if !strings.Contains(err.Error(), id) {
		t.Fatalf("%s: %v does not name the failing transaction %s", what, err, id)
	}
}

// testBulkMarkSubmitted: MarkSubmittedMany of many rows fails whole on the
// first row (in input order) that is not new, missing or repeated, and
// otherwise stores every row and its attempt as one at a time would.
func testBulkMarkSubmitted(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	fence, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	const n = 40
	txs := make([]*engine.Transaction, n)
	for i := range txs {
		txs[i] = f.tx("dev", i)
	}
	insert(t, s, txs...)
	for i, tx := range txs {
		signedAt(t, tx, uint64(i), 100+i)
		if i%2 == 1 {
			tx.GasLimit = 0 // unknown: NULL
		}
	}
	txs[5].RawTx = nil
	must(t, s.NoteError(ctx, txs[1].ID, engine.StatusNew, &engine.TxError{Code: engine.TxNodeRefused, Message: "pool full"}))
	_, err = s.CancelTransaction(ctx, txs[25].ID, &engine.TxError{Code: engine.TxCancelled, Message: "cancelled"}, at(90))
	must(t, err)
	missing := *txs[30]
	missing.ID = newID()

	unchanged := func(what string) {
		t.Helper()
		for i, tx := range txs {
			if got := get(t, s, tx.ID); i != 25 && (got.Status != engine.StatusNew || got.Nonce != nil || got.Hash != nil) {
				t.Fatalf("%s: %s changed: status %s, nonce %v", what, tx.ID, got.Status, got.Nonce)
			}
		}
		attempts, err := s.Attempts(ctx, f.account.ID, "dev")
		must(t, err)
		if len(attempts) != 0 {
			t.Fatalf("%s: %d attempts recorded", what, len(attempts))
		}
	}
	with := func(replace map[int]*engine.Transaction, extra ...*engine.Transaction) []*engine.Transaction {
		var out []*engine.Transaction
		for i, tx := range txs {
			if r, ok := replace[i]; ok {
				if r != nil {
					out = append(out, r)
				}
				continue
			}
			out = append(out, tx)
		}
		return append(out, extra...)
	}

	// The cancelled row comes before the missing one: its conflict.
	err = s.MarkSubmittedMany(ctx, fence, with(map[int]*engine.Transaction{30: &missing}))
	wantNamed(t, err, engine.CodeConflict, txs[25].ID, "a batch with a cancelled row then a missing one")
	unchanged("after the conflict")
	// Without it, the missing row.
	err = s.MarkSubmittedMany(ctx, fence, with(map[int]*engine.Transaction{25: nil, 30: &missing}))
	wantNamed(t, err, engine.CodeNotFound, missing.ID, "a batch with a missing row")
	unchanged("after the missing row")
	// A row twice: the second time it is no longer new.
	again := *txs[3]
	err = s.MarkSubmittedMany(ctx, fence, with(map[int]*engine.Transaction{25: nil}, &again))
	wantNamed(t, err, engine.CodeConflict, txs[3].ID, "a batch with a row twice")
	unchanged("after the repeated row")
	// Nonce 7 twice in the batch.
	twin := *txs[8]
	twin.Nonce = ptr(uint64(7))
	err = s.MarkSubmittedMany(ctx, fence, with(map[int]*engine.Transaction{25: nil, 8: &twin}))
	wantCode(t, err, engine.CodeConflict, "a batch assigning a nonce twice")
	unchanged("after the nonce twice")

	must(t, s.MarkSubmittedMany(ctx, fence, with(map[int]*engine.Transaction{25: nil})))
	for i, tx := range txs {
		if i == 25 {
			continue
		}
		got := get(t, s, tx.ID)
		if got.Status != engine.StatusSubmitted || got.Nonce == nil || *got.Nonce != *tx.Nonce || got.GasLimit != tx.GasLimit ||
			got.Hash == nil || *got.Hash != *tx.Hash || string(got.RawTx) != string(tx.RawTx) || (got.RawTx == nil) != (tx.RawTx == nil) ||
			got.Error != nil {
			t.Fatalf("%s stored as %s nonce %v gas %d hash %v raw %q error %v; want %v %d %s %q and no error",
				tx.ID, got.Status, got.Nonce, got.GasLimit, got.Hash, got.RawTx, got.Error, *tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx)
		}
		wantTime(t, "submitted", *got.Submitted, *tx.Submitted)
	}
	attempts, err := s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	if len(attempts) != n-1 {
		t.Fatalf("%d attempts, want %d", len(attempts), n-1)
	}
	byNonce := map[uint64]*engine.Transaction{}
	for i, tx := range txs {
		if i != 25 {
			byNonce[*tx.Nonce] = tx
		}
	}
	for _, a := range attempts {
		tx := byNonce[a.Nonce]
		if tx == nil || a.TxID != tx.ID || a.Hash != *tx.Hash || a.AccountID != f.account.ID || a.Network != "dev" ||
			a.Node != fence.Node || a.Epoch != fence.Epoch {
			t.Fatalf("attempt %+v does not match its transaction (fence %+v)", a, fence)
		}
		wantTime(t, "attempt created", a.Created, *tx.Submitted)
	}
}

// testBulkMarkSubmittedLarge: one MarkSubmittedGroups of more rows than a
// bulk statement carries, over two accounts with their own fences.
func testBulkMarkSubmittedLarge(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	const n = 2600 // per account: 5,200 rows in all
	var groups []engine.SubmitGroup
	for _, node := range []string{"node-a", "node-b"} {
		f := newFixture(t, s)
		fence, err := s.AcquireAccountLease(ctx, f.account.ID, node)
		must(t, err)
		txs := make([]*engine.Transaction, n)
		for i := range txs {
			txs[i] = f.tx("dev", i)
		}
		insert(t, s, txs...)
		for i, tx := range txs {
			signedAt(t, tx, uint64(i), 100)
		}
		groups = append(groups, engine.SubmitGroup{Fence: fence, Txs: txs})
	}
	must(t, stageStore(t, s).MarkSubmittedGroups(ctx, groups))
	for _, g := range groups {
		sum, err := s.InFlightSummary(ctx, g.Fence.AccountID, "dev")
		must(t, err)
		if sum.Count != n {
			t.Fatalf("account %s: %d in flight, want %d", g.Fence.AccountID, sum.Count, n)
		}
		attempts, err := s.Attempts(ctx, g.Fence.AccountID, "dev")
		must(t, err)
		if len(attempts) != n || attempts[n-1].Node != g.Fence.Node || attempts[n-1].Epoch != g.Fence.Epoch {
			t.Fatalf("account %s: %d attempts, want %d of %s", g.Fence.AccountID, len(attempts), n, g.Fence.Node)
		}
	}
}

// testBulkMarkMined: MarkMined of many rows fails whole on the first row
// (in input order) that is missing or not submitted; MarkMinedFenced
// skips a row already completed and applies the others, each with its
// callback rows; an outcome given twice applies once.
func testBulkMarkMined(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	const n = 30
	urls := []string{"http://127.0.0.1:9/a", "http://127.0.0.1:9/b"}
	txs := make([]*engine.Transaction, n)
	for i := range txs {
		txs[i] = f.tx("dev", i)
		txs[i].Callbacks = urls
	}
	insert(t, s, txs...)
	for i, tx := range txs {
		signedAt(t, tx, uint64(i), 100)
	}
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, txs))
	mined := func(i int) engine.Mined {
		o := engine.Mined{ID: txs[i].ID, Status: engine.StatusCompleted, BlockNumber: uint64(50 + i), BlockHash: randomHash(t),
			GasUsed: uint64(21000 + i), Events: []engine.Event{{Event: "Transfer", BlockNumber: uint64(50 + i)}}, Ended: at(700 + i)}
		if i%2 == 1 {
			o.Status, o.Events = engine.StatusFailed, []engine.Event{}
			o.Error = &engine.TxError{Code: engine.TxReverted, Message: fmt.Sprintf("reverted %d", i)}
		}
		if i%3 == 0 {
			o.Hash = randomHash(t) // a replacement was mined
		}
		return o
	}
	done := mined(7)
	must(t, s.MarkMined(ctx, []engine.Mined{done}))
	outcomes := make([]engine.Mined, n)
	for i := range outcomes {
		outcomes[i] = mined(i)
	}
	unapplied := func(what string) {
		t.Helper()
		for i, tx := range txs {
			if got := get(t, s, tx.ID); i != 7 && (got.Status != engine.StatusSubmitted || got.BlockNumber != nil) {
				t.Fatalf("%s: %s changed: status %s", what, tx.ID, got.Status)
			}
		}
		rows := outbox(t, s)
		if len(rows) != 1 {
			t.Fatalf("%s: outbox rows of %d transactions, want those of the completed one", what, len(rows))
		}
		wantOutbox(t, rows, txs[7], done.Ended, urls...)
	}

	err := s.MarkMined(ctx, outcomes)
	wantNamed(t, err, engine.CodeConflict, txs[7].ID, "MarkMined of a batch with a completed row")
	unapplied("after the conflict")
	unknown := newID()
	withUnknown := slices.Insert(slices.Clone(outcomes), 3, engine.Mined{ID: unknown, Status: engine.StatusCompleted, Ended: at(700)})
	err = s.MarkMined(ctx, withUnknown)
	wantNamed(t, err, engine.CodeNotFound, unknown, "MarkMined of a batch with an unknown row before a completed one")
	unapplied("after the unknown row")
	_, err = s.MarkMinedFenced(ctx, engine.NetworkFence{Network: "dev"}, withUnknown)
	wantNamed(t, err, engine.CodeNotFound, unknown, "MarkMinedFenced of a batch with an unknown row")
	unapplied("after the unknown row, fenced")

	skipped, err := s.MarkMinedFenced(ctx, engine.NetworkFence{Network: "dev"}, outcomes)
	must(t, err)
	if !slices.Equal(skipped, []string{txs[7].ID}) {
		t.Fatalf("MarkMinedFenced skipped %v, want only %s", skipped, txs[7].ID)
	}
	rows := outbox(t, s)
	if len(rows) != n {
		t.Fatalf("outbox rows of %d transactions, want %d", len(rows), n)
	}
	for i, tx := range txs {
		o := outcomes[i]
		if i == 7 {
			o = done
		}
		wantOutbox(t, rows, tx, o.Ended, urls...)
		got := get(t, s, tx.ID)
		wantHash := *tx.Hash
		if o.Hash != (common.Hash{}) {
			wantHash = o.Hash
		}
		if got.Status != o.Status || got.BlockNumber == nil || *got.BlockNumber != o.BlockNumber ||
			got.BlockHash == nil || *got.BlockHash != o.BlockHash || got.GasUsed == nil || *got.GasUsed != o.GasUsed ||
			len(got.Events) != len(o.Events) || (got.Error == nil) != (o.Error == nil) || *got.Hash != wantHash {
			t.Fatalf("%s stored as %s block %v gas %v events %d error %v hash %v; want %+v (hash %s)",
				tx.ID, got.Status, got.BlockNumber, got.GasUsed, len(got.Events), got.Error, got.Hash, o, wantHash)
		}
		if o.Error != nil && (got.Error.Code != o.Error.Code || got.Error.Message != o.Error.Message) {
			t.Fatalf("%s: error %+v, want %+v", tx.ID, got.Error, o.Error)
		}
		wantTime(t, "ended", *got.Ended, o.Ended)
	}

	// One outcome twice: applied once, the second skipped as completed.
	twice := f.tx("dev", 90)
	twice.Callbacks = urls
	insert(t, s, twice)
	submit(t, s, twice, 90)
	o := engine.Mined{ID: twice.ID, Status: engine.StatusCompleted, BlockNumber: 99, BlockHash: randomHash(t),
		GasUsed: 1, Events: []engine.Event{}, Ended: at(900)}
	err = s.MarkMined(ctx, []engine.Mined{o, o})
	wantNamed(t, err, engine.CodeConflict, twice.ID, "MarkMined of one outcome twice")
	if got := get(t, s, twice.ID); got.Status != engine.StatusSubmitted {
		t.Fatalf("after the refused repeat: %s", got.Status)
	}
	skipped, err = s.MarkMinedFenced(ctx, engine.NetworkFence{Network: "dev"}, []engine.Mined{o, o})
	must(t, err)
	if !slices.Equal(skipped, []string{twice.ID}) {
		t.Fatalf("MarkMinedFenced of one outcome twice skipped %v, want it once", skipped)
	}
	wantOutbox(t, outbox(t, s), twice, o.Ended, urls...)
}

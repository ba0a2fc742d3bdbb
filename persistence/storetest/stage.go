package storetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// stageStore returns s as an engine.StageStore, failing the test if it is
// not one.
func stageStore(t *testing.T, s engine.Store) engine.StageStore {
	t.Helper()
	ss, ok := s.(engine.StageStore)
	if !ok {
		t.Fatalf("%T does not implement engine.StageStore", s)
	}
	return ss
}

// accountsOf returns n fixtures: one user and n accounts of it.
func accountsOf(t *testing.T, s engine.Store, n int) []fixture {
	t.Helper()
	u := newUser(t, s, 0)
	out := make([]fixture, n)
	for i := range out {
		out[i] = fixture{user: u, account: newAccount(t, s, u.ID, i, i == 0)}
	}
	return out
}

// testStageReads: InFlightSummaries, ReadyTransactionsOf and CountQueuedOf
// answer, for several accounts at once, what InFlightSummary,
// ReadyTransactions and CountQueued answer for each, on one network only;
// accounts with nothing to report are absent.
func testStageReads(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	ss := stageStore(t, s)
	qc, ok := s.(engine.QueueCounter)
	if !ok {
		t.Fatalf("%T does not implement engine.QueueCounter", s)
	}
	fx := accountsOf(t, s, 5)
	busy, light, waitingOnly, empty, unasked := fx[0], fx[1], fx[2], fx[3], fx[4]

	// The accounts' transactions are accepted interleaved, so that each
	// account's acceptance order is not the order of the whole table.
	sec := 0
	add := func(f fixture, network string, status engine.TxStatus) *engine.Transaction {
		t.Helper()
		sec++
		tx := f.tx(network, sec)
		tx.Status = status
		insert(t, s, tx)
		return tx
	}
	var busyNew, lightNew, unaskedNew []*engine.Transaction
	var busySub, lightSub []*engine.Transaction
	for i := 0; i < 5; i++ {
		busyNew = append(busyNew, add(busy, "dev", engine.StatusNew))
		if i < 2 {
			lightNew = append(lightNew, add(light, "dev", engine.StatusNew))
			add(busy, "dev", engine.StatusWaiting)
		}
		if i < 3 {
			busySub = append(busySub, add(busy, "dev", engine.StatusNew))
			unaskedNew = append(unaskedNew, add(unasked, "dev", engine.StatusNew))
		}
	}
	lightSub = append(lightSub, add(light, "dev", engine.StatusNew))
	add(waitingOnly, "dev", engine.StatusWaiting)
	// Another network: new, waiting and submitted rows that must not count.
	add(busy, "main", engine.StatusNew)
	add(busy, "main", engine.StatusWaiting)
	busyMain := add(busy, "main", engine.StatusNew)
	add(empty, "main", engine.StatusNew)
	// Submitted out of nonce order, so that the lowest is not the first.
	submit(t, s, busySub[0], 4)
	submit(t, s, busySub[1], 2)
	submit(t, s, busySub[2], 7)
	submit(t, s, lightSub[0], 9)
	submit(t, s, busyMain, 1)

	ids := []string{busy.account.ID, light.account.ID, waitingOnly.account.ID, empty.account.ID, unasked.account.ID, newID()}

	// InFlightSummaries.
	sums, err := ss.InFlightSummaries(ctx, "dev", ids)
	must(t, err)
	want := map[string]engine.InFlightSummary{
		busy.account.ID:  {Count: 3, LowestNonce: 2},
		light.account.ID: {Count: 1, LowestNonce: 9},
	}
	if len(sums) != len(want) {
		t.Fatalf("InFlightSummaries = %+v, want %+v", sums, want)
	}
	for id, w := range want {
		if sums[id] != w {
			t.Fatalf("InFlightSummaries[%s] = %+v, want %+v", id, sums[id], w)
		}
		one, err := s.InFlightSummary(ctx, id, "dev")
		must(t, err)
		if one != sums[id] {
			t.Fatalf("InFlightSummaries[%s] = %+v, InFlightSummary = %+v", id, sums[id], one)
		}
	}
	if sums, err := ss.InFlightSummaries(ctx, "main", ids); err != nil || len(sums) != 1 || sums[busy.account.ID] != (engine.InFlightSummary{Count: 1, LowestNonce: 1}) {
		t.Fatalf("InFlightSummaries on main = %+v, %v; want busy's one at nonce 1", sums, err)
	}
	if sums, err := ss.InFlightSummaries(ctx, "dev", nil); err != nil || sums == nil || len(sums) != 0 {
		t.Fatalf("InFlightSummaries of no account = %#v, %v; want an empty map", sums, err)
	}

	// ReadyTransactionsOf: busy has 5 new (limit 3 keeps its 3 oldest),
	// light 2 (limit 10 keeps both), waitingOnly and empty none, and
	// unasked (not in the map) is not read; a limit <= 0 asks nothing.
	limits := map[string]int{busy.account.ID: 3, light.account.ID: 10, waitingOnly.account.ID: 5, empty.account.ID: 2}
	ready, err := ss.ReadyTransactionsOf(ctx, "dev", limits)
	must(t, err)
	wantReady := map[string][]*engine.Transaction{busy.account.ID: busyNew[:3], light.account.ID: lightNew}
	if len(ready) != len(wantReady) {
		t.Fatalf("ReadyTransactionsOf has %d accounts, want %d (busy and light): %v", len(ready), len(wantReady), readyIDs(ready))
	}
	for id, w := range wantReady {
		got := ready[id]
		one, err := s.ReadyTransactions(ctx, id, "dev", limits[id])
		must(t, err)
		if len(got) != len(w) || len(one) != len(w) {
			t.Fatalf("ReadyTransactionsOf[%s] = %v, ReadyTransactions = %v, want %v", id, txIDs(got), txIDs(one), txIDs(w))
		}
		for i := range w {
			if got[i].ID != w[i].ID {
				t.Fatalf("ReadyTransactionsOf[%s] = %v, want %v (acceptance order)", id, txIDs(got), txIDs(w))
			}
			wantTx(t, got[i], one[i])
		}
	}
	if _, ok := ready[unasked.account.ID]; ok {
		t.Fatalf("ReadyTransactionsOf read an account not asked for")
	}
	if got, err := s.ReadyTransactions(ctx, unasked.account.ID, "dev", 10); err != nil || len(got) != len(unaskedNew) {
		t.Fatalf("unasked's queue = %v, %v; want its %d new", txIDs(got), err, len(unaskedNew))
	}
	ready, err = ss.ReadyTransactionsOf(ctx, "dev", map[string]int{busy.account.ID: 0, light.account.ID: -1, unasked.account.ID: 1})
	must(t, err)
	if len(ready) != 1 || len(ready[unasked.account.ID]) != 1 || ready[unasked.account.ID][0].ID != unaskedNew[0].ID {
		t.Fatalf("ReadyTransactionsOf with limits 0, -1 and 1 = %v; want unasked's oldest only", readyIDs(ready))
	}
	if ready, err := ss.ReadyTransactionsOf(ctx, "main", map[string]int{busy.account.ID: 10}); err != nil || len(ready[busy.account.ID]) != 1 {
		t.Fatalf("ReadyTransactionsOf on main = %v, %v; want busy's one new", readyIDs(ready), err)
	}

	// CountQueuedOf: new and waiting.
	counts, err := ss.CountQueuedOf(ctx, "dev", ids)
	must(t, err)
	wantCounts := map[string]int{busy.account.ID: 5 + 2, light.account.ID: 2, waitingOnly.account.ID: 1, unasked.account.ID: 3}
	if len(counts) != len(wantCounts) {
		t.Fatalf("CountQueuedOf = %v, want %v", counts, wantCounts)
	}
	for id, w := range wantCounts {
		one, err := qc.CountQueued(ctx, id, "dev")
		must(t, err)
		if counts[id] != w || one != w {
			t.Fatalf("CountQueuedOf[%s] = %d, CountQueued = %d, want %d", id, counts[id], one, w)
		}
	}
	if counts, err := ss.CountQueuedOf(ctx, "dev", []string{}); err != nil || counts == nil || len(counts) != 0 {
		t.Fatalf("CountQueuedOf of no account = %#v, %v; want an empty map", counts, err)
	}

	// MaxNonces: equal to MaxNonce of each; accounts without a nonce absent.
	maxes, err := ss.MaxNonces(ctx, "dev", ids)
	must(t, err)
	withNonce := 0
	for _, id := range ids {
		one, any, err := s.MaxNonce(ctx, id, "dev")
		must(t, err)
		got, ok := maxes[id]
		if ok != any || got != one {
			t.Fatalf("MaxNonces[%s] = %d, %v; MaxNonce = %d, %v", id, got, ok, one, any)
		}
		if any {
			withNonce++
		}
	}
	if withNonce == 0 || len(maxes) != withNonce {
		t.Fatalf("MaxNonces = %v: want the %d accounts with a nonce (at least one)", maxes, withNonce)
	}

	// AccountsByID: equal to AccountByID of each; an unknown id absent.
	accts, err := ss.AccountsByID(ctx, append(slices.Clone(ids), "no-such-account"))
	must(t, err)
	known := 0
	for _, id := range ids {
		one, err := s.AccountByID(ctx, id)
		if engine.IsNotFound(err) {
			if accts[id] != nil {
				t.Fatalf("AccountsByID[%s] = %+v for an unknown account", id, accts[id])
			}
			continue
		}
		must(t, err)
		known++
		if got := accts[id]; got == nil || got.ID != one.ID || got.Owner != one.Owner || got.Address != one.Address || !bytes.Equal(got.EncryptedKey, one.EncryptedKey) {
			t.Fatalf("AccountsByID[%s] = %+v, AccountByID = %+v", id, got, one)
		}
	}
	if known < 5 || len(accts) != known {
		t.Fatalf("AccountsByID = %d accounts, want the %d known (at least 5)", len(accts), known)
	}
}

// readyIDs is the ids of each account's transactions of m.
func readyIDs(m map[string][]*engine.Transaction) map[string][]string {
	out := make(map[string][]string, len(m))
	for id, txs := range m {
		out[id] = txIDs(txs)
	}
	return out
}

// testMarkSubmittedGroups: the groups of several accounts are stored in
// one database transaction, each with its own fence, all or none: a row
// that is no longer new (ErrConflict), one that does not exist
// (ErrNotFound) or a stale fence (ErrFenced) in one group leaves the
// others' rows new, with no recorded version.
func testMarkSubmittedGroups(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	ss := stageStore(t, s)
	fx := accountsOf(t, s, 2)
	x, y := fx[0], fx[1]
	x1, x2, x3, y1, y2 := x.tx("dev", 1), x.tx("dev", 2), x.tx("dev", 3), y.tx("dev", 4), y.tx("dev", 5)
	insert(t, s, x1, x2, x3, y1, y2)
	fxLease, err := s.AcquireAccountLease(ctx, x.account.ID, "node-a")
	must(t, err)
	fyLease, err := s.AcquireAccountLease(ctx, y.account.ID, "node-a")
	must(t, err)

	must(t, ss.MarkSubmittedGroups(ctx, nil))
	// y's group first: the groups need not come in account order.
	must(t, ss.MarkSubmittedGroups(ctx, []engine.SubmitGroup{
		{Fence: fyLease, Txs: []*engine.Transaction{signed(t, y1, 0, 10)}},
		{Fence: fxLease, Txs: []*engine.Transaction{signed(t, x1, 0, 11), signed(t, x2, 1, 12)}},
	}))
	for _, tx := range []*engine.Transaction{x1, x2, y1} {
		got := get(t, s, tx.ID)
		if got.Status != engine.StatusSubmitted || got.Nonce == nil || *got.Nonce != *tx.Nonce ||
			got.Hash == nil || *got.Hash != *tx.Hash || string(got.RawTx) != string(tx.RawTx) || got.GasLimit != tx.GasLimit {
			t.Fatalf("%s after MarkSubmittedGroups: %s nonce %v hash %v", tx.ID, got.Status, got.Nonce, got.Hash)
		}
		wantTimePtr(t, "submitted", got.Submitted, tx.Submitted)
		tx.Status = engine.StatusSubmitted
	}
	wantVersions(t, s, map[string][]common.Hash{x1.ID: {*x1.Hash}, x2.ID: {*x2.Hash}, y1.ID: {*y1.Hash}})
	for _, f := range []engine.Fence{fxLease, fyLease} {
		attempts, err := s.Attempts(ctx, f.AccountID, "dev")
		must(t, err)
		if len(attempts) == 0 {
			t.Fatalf("no attempts of %s", f.AccountID)
		}
		for _, a := range attempts {
			if a.Node != f.Node || a.Epoch != f.Epoch {
				t.Fatalf("attempt %+v of %s, want node %s epoch %d", a, f.AccountID, f.Node, f.Epoch)
			}
		}
	}
	storedX3, storedY2 := get(t, s, x3.ID), get(t, s, y2.ID)
	unchanged := func(what string) {
		t.Helper()
		wantTx(t, get(t, s, x3.ID), storedX3)
		wantTx(t, get(t, s, y2.ID), storedY2)
		if got := get(t, s, x3.ID); got.Status != engine.StatusNew || got.Nonce != nil {
			t.Fatalf("x3 after %s: %s nonce %v", what, got.Status, got.Nonce)
		}
		hashes, err := s.HashesOf(ctx, []string{x3.ID, y2.ID})
		must(t, err)
		if len(hashes) != 0 {
			t.Fatalf("versions after %s: %v, want none", what, hashes)
		}
		if n, ok, err := s.MaxNonce(ctx, x.account.ID, "dev"); err != nil || !ok || n != 1 {
			t.Fatalf("MaxNonce of x after %s = %d, %v, %v; want 1", what, n, ok, err)
		}
	}

	// x's group is fine; y's holds y1 again, which is submitted already.
	y1again := *y1
	signed(t, &y1again, 5, 20)
	wantCode(t, ss.MarkSubmittedGroups(ctx, []engine.SubmitGroup{
		{Fence: fxLease, Txs: []*engine.Transaction{signed(t, x3, 2, 20)}},
		{Fence: fyLease, Txs: []*engine.Transaction{signed(t, y2, 1, 20), &y1again}},
	}), engine.CodeConflict, "MarkSubmittedGroups with a submitted transaction")
	unchanged("a conflict")
	if got := get(t, s, y1.ID); *got.Nonce != 0 || *got.Hash != *y1.Hash {
		t.Fatalf("y1 after a conflict: nonce %d hash %s", *got.Nonce, got.Hash)
	}

	// A transaction that does not exist.
	ghost := y.tx("dev", 6)
	wantCode(t, ss.MarkSubmittedGroups(ctx, []engine.SubmitGroup{
		{Fence: fxLease, Txs: []*engine.Transaction{signed(t, x3, 2, 21)}},
		{Fence: fyLease, Txs: []*engine.Transaction{signed(t, ghost, 1, 21)}},
	}), engine.CodeNotFound, "MarkSubmittedGroups with an unknown transaction")
	unchanged("an unknown transaction")

	// y's lease moves on: its fence is stale, and x's group is not stored either.
	fyNow, err := s.AcquireAccountLease(ctx, y.account.ID, "node-b")
	must(t, err)
	wantFenced(t, ss.MarkSubmittedGroups(ctx, []engine.SubmitGroup{
		{Fence: fxLease, Txs: []*engine.Transaction{signed(t, x3, 2, 22)}},
		{Fence: fyLease, Txs: []*engine.Transaction{signed(t, y2, 1, 22)}},
	}), "MarkSubmittedGroups with a stale fence")
	unchanged("a stale fence")

	// With the current fences, both groups are stored.
	must(t, ss.MarkSubmittedGroups(ctx, []engine.SubmitGroup{
		{Fence: fyNow, Txs: []*engine.Transaction{signed(t, y2, 1, 23)}},
		{Fence: fxLease, Txs: []*engine.Transaction{signed(t, x3, 2, 23)}},
	}))
	for _, tx := range []*engine.Transaction{x3, y2} {
		if got := get(t, s, tx.ID); got.Status != engine.StatusSubmitted || *got.Nonce != *tx.Nonce || *got.Hash != *tx.Hash {
			t.Fatalf("%s after MarkSubmittedGroups: %s nonce %v", tx.ID, got.Status, got.Nonce)
		}
	}
	wantVersions(t, s, map[string][]common.Hash{x3.ID: {*x3.Hash}, y2.ID: {*y2.Hash}})
}

// wantVersions fails unless HashesOf the ids of want is want.
func wantVersions(t *testing.T, s engine.Store, want map[string][]common.Hash) {
	t.Helper()
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	got, err := s.HashesOf(ctxOf(t), ids)
	must(t, err)
	if len(got) != len(want) {
		t.Fatalf("HashesOf = %v, want %v", got, want)
	}
	for id, w := range want {
		if len(got[id]) != len(w) {
			t.Fatalf("HashesOf[%s] = %v, want %v", id, got[id], w)
		}
		for i := range w {
			if got[id][i] != w[i] {
				t.Fatalf("HashesOf[%s] = %v, want %v", id, got[id], w)
			}
		}
	}
}

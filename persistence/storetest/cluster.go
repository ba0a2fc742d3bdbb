package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// wantFenced fails the test unless err wraps engine.ErrFenced.
func wantFenced(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, engine.ErrFenced) {
		t.Fatalf("%s: got %v, want engine.ErrFenced", what, err)
	}
}

// testAccountLease: every acquisition increments the account's epoch (1
// first), accounts are independent, and only the latest fence is current.
func testAccountLease(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	f1, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	if f1 != (engine.Fence{AccountID: f.account.ID, Node: "node-a", Epoch: 1}) {
		t.Fatalf("first fence = %+v, want epoch 1 of node-a", f1)
	}
	must(t, s.CheckFence(ctx, f1))
	f2, err := s.AcquireAccountLease(ctx, f.account.ID, "node-b")
	must(t, err)
	if f2 != (engine.Fence{AccountID: f.account.ID, Node: "node-b", Epoch: 2}) {
		t.Fatalf("second fence = %+v, want epoch 2 of node-b", f2)
	}
	wantFenced(t, s.CheckFence(ctx, f1), "CheckFence of the first fence")
	must(t, s.CheckFence(ctx, f2))
	// The same node activating again gets a new epoch too.
	f3, err := s.AcquireAccountLease(ctx, f.account.ID, "node-b")
	must(t, err)
	if f3.Epoch != 3 {
		t.Fatalf("third fence = %+v, want epoch 3", f3)
	}
	wantFenced(t, s.CheckFence(ctx, f2), "CheckFence of the second fence")

	other, err := s.AcquireAccountLease(ctx, "another-account", "node-a")
	must(t, err)
	if other.Epoch != 1 {
		t.Fatalf("another account's first fence = %+v, want epoch 1", other)
	}
	must(t, s.CheckFence(ctx, f3))
	must(t, s.CheckFence(ctx, engine.Fence{}))
	wantFenced(t, s.CheckFence(ctx, engine.Fence{AccountID: "never-leased", Node: "node-a", Epoch: 1}),
		"CheckFence of an account without a lease")
	// The submit stage reads many leases at once: the epochs CheckFence
	// compares, none for an account without a lease.
	r, ok := s.(engine.LeaseEpochReader)
	if !ok {
		t.Fatalf("%T does not read many leases at once (engine.LeaseEpochReader)", s)
	}
	epochs, err := r.LeaseEpochs(ctx, []string{f.account.ID, "another-account", "never-leased"})
	must(t, err)
	if len(epochs) != 2 || epochs[f.account.ID] != 3 || epochs["another-account"] != 1 {
		t.Fatalf("LeaseEpochs = %v, want %s: 3, another-account: 1", epochs, f.account.ID)
	}
}

// signed gives tx a signed version with nonce at at(sec).
func signed(t *testing.T, tx *engine.Transaction, nonce uint64, sec int) *engine.Transaction {
	t.Helper()
	tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = ptr(nonce), 21000, ptr(randomHash(t)), []byte(fmt.Sprintf("raw-%d", nonce)), ptr(at(sec))
	return tx
}

// replacement returns a new version of the submitted tx signed at at(sec).
func replacement(t *testing.T, tx *engine.Transaction, sec int) *engine.Transaction {
	t.Helper()
	r := *tx
	r.Hash, r.RawTx, r.Replaced = ptr(randomHash(t)), []byte(fmt.Sprintf("raw-again-%d", sec)), ptr(at(sec))
	return &r
}

// testFencedWrites: with a stale fence, MarkSubmittedMany, MarkReplaced and
// ReleaseNonce fail with ErrFenced and change nothing; with the current
// fence they work; the zero Fence is never checked.
func testFencedWrites(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b := f.tx("dev", 1), f.tx("dev", 2)
	insert(t, s, a, b)

	// An account without a lease: every fenced write is refused.
	never := engine.Fence{AccountID: f.account.ID, Node: "node-a", Epoch: 1}
	wantFenced(t, s.MarkSubmittedMany(ctx, never, []*engine.Transaction{signed(t, a, 0, 10)}), "MarkSubmittedMany without a lease")
	if got := get(t, s, a.ID); got.Status != engine.StatusNew || got.Nonce != nil {
		t.Fatalf("a after a refused write: %s nonce %v", got.Status, got.Nonce)
	}

	stale, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	must(t, s.MarkSubmittedMany(ctx, stale, []*engine.Transaction{signed(t, a, 0, 10)}))
	current, err := s.AcquireAccountLease(ctx, f.account.ID, "node-b")
	must(t, err)
	a.Status = engine.StatusSubmitted
	stored := get(t, s, a.ID)

	// MarkSubmittedMany: b stays new, its nonce is not taken.
	wantFenced(t, s.MarkSubmittedMany(ctx, stale, []*engine.Transaction{signed(t, b, 1, 11)}), "MarkSubmittedMany with a stale fence")
	if got := get(t, s, b.ID); got.Status != engine.StatusNew || got.Nonce != nil || got.Hash != nil || got.RawTx != nil {
		t.Fatalf("b after a stale MarkSubmittedMany: %s nonce %v hash %v", got.Status, got.Nonce, got.Hash)
	}
	if n, ok, err := s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || !ok || n != 0 {
		t.Fatalf("MaxNonce after a stale MarkSubmittedMany = %d, %v, %v; want 0", n, ok, err)
	}
	// MarkReplaced: a keeps its version.
	wantFenced(t, s.MarkReplaced(ctx, stale, replacement(t, a, 20)), "MarkReplaced with a stale fence")
	wantTx(t, get(t, s, a.ID), stored)
	if got := get(t, s, a.ID); got.Replaced != nil {
		t.Fatalf("a after a stale MarkReplaced: replaced %v", got.Replaced)
	}
	// ReleaseNonce: a stays submitted with its nonce.
	wantFenced(t, s.ReleaseNonce(ctx, stale, a.ID, nil, at(30)), "ReleaseNonce with a stale fence")
	wantTx(t, get(t, s, a.ID), stored)
	// Nothing of the stale writes was recorded as broadcast.
	attempts, err := s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	if len(attempts) != 1 || attempts[0].Hash != *a.Hash {
		t.Fatalf("attempts after stale writes = %+v, want a's first version only", attempts)
	}

	// The current fence writes.
	must(t, s.MarkSubmittedMany(ctx, current, []*engine.Transaction{signed(t, b, 1, 11)}))
	repl := replacement(t, a, 20)
	must(t, s.MarkReplaced(ctx, current, repl))
	if got := get(t, s, a.ID); *got.Hash != *repl.Hash {
		t.Fatalf("a after MarkReplaced: hash %s, want %s", got.Hash, repl.Hash)
	}
	must(t, s.ReleaseNonce(ctx, current, b.ID, nil, at(31)))
	if got := get(t, s, b.ID); got.Status != engine.StatusNew || got.Nonce != nil {
		t.Fatalf("b after ReleaseNonce: %s nonce %v", got.Status, got.Nonce)
	}
	// The zero Fence (single-node mode) is not checked, lease or not.
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signed(t, b, 1, 12)}))
}

// testFailQueued: FailQueued, the Sender's failure of a queued
// transaction, moves only a new transaction to failed, writes its outbox
// rows once, and is fenced: with a stale fence it fails with ErrFenced and
// changes nothing, even for a transaction that is still new; a transaction
// the current activation submitted meanwhile stays submitted (ErrConflict).
func testFailQueued(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	urls := []string{"https://a.example/cb", "https://b.example/cb"}
	withCB := func(sec int) *engine.Transaction {
		tx := f.tx("dev", sec)
		tx.Callbacks = slices.Clone(urls)
		return tx
	}
	queued, taken, waiting, single := withCB(1), withCB(2), withCB(3), withCB(4)
	waiting.Status = engine.StatusWaiting
	insert(t, s, queued, taken, waiting, single)
	reverted := &engine.TxError{Code: engine.TxReverted, Message: "execution reverted: no"}

	// An account without a lease: refused.
	wantFenced(t, s.FailQueued(ctx, engine.Fence{AccountID: f.account.ID, Node: "node-a", Epoch: 1}, queued.ID, reverted, at(10)),
		"FailQueued without a lease")
	stale, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	current, err := s.AcquireAccountLease(ctx, f.account.ID, "node-b")
	must(t, err)
	// The current activation submits taken.
	must(t, s.MarkSubmittedMany(ctx, current, []*engine.Transaction{signed(t, taken, 0, 20)}))
	storedQueued, storedTaken := get(t, s, queued.ID), get(t, s, taken.ID)

	// The stale activation fails nothing: neither the transaction the
	// current one submitted nor one that is still new.
	wantFenced(t, s.FailQueued(ctx, stale, taken.ID, reverted, at(30)), "FailQueued of a submitted transaction with a stale fence")
	wantFenced(t, s.FailQueued(ctx, stale, queued.ID, reverted, at(30)), "FailQueued of a new transaction with a stale fence")
	wantTx(t, get(t, s, taken.ID), storedTaken)
	wantTx(t, get(t, s, queued.ID), storedQueued)
	if rows := outbox(t, s); len(rows) != 0 {
		t.Fatalf("outbox after refused FailQueued: rows of %d transactions", len(rows))
	}

	// The current fence: a transaction that is no longer new conflicts and
	// keeps its state, with no outbox row.
	wantCode(t, s.FailQueued(ctx, current, taken.ID, reverted, at(40)), engine.CodeConflict, "FailQueued of a submitted transaction")
	wantTx(t, get(t, s, taken.ID), storedTaken)
	if got := get(t, s, taken.ID); got.Status != engine.StatusSubmitted || got.Nonce == nil || *got.Nonce != 0 {
		t.Fatalf("taken after FailQueued: %s nonce %v; want submitted with nonce 0", got.Status, got.Nonce)
	}
	wantCode(t, s.FailQueued(ctx, current, waiting.ID, reverted, at(40)), engine.CodeConflict, "FailQueued of a waiting transaction")
	if got := get(t, s, waiting.ID); got.Status != engine.StatusWaiting {
		t.Fatalf("waiting after FailQueued: %s", got.Status)
	}
	wantCode(t, s.FailQueued(ctx, current, newID(), reverted, at(40)), engine.CodeNotFound, "FailQueued of an unknown transaction")
	if rows := outbox(t, s); len(rows) != 0 {
		t.Fatalf("outbox after conflicting FailQueued: rows of %d transactions", len(rows))
	}

	// A new transaction fails, with its outbox rows, once.
	must(t, s.FailQueued(ctx, current, queued.ID, reverted, at(50)))
	got := get(t, s, queued.ID)
	if got.Status != engine.StatusFailed || got.Error == nil || *got.Error != *reverted || got.Nonce != nil {
		t.Fatalf("queued after FailQueued: %s error %+v nonce %v", got.Status, got.Error, got.Nonce)
	}
	wantTimePtr(t, "queued Ended", got.Ended, ptr(at(50)))
	wantCode(t, s.FailQueued(ctx, current, queued.ID, reverted, at(51)), engine.CodeConflict, "FailQueued of a failed transaction")
	rows := outbox(t, s)
	wantOutbox(t, rows, queued, at(50), urls...)
	if len(rows) != 1 {
		t.Fatalf("outbox has rows of %d transactions, want 1", len(rows))
	}
	wantPending(t, s, len(urls))

	// The zero Fence (single-node mode) is not checked.
	must(t, s.FailQueued(ctx, engine.Fence{}, single.ID, reverted, at(60)))
	if got := get(t, s, single.ID); got.Status != engine.StatusFailed {
		t.Fatalf("single after FailQueued with the zero fence: %s", got.Status)
	}
	wantOutbox(t, outbox(t, s), single, at(60), urls...)
	wantPending(t, s, 2*len(urls))
}

// testFencedMarkWaiting: MarkWaiting, the Sender's hold of a queued
// transaction, is fenced: with a stale fence it fails with ErrFenced and
// changes nothing; a transaction that is no longer new conflicts.
func testFencedMarkWaiting(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	queued, taken, single := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3)
	insert(t, s, queued, taken, single)

	wantFenced(t, s.MarkWaiting(ctx, engine.Fence{AccountID: f.account.ID, Node: "node-a", Epoch: 1}, queued.ID),
		"MarkWaiting without a lease")
	stale, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	current, err := s.AcquireAccountLease(ctx, f.account.ID, "node-b")
	must(t, err)
	must(t, s.MarkSubmittedMany(ctx, current, []*engine.Transaction{signed(t, taken, 0, 20)}))
	storedTaken := get(t, s, taken.ID)

	wantFenced(t, s.MarkWaiting(ctx, stale, queued.ID), "MarkWaiting with a stale fence")
	wantFenced(t, s.MarkWaiting(ctx, stale, taken.ID), "MarkWaiting of a submitted transaction with a stale fence")
	if got := get(t, s, queued.ID); got.Status != engine.StatusNew {
		t.Fatalf("queued after a stale MarkWaiting: %s", got.Status)
	}
	wantTx(t, get(t, s, taken.ID), storedTaken)

	wantCode(t, s.MarkWaiting(ctx, current, taken.ID), engine.CodeConflict, "MarkWaiting of a submitted transaction")
	wantTx(t, get(t, s, taken.ID), storedTaken)
	must(t, s.MarkWaiting(ctx, current, queued.ID))
	if got := get(t, s, queued.ID); got.Status != engine.StatusWaiting {
		t.Fatalf("queued after MarkWaiting: %s", got.Status)
	}
	must(t, s.MarkWaiting(ctx, engine.Fence{}, single.ID))
	if got := get(t, s, single.ID); got.Status != engine.StatusWaiting {
		t.Fatalf("single after MarkWaiting with the zero fence: %s", got.Status)
	}
}

// testAttempts: every stored version is recorded with its account, nonce,
// hash, the node and epoch of the write and when it was signed; a released
// nonce forgets its versions.
func testAttempts(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	a, b, c, other := f.tx("dev", 1), f.tx("dev", 2), f.tx("dev", 3), f.tx("main", 4)
	insert(t, s, a, b, c, other)
	if got, err := s.Attempts(ctx, f.account.ID, "dev"); err != nil || len(got) != 0 {
		t.Fatalf("attempts before any = %+v, %v", got, err)
	}
	// Single-node mode: no node, epoch 0.
	must(t, s.MarkSubmittedMany(ctx, engine.Fence{}, []*engine.Transaction{signed(t, a, 0, 10), signed(t, b, 1, 10)}))
	fence, err := s.AcquireAccountLease(ctx, f.account.ID, "10.0.0.7:7701")
	must(t, err)
	repl := replacement(t, a, 20)
	must(t, s.MarkReplaced(ctx, fence, repl))
	must(t, s.MarkSubmittedMany(ctx, fence, []*engine.Transaction{signed(t, c, 2, 21)}))
	must(t, s.MarkSubmittedMany(ctx, fence, []*engine.Transaction{signed(t, other, 0, 22)}))

	got, err := s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	want := []engine.Attempt{
		{TxID: a.ID, Nonce: 0, Hash: *a.Hash, Created: at(10)},
		{TxID: a.ID, Nonce: 0, Hash: *repl.Hash, Node: fence.Node, Epoch: fence.Epoch, Created: at(20)},
		{TxID: b.ID, Nonce: 1, Hash: *b.Hash, Created: at(10)},
		{TxID: c.ID, Nonce: 2, Hash: *c.Hash, Node: fence.Node, Epoch: fence.Epoch, Created: at(21)},
	}
	wantAttempts(t, got, want, f.account.ID, "dev")

	// A replacement that only touches the time keeps one version.
	touch := *repl
	touch.Replaced = ptr(at(25))
	must(t, s.MarkReplaced(ctx, fence, &touch))
	got, err = s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	wantAttempts(t, got, want, f.account.ID, "dev")

	// Releasing a's nonce forgets both its versions.
	must(t, s.ReleaseNonce(ctx, fence, a.ID, nil, at(30)))
	got, err = s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	wantAttempts(t, got, want[2:], f.account.ID, "dev")
	got, err = s.Attempts(ctx, f.account.ID, "main")
	must(t, err)
	wantAttempts(t, got, []engine.Attempt{{TxID: other.ID, Hash: *other.Hash, Node: fence.Node, Epoch: fence.Epoch, Created: at(22)}},
		f.account.ID, "main")
}

// wantAttempts compares attempts, filling in account and network of want.
func wantAttempts(t *testing.T, got, want []engine.Attempt, accountID, network string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("attempts = %+v, want %+v", got, want)
	}
	for i := range want {
		w := want[i]
		w.AccountID, w.Network = accountID, network
		g := got[i]
		wantTime(t, fmt.Sprintf("attempt %d Created", i), g.Created, w.Created)
		g.Created, w.Created = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("attempt %d = %+v, want %+v", i, g, w)
		}
	}
}

// networkLeaseTTL is the ttl of the network lease tests: short, as they
// wait for expiry.
const networkLeaseTTL = 400 * time.Millisecond

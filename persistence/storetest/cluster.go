package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

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

// testNetworkLease: the holder renews, another node cannot take the lease
// before it expires and takes it after; the epoch goes up with each new
// tenure; a release lets another node take it at once.
func testNetworkLease(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	acquire := func(node string, wantHeld bool, wantEpoch int64) {
		t.Helper()
		held, epoch, err := s.AcquireNetworkLease(ctx, "dev", node, networkLeaseTTL)
		must(t, err)
		if held != wantHeld || epoch != wantEpoch {
			t.Fatalf("AcquireNetworkLease(dev, %s) = %v, %d; want %v, %d", node, held, epoch, wantHeld, wantEpoch)
		}
	}
	if _, _, err := s.AcquireNetworkLease(ctx, "dev", "a", 0); err == nil {
		t.Fatal("AcquireNetworkLease with ttl 0 succeeded")
	}
	acquire("a", true, 1)
	acquire("a", true, 1) // renewal
	acquire("b", false, 0)
	// Another network is another lease.
	if held, epoch, err := s.AcquireNetworkLease(ctx, "main", "b", time.Minute); err != nil || !held || epoch != 1 {
		t.Fatalf("lease of another network = %v, %d, %v", held, epoch, err)
	}
	// a keeps renewing past the first ttl: b still cannot take it.
	time.Sleep(networkLeaseTTL / 2)
	acquire("a", true, 1)
	time.Sleep(networkLeaseTTL/2 + 20*time.Millisecond)
	acquire("b", false, 0)
	// a stops renewing: after the ttl, b takes it.
	time.Sleep(networkLeaseTTL + 50*time.Millisecond)
	acquire("b", true, 2)
	acquire("a", false, 0)
	// Only the holder releases; b's release frees it for a at once.
	must(t, s.ReleaseNetworkLease(ctx, "dev", "a"))
	acquire("a", false, 0)
	must(t, s.ReleaseNetworkLease(ctx, "dev", "b"))
	acquire("a", true, 3)
	// A tenure that expired without a taker is a new tenure, too.
	time.Sleep(networkLeaseTTL + 50*time.Millisecond)
	acquire("a", true, 4)
}

// testClaimDueCallbacks: claimers get disjoint rows in due order; a node
// may claim its own rows again; an expired claim, or one the Mark methods
// cleared, is claimable by another node.
func testClaimDueCallbacks(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, s)
	var txs []*engine.Transaction
	for i := range 6 {
		tx := f.tx("dev", i)
		tx.Callbacks = []string{"https://example.com/cb"}
		insert(t, s, tx)
		must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(300+i)))
		txs = append(txs, tx)
	}
	txOf := func(rows []engine.Callback) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, r.TxID)
		}
		return out
	}
	claim := func(node string, now time.Time, limit int) []engine.Callback {
		t.Helper()
		rows, err := s.ClaimDueCallbacks(ctx, node, now, 10*time.Second, limit)
		must(t, err)
		return rows
	}
	now := at(400)
	if rows := claim("a", at(299), 10); len(rows) != 0 {
		t.Fatalf("claimed %v before any row is due", txOf(rows))
	}
	ra := claim("a", now, 2)
	if got, want := txOf(ra), txIDs(txs[:2]); !slices.Equal(got, want) {
		t.Fatalf("a claimed %v, want %v", got, want)
	}
	rb := claim("b", now, 3)
	if got, want := txOf(rb), txIDs(txs[2:5]); !slices.Equal(got, want) {
		t.Fatalf("b claimed %v, want %v (disjoint from a's)", got, want)
	}
	// a claims again: its own rows and the one left, none of b's.
	if got, want := txOf(claim("a", now.Add(time.Second), 10)), append(txIDs(txs[:2]), txs[5].ID); !slices.Equal(got, want) {
		t.Fatalf("a claimed again %v, want %v", got, want)
	}
	if rows := claim("c", now.Add(time.Second), 10); len(rows) != 0 {
		t.Fatalf("c claimed %v while every row is claimed", txOf(rows))
	}
	// The Mark methods clear the claim: a retry due at once is d's to take.
	must(t, s.MarkCallbackRetry(ctx, ra[0].ID, 1, now.Add(2*time.Second), "HTTP status 500"))
	must(t, s.MarkCallbackDelivered(ctx, ra[1].ID, 1, now.Add(2*time.Second)))
	must(t, s.MarkCallbackAbandoned(ctx, rb[0].ID, 1, "refused"))
	if got, want := txOf(claim("d", now.Add(2*time.Second), 10)), txIDs(txs[:1]); !slices.Equal(got, want) {
		t.Fatalf("d claimed %v after the Mark methods, want %v", got, want)
	}
	// b's claims (until now+10 s) expire: c takes them; a's last claim
	// (until now+11 s) holds a second more, d's (now+12 s) two.
	if got, want := txOf(claim("c", now.Add(10*time.Second), 10)), txIDs(txs[3:5]); !slices.Equal(got, want) {
		t.Fatalf("c claimed %v at b's expiry, want %v", got, want)
	}
	if got, want := txOf(claim("b", now.Add(11*time.Second), 10)), txIDs(txs[5:]); !slices.Equal(got, want) {
		t.Fatalf("b claimed %v at a's expiry, want %v", got, want)
	}
	if rows := claim("c", now.Add(11*time.Second), 0); len(rows) != 0 {
		t.Fatalf("limit 0 claimed %v", txOf(rows))
	}
}

// testConcurrentClaims: claimers racing over the same due rows get
// disjoint sets that together are all the rows.
func testConcurrentClaims(t *testing.T, s engine.Store) {
	const rows, claimers = 40, 4
	ctx := ctxOf(t)
	f := newFixture(t, s)
	for i := range rows / 2 {
		tx := f.tx("dev", i)
		tx.Callbacks = []string{"https://example.com/a", "https://example.com/b"}
		insert(t, s, tx)
		must(t, s.MarkFailed(ctx, tx.ID, &engine.TxError{Code: engine.TxReverted, Message: "x"}, at(300)))
	}
	var (
		mu     sync.Mutex
		owner  = map[string]string{}
		errs   = make(chan error, claimers)
		wg     sync.WaitGroup
		start  = make(chan struct{})
		dupErr error
	)
	for c := range claimers {
		node := fmt.Sprintf("node-%d", c)
		wg.Go(func() {
			<-start
			owned := 0
			for {
				// Its own rows come again (as for a dispatcher, whose
				// deliveries in flight renew their claims): ask for more.
				got, err := s.ClaimDueCallbacks(ctx, node, at(400), time.Minute, owned+3)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", node, err)
					return
				}
				fresh := 0
				mu.Lock()
				for _, r := range got {
					switch prev, ok := owner[r.ID]; {
					case !ok:
						owner[r.ID] = node
						fresh++
					case prev != node && dupErr == nil:
						dupErr = fmt.Errorf("row %s claimed by %s and %s", r.ID, prev, node)
					}
				}
				mu.Unlock()
				owned += fresh
				if fresh == 0 {
					return // only its own rows are left to it
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if dupErr != nil {
		t.Fatal(dupErr)
	}
	if len(owner) != rows {
		t.Fatalf("%d rows claimed, want %d", len(owner), rows)
	}
}

// testRateCounters: a request counts in both sliding windows only when both
// are under their limits; no period of a window's length holds more than
// its limit, across bucket boundaries and concurrently; keys are
// independent; pruning forgets only buckets no window counts in any more.
func testRateCounters(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	hour := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	sec := hour.Add(25*time.Minute + 31*time.Second)
	minute := sec.Truncate(time.Minute)
	count := func(key string, at time.Time, perSec, perHour, wantSec, wantHour int, wantAllowed bool) (engine.RateWindowCount, engine.RateWindowCount) {
		t.Helper()
		second, hr, allowed, err := s.CountRequest(ctx, key, at, perSec, perHour)
		must(t, err)
		if second.Count != wantSec || hr.Count != wantHour || allowed != wantAllowed {
			t.Fatalf("CountRequest(%s, %s) = %d, %d, %v; want %d, %d, %v",
				key, at.Format("15:04:05.000"), second.Count, hr.Count, allowed, wantSec, wantHour, wantAllowed)
		}
		return second, hr
	}
	wantOldest := func(what string, w engine.RateWindowCount, want time.Time) {
		t.Helper()
		if !w.Oldest.Equal(want) {
			t.Fatalf("%s: oldest bucket %s, want %s", what, w.Oldest.Format("15:04:05.000"), want.Format("15:04:05.000"))
		}
	}
	secW, hourW := count("u1", sec, 2, 3, 1, 1, true)
	wantOldest("first request, second", secW, sec)
	wantOldest("first request, hour", hourW, minute)
	secW, _ = count("u1", sec.Add(50*time.Millisecond), 2, 3, 2, 2, true)
	wantOldest("second request", secW, sec)
	count("u1", sec.Add(150*time.Millisecond), 2, 3, 2, 2, false) // the second is full; not counted
	count("u2", sec, 2, 3, 1, 1, true)                            // another key
	// One second later the first bucket still overlaps the window (it
	// ends 100 ms later): refused; once it has left, one more fits.
	count("u1", sec.Add(time.Second), 2, 3, 2, 2, false)
	secW, hourW = count("u1", sec.Add(1100*time.Millisecond), 2, 3, 1, 3, true)
	wantOldest("after the first bucket left", secW, sec.Add(1100*time.Millisecond))
	wantOldest("the hour", hourW, minute)
	count("u1", sec.Add(2500*time.Millisecond), 2, 3, 0, 3, false) // the hour is full
	count("u1", sec.Add(59*time.Minute), 2, 3, 0, 3, false)        // and slides: still full 59 min later

	// No double burst at a boundary: 10 at x.9 s fill the second; 10 at
	// (x+1).1 s are all refused (a period of one second holds all of
	// them); at (x+2).0 s the first ten have left and ten more fit.
	base := sec.Truncate(time.Second)
	for i := range 10 {
		count("u5", base.Add(900*time.Millisecond), 10, 100, i+1, i+1, true)
	}
	for range 10 {
		count("u5", base.Add(1100*time.Millisecond), 10, 100, 10, 10, false)
	}
	count("u5", base.Add(1999*time.Millisecond), 10, 100, 10, 10, false)
	for i := range 10 {
		count("u5", base.Add(2*time.Second), 10, 100, i+1, 11+i, true)
	}

	// Concurrent requests of one key, half of them in the next bucket:
	// exactly the limit passes.
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	errs := make(chan error, 20)
	for i := range 20 {
		at := sec.Add(time.Duration(i%2) * engine.RateSecondBucket)
		wg.Go(func() {
			_, _, ok, err := s.CountRequest(ctx, "u3", at, 5, 100)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if allowed != 5 {
		t.Fatalf("%d of 20 concurrent requests allowed, want 5", allowed)
	}

	// Pruning at sec + 90 min: u1's second buckets are forgotten, its hour
	// buckets are not (they are younger than two hours).
	at := sec.Add(1300 * time.Millisecond)
	must(t, s.PruneRateCounters(ctx, sec.Add(90*time.Minute)))
	count("u1", at, 2, 3, 0, 3, false) // the hour was not forgotten: still full
	must(t, s.PruneRateCounters(ctx, hour.Add(3*time.Hour)))
	count("u1", at, 2, 3, 1, 1, true) // both forgotten
	// A recent bucket survives pruning.
	recent := hour.Add(3 * time.Hour)
	count("u4", recent, 2, 3, 1, 1, true)
	must(t, s.PruneRateCounters(ctx, recent.Add(30*time.Second)))
	count("u4", recent, 2, 3, 2, 2, true)
}

// Backfill0008 checks what migration 0008 does to the broadcast versions
// recorded before it: they get their transaction's account and nonce, no
// node, epoch 0 and no signing time. old is a store migrated up to version
// 7 only; exec runs a statement on its database (placeholders ?); migrate
// closes old and returns the store on the same database with every
// migration applied.
func Backfill0008(t *testing.T, old engine.Store, exec func(query string, args ...any) error, migrate func() engine.Store) {
	ctx := ctxOf(t)
	f := newFixture(t, old)
	tx := f.tx("dev", 1)
	insert(t, old, tx)
	first, second := randomHash(t), randomHash(t)
	must(t, exec(`UPDATE transactions SET status = 'submitted', nonce = 4, hash = ? WHERE id = ?`, second.Hex(), tx.ID))
	for _, h := range []common.Hash{first, second} {
		must(t, exec(`INSERT INTO tx_attempts (network, hash, tx_id) VALUES (?, ?, ?)`, "dev", h.Hex(), tx.ID))
	}
	s := migrate()
	got, err := s.Attempts(ctx, f.account.ID, "dev")
	must(t, err)
	want := []engine.Attempt{{TxID: tx.ID, Nonce: 4, Hash: first}, {TxID: tx.ID, Nonce: 4, Hash: second}}
	if first.Hex() > second.Hex() {
		want[0], want[1] = want[1], want[0]
	}
	wantAttempts(t, got, want, f.account.ID, "dev")
	// The transaction goes on under a lease.
	fence, err := s.AcquireAccountLease(ctx, f.account.ID, "node-a")
	must(t, err)
	got0 := get(t, s, tx.ID)
	must(t, s.MarkReplaced(ctx, fence, replacement(t, got0, 50)))
}

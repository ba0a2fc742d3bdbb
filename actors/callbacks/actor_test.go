package callbacks_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/callbacks"
	"github.com/txengine/txengine/actors/internal/lifecycle"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
)

// panickyStore is the store whose first ClaimDueCallbacks (the
// dispatcher's poll) panics.
type panickyStore struct {
	*sqlite.Store
	panicked atomic.Bool
}

func (s *panickyStore) ClaimDueCallbacks(ctx context.Context, node string, now time.Time, claimFor time.Duration, limit int) ([]engine.Callback, error) {
	if s.panicked.CompareAndSwap(false, true) {
		panic("injected: the store panicked")
	}
	return s.Store.ClaimDueCallbacks(ctx, node, now, claimFor, limit)
}

// TestActorDeliversFromTheOutbox: a transaction that fails in the store is
// delivered by the actor's own polling, signed with its owner's secret,
// once; a stop waits for the actor. So it is when the actor's first poll
// panics: the actor restarts (lifecycle supervision, as spawned in
// production) and the next incarnation delivers.
func TestActorDeliversFromTheOutbox(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "after a panic"}[panics], func(t *testing.T) {
			deliversFromTheOutbox(t, panics)
		})
	}
}

func deliversFromTheOutbox(t *testing.T, panics bool) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "txengine.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	var (
		mu   sync.Mutex
		got  []*http.Request
		body []byte
	)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, body = append(got, r), b
		mu.Unlock()
	}))
	defer rc.Close()

	now := time.Now().UTC()
	sealer, err := keystore.NewKeySealer(make([]byte, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := sealer.SealCallbackSecret("u1", "secret-1")
	if err != nil {
		t.Fatal(err)
	}
	u := &engine.User{ID: "u1", CallbackSecret: secret, Created: now}
	a := &engine.Account{ID: "a1", Owner: "u1", Address: common.Address{1}, EncryptedKey: []byte{1}, Created: now}
	if err := store.CreateUser(ctx, u, nil, a); err != nil {
		t.Fatal(err)
	}
	tx := &engine.Transaction{ID: "t1", Owner: "u1", AccountID: "a1", Network: "dev", From: a.Address,
		Method: "transfer", Created: now, Callbacks: []string{rc.URL}}
	if err := store.InsertTransactions(ctx, []*engine.Transaction{tx}); err != nil {
		t.Fatal(err)
	}

	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	var ds engine.DispatcherStore = store
	panicky := &panickyStore{Store: store}
	if panics {
		ds = panicky
	}
	pid := sys.Root.Spawn(lifecycle.Guarded(callbacks.Props(callbacks.Config{
		Dispatcher:   engine.DispatcherConfig{Store: ds, Secrets: sealer, AllowPrivate: true},
		PollInterval: 50 * time.Millisecond,
	})))
	ended := time.Now()
	if err := store.MarkFailed(ctx, "t1", &engine.TxError{Code: engine.TxReverted, Message: "nope"}, ended); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := sys.Root.RequestFuture(pid, &callbacks.DepthRequest{}, time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		if d := res.(*callbacks.Depth); d.Err == nil && d.Pending == 0 && d.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("outbox not drained within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("delivered %s after the transaction failed", time.Since(ended))
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	if err := engine.VerifySignature("secret-1", got[0].Header.Get("X-Callback-Signature"), body, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	stored, err := store.TransactionByID(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := engine.CallbackBody(stored)
	if string(body) != string(want) {
		t.Fatalf("body = %s, want %s", body, want)
	}
	if panics && !panicky.panicked.Load() {
		t.Fatal("the injected panic did not happen")
	}
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

// hangingOutbox is an outbox whose calls hang until their context ends (a
// database connection that hung).
type hangingOutbox struct {
	engine.DispatcherStore
	claims atomic.Int64
}

func (s *hangingOutbox) ClaimDueCallbacks(ctx context.Context, _ string, _ time.Time, _ time.Duration, _ int) ([]engine.Callback, error) {
	s.claims.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *hangingOutbox) PendingCallbacks(ctx context.Context) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestActorStoreCallsHaveADeadline: with a database that does not answer,
// the actor's outbox polls and depth reads end at the dispatcher's
// StoreTimeout: it keeps polling and answers, instead of freezing.
func TestActorStoreCallsHaveADeadline(t *testing.T) {
	store := &hangingOutbox{}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	pid := sys.Root.Spawn(callbacks.Props(callbacks.Config{PollInterval: 10 * time.Millisecond,
		Dispatcher: engine.DispatcherConfig{Store: store, Log: slog.New(slog.DiscardHandler), StoreTimeout: 50 * time.Millisecond}}))
	defer func() { _ = sys.Root.StopFuture(pid).Wait() }()
	deadline := time.Now().Add(3 * time.Second)
	for store.claims.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d outbox polls in 3 s: a hung claim holds the actor", store.claims.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := sys.Root.RequestFuture(pid, &callbacks.DepthRequest{}, 2*time.Second).Result()
	if err != nil {
		t.Fatalf("depth: %v", err)
	}
	if d := res.(*callbacks.Depth); !errors.Is(d.Err, context.DeadlineExceeded) {
		t.Fatalf("depth error %v, want the store deadline", d.Err)
	}
}

// countingPruner is an OutboxPruner whose first fullSteps steps delete a
// full batch of callbacks; it records the cutoffs it was given.
type countingPruner struct {
	mu        sync.Mutex
	fullSteps int
	cutoffs   []time.Time
	events    int
}

func (p *countingPruner) PruneCallbacks(_ context.Context, before time.Time, limit int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutoffs = append(p.cutoffs, before)
	if len(p.cutoffs) <= p.fullSteps {
		return limit, nil
	}
	return 0, nil
}

func (p *countingPruner) PruneSubscriptionEvents(context.Context, time.Time, int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events++
	return 0, nil
}

func (p *countingPruner) steps() ([]time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.cutoffs...), p.events
}

// TestActorPrunes: the actor prunes what is older than Retention every
// PruneEvery, in batches of PruneBatch, and takes the next batch at once
// while batches come back full; a real store's delivered row past the
// retention is pruned, a pending one kept.
func TestActorPrunes(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "txengine.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	old := time.Now().Add(-48 * time.Hour).UTC()
	u := &engine.User{ID: "u1", Created: old}
	a := &engine.Account{ID: "a1", Owner: "u1", Address: common.Address{1}, EncryptedKey: []byte{1}, Created: old}
	if err := store.CreateUser(ctx, u, nil, a); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		tx := &engine.Transaction{ID: id, Owner: "u1", AccountID: "a1", Network: "dev", From: a.Address,
			Method: "transfer", Created: old, Callbacks: []string{"http://192.0.2.1/cb"}}
		if err := store.InsertTransactions(ctx, []*engine.Transaction{tx}); err != nil {
			t.Fatal(err)
		}
		if err := store.MarkFailed(ctx, id, &engine.TxError{Code: engine.TxReverted, Message: "x"}, old); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := store.DueCallbacks(ctx, time.Now(), 10)
	if err != nil || len(rows) != 2 {
		t.Fatalf("due = %v, %v", rows, err)
	}
	if err := store.MarkCallbackDelivered(ctx, rows[0].ID, 1, old); err != nil {
		t.Fatal(err)
	}

	fake := &countingPruner{fullSteps: 3}
	sys := actor.NewActorSystem()
	defer sys.Shutdown()
	log := slog.New(slog.DiscardHandler)
	spawn := func(p engine.OutboxPruner, every time.Duration) *actor.PID {
		// The dispatcher polls a far future only: it delivers nothing here.
		return sys.Root.Spawn(callbacks.Props(callbacks.Config{PollInterval: time.Hour, Pruner: p, PruneEvery: every,
			PruneBatch: 2, Retention: 24 * time.Hour,
			Dispatcher: engine.DispatcherConfig{Store: &hangingOutbox{}, Log: log, StoreTimeout: time.Millisecond}}))
	}
	began := time.Now()
	pid := spawn(fake, 500*time.Millisecond)
	deadline := time.Now().Add(3 * time.Second)
	for {
		cutoffs, _ := fake.steps()
		if len(cutoffs) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pruning steps in 3 s, want 5 (4 at once, the fifth a period later)", len(cutoffs))
		}
		time.Sleep(5 * time.Millisecond)
	}
	cutoffs, events := fake.steps()
	if events < 4 {
		t.Errorf("%d delivery batches in %d steps, want one a step", events, len(cutoffs))
	}
	for _, c := range cutoffs {
		if age := began.Sub(c); age < 24*time.Hour-3*time.Second || age > 24*time.Hour+time.Second {
			t.Errorf("cutoff %s ago, want the retention (24h)", age)
		}
	}
	// Steps 2-4 follow the full batches at once; step 5 waits a period.
	if gap := cutoffs[3].Sub(cutoffs[0]); gap > 250*time.Millisecond {
		t.Errorf("steps after full batches took %s, want at once", gap)
	}
	if gap := cutoffs[4].Sub(cutoffs[3]); gap < 450*time.Millisecond {
		t.Errorf("the step after a partial batch came %s later, want PruneEvery (500ms)", gap)
	}
	_ = sys.Root.StopFuture(pid).Wait()

	rec := &recordingPruner{OutboxPruner: store}
	real := spawn(rec, 10*time.Millisecond)
	defer func() { _ = sys.Root.StopFuture(real).Wait() }()
	deadline = time.Now().Add(3 * time.Second)
	for rec.deleted.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the delivered row past the retention is not pruned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := rec.deleted.Load(); n != 1 {
		t.Fatalf("the actor pruned %d rows, want 1 (the delivered one)", n)
	}
	if n, err := store.PendingCallbacks(ctx); err != nil || n != 1 {
		t.Fatalf("pending callbacks = %d, %v; want 1 (kept)", n, err)
	}
}

// recordingPruner counts the outbox rows its OutboxPruner deleted.
type recordingPruner struct {
	engine.OutboxPruner
	deleted atomic.Int64
}

func (p *recordingPruner) PruneCallbacks(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := p.OutboxPruner.PruneCallbacks(ctx, before, limit)
	p.deleted.Add(int64(n))
	return n, err
}

package callbacks_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/actors/callbacks"
	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// TestActorDeliversFromTheOutbox: a transaction that fails in the store is
// delivered by the actor's own polling, signed with its owner's secret; a
// stop waits for the actor.
func TestActorDeliversFromTheOutbox(t *testing.T) {
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
	sealer, err := engine.NewKeySealer(make([]byte, engine.MasterKeySize))
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
	pid := sys.Root.Spawn(callbacks.Props(callbacks.Config{
		Dispatcher:   engine.DispatcherConfig{Store: store, Secrets: sealer, AllowPrivate: true},
		PollInterval: 50 * time.Millisecond,
	}))
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
	if err := sys.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

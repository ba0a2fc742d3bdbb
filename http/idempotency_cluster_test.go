package http

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
)

// Idempotency across the nodes of a cluster: two Servers on one store.

// hidingStore hides idempotency records from the next hide lookups, as if
// they had happened before another node stored the record.
type hidingStore struct {
	Store
	hide atomic.Int64
}

func (h *hidingStore) IdempotencyRecord(ctx context.Context, userID, key string) (*engine.IdempotencyRecord, error) {
	if h.hide.Add(-1) >= 0 {
		return nil, engine.ErrNotFound
	}
	return h.Store.IdempotencyRecord(ctx, userID, key)
}

// idemCluster is one SQLite store with a user and two servers on it.
type idemCluster struct {
	store  *sqlite.Store
	user   *engine.User
	token  string
	nodes  [2]*Server
	hiding *hidingStore // node 1's view of the store
}

func newIdemCluster(t *testing.T) *idemCluster {
	t.Helper()
	ctx := context.Background()
	store := openSQLite(t)
	sealer, err := keystore.NewKeySealer(bytes.Repeat([]byte{7}, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	u := &engine.User{ID: uuid.NewString(), Created: testNow}
	if u.CallbackSecret, err = sealer.SealCallbackSecret(u.ID, "s"); err != nil {
		t.Fatal(err)
	}
	token, hash, err := keystore.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	a, err := engine.NewLocalAccount(sealer)
	if err != nil {
		t.Fatal(err)
	}
	a.ID, a.Owner, a.Default, a.Created = uuid.NewString(), u.ID, true, testNow
	if err := store.CreateUser(ctx, u, hash, a); err != nil {
		t.Fatal(err)
	}
	c := &idemCluster{store: store, user: u, token: token, hiding: &hidingStore{Store: store}}
	cfg := Config{RateLimit: RateLimitConfig{PerSecond: 1 << 30, PerHour: 1 << 30}}
	for i, st := range []Store{store, c.hiding} {
		c.nodes[i] = newTestServer(t, cfg, Deps{Store: st, Sealer: sealer, Engine: &fakeEngine{}, Clock: fixedClock{testNow}})
	}
	return c
}

func (c *idemCluster) accounts(t *testing.T) int {
	t.Helper()
	accts, err := c.store.ListAccounts(context.Background(), c.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	return len(accts)
}

// TestIdempotencyAcrossServers: node 1 looked the key up before node 0
// stored it, so its own write conflicts; it answers with node 0's response
// for the same request and 409 for another.
func TestIdempotencyAcrossServers(t *testing.T) {
	c := newIdemCluster(t)
	first := serveOn(t, c.nodes[0], "POST", "/accounts", c.token, "", "Idempotency-Key", "k-1")
	wantStatus(t, first, http.StatusCreated)

	c.hiding.hide.Store(1)
	again := serveOn(t, c.nodes[1], "POST", "/accounts", c.token, "", "Idempotency-Key", "k-1")
	wantStatus(t, again, http.StatusCreated)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("node 1 answered %s (%v); node 0 %s", again.Body.String(), again.Header(), first.Body.String())
	}
	if n := c.accounts(t); n != 2 {
		t.Fatalf("user has %d accounts, want 2 (default + one)", n)
	}

	c.hiding.hide.Store(1)
	other := serveOn(t, c.nodes[1], "POST", "/accounts", c.token, "{}", "Idempotency-Key", "k-1")
	wantError(t, other, http.StatusConflict, engine.CodeConflict, "Idempotency-Key")
	if n := c.accounts(t); n != 2 {
		t.Fatalf("user has %d accounts after a refused request, want 2", n)
	}
}

// TestIdempotencyRaceAcrossServers: the same request sent at once to two
// servers many times: one account is created and every answer is its 201.
func TestIdempotencyRaceAcrossServers(t *testing.T) {
	c := newIdemCluster(t)
	const n = 8
	recs := make([]*httptest.ResponseRecorder, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			recs[i] = serveOn(t, c.nodes[i%2], "POST", "/accounts", c.token, "", "Idempotency-Key", "race")
		})
	}
	wg.Wait()
	for i, rec := range recs {
		if rec.Code != http.StatusCreated || rec.Body.String() != recs[0].Body.String() {
			t.Fatalf("request %d: %d %s (first %d %s)", i, rec.Code, rec.Body.String(), recs[0].Code, recs[0].Body.String())
		}
	}
	if got := c.accounts(t); got != 2 {
		t.Fatalf("user has %d accounts, want 2 (default + one)", got)
	}
}

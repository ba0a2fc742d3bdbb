package http

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestSendsThroughPoolReadItOnce: a burst of sends through one pool reads
// the pool from the store once (the pool cache); a resize on this node is
// seen by the next send (its new member can be assigned), and a send right
// after the pool's DELETE on this node is 404 on field pool, nothing
// submitted.
func TestSendsThroughPoolReadItOnce(t *testing.T) {
	env := newTestEnv(t)
	p := env.createPool(env.aliceToken, `{"name":"payouts","network":"dev","size":2}`)
	path := "/tokens/" + env.aliceToken20.ID + "/transfers"
	body := `{"to":"` + env.bobAcct.Address.Hex() + `","value":"1","pool":"` + p.ID + `"}`
	var members []int
	env.engine.mu.Lock()
	env.engine.assign = func(pl *engine.Pool, need engine.PoolNeed) (engine.PoolAssignment, error) {
		members = append(members, len(pl.Members))
		return engine.PoolAssignment{Member: pl.Members[len(pl.Members)-1]}, nil
	}
	env.engine.mu.Unlock()

	before := env.store.poolReads.Load()
	for range 20 {
		wantStatus(t, env.do("POST", path, env.aliceToken, body), http.StatusAccepted)
	}
	if n := env.store.poolReads.Load() - before; n > 1 {
		t.Errorf("20 sends through one pool read it %d times, want at most 1", n)
	}

	wantStatus(t, env.do("PATCH", "/pools/"+p.ID, env.aliceToken, `{"size":3}`), http.StatusOK)
	wantStatus(t, env.do("POST", path, env.aliceToken, body), http.StatusAccepted)
	env.engine.mu.Lock()
	last := members[len(members)-1]
	env.engine.mu.Unlock()
	if last != 3 {
		t.Errorf("the send after the resize was given a pool of %d members, want 3", last)
	}

	wantStatus(t, env.do("DELETE", "/pools/"+p.ID, env.aliceToken, ""), http.StatusOK)
	subs := len(env.engine.submissions())
	wantError(t, env.do("POST", path, env.aliceToken, body), http.StatusNotFound, engine.CodeNotFound, "pool")
	if n := len(env.engine.submissions()); n != subs {
		t.Errorf("a send through the deleted pool was submitted (%d, then %d)", subs, n)
	}
}

// TestPoolCacheTTLAndDrop: a cached pool is used for poolCacheTTL, read
// again after it; drop forgets it, and a read that began before a drop
// stores nothing (a pool deleted meanwhile is not put back); errors are
// not cached.
func TestPoolCacheTTLAndDrop(t *testing.T) {
	var c poolCache
	ctx := context.Background()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	reads := 0
	load := func(context.Context, string) (*engine.Pool, error) {
		reads++
		return &engine.Pool{ID: "p", Size: reads}, nil
	}
	get := func(now time.Time, want int) {
		t.Helper()
		p, err := c.get(ctx, "p", now, load)
		if err != nil || p.Size != want {
			t.Fatalf("get at %s: %+v, %v; want version %d", now.Sub(t0), p, err, want)
		}
	}
	get(t0, 1)
	get(t0.Add(poolCacheTTL-time.Millisecond), 1)
	get(t0.Add(poolCacheTTL), 2)
	c.drop("p")
	get(t0.Add(poolCacheTTL), 3)

	// A read that a drop overtakes is answered, not kept.
	racing := func(ctx context.Context, id string) (*engine.Pool, error) {
		c.drop(id)
		return load(ctx, id)
	}
	c.drop("p")
	if p, err := c.get(ctx, "p", t0, racing); err != nil || p.Size != 4 {
		t.Fatalf("racing read: %+v, %v", p, err)
	}
	get(t0, 5)

	gone := errors.New("gone")
	if _, err := c.get(ctx, "q", t0, func(context.Context, string) (*engine.Pool, error) { return nil, gone }); !errors.Is(err, gone) {
		t.Fatalf("error %v, want gone", err)
	}
	if _, ok := c.pools["q"]; ok {
		t.Fatal("an error was cached")
	}
}

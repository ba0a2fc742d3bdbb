package http

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

func TestUserCache(t *testing.T) {
	var c userCache
	loads := 0
	u := &engine.User{ID: "u1"}
	load := func(context.Context, []byte) (*engine.User, error) { loads++; return u, nil }
	now := time.Unix(1_700_000_000, 0)
	for range 3 {
		if got, err := c.get(context.Background(), now, []byte("h"), true, load); err != nil || got != u {
			t.Fatalf("get = %v, %v", got, err)
		}
	}
	if loads != 1 {
		t.Fatalf("loads = %d within the TTL, want 1", loads)
	}
	c.get(context.Background(), now.Add(userCacheTTL), []byte("h"), true, load)
	if loads != 2 {
		t.Fatalf("loads = %d after the TTL, want 2", loads)
	}
	c.forget("u1")
	c.get(context.Background(), now.Add(userCacheTTL), []byte("h"), true, load)
	if loads != 3 {
		t.Fatalf("loads = %d after forget, want 3", loads)
	}
	// An unknown token is remembered for unknownTTL: one load, then none
	// until it expires.
	unknown := func(context.Context, []byte) (*engine.User, error) { loads++; return nil, engine.ErrNotFound }
	for i := range 3 {
		at := now.Add(time.Duration(i) * (unknownTTL - time.Millisecond) / 2)
		if _, err := c.get(context.Background(), at, []byte("x"), true, unknown); !engine.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	}
	if loads != 4 {
		t.Fatalf("loads = %d: an unknown token is looked up once within %s", loads, unknownTTL)
	}
	if _, err := c.get(context.Background(), now.Add(unknownTTL), []byte("x"), true, unknown); !engine.IsNotFound(err) || loads != 5 {
		t.Fatalf("after the TTL: err %v, loads %d; want not found, 5", err, loads)
	}
	// Other errors are not cached.
	down := func(context.Context, []byte) (*engine.User, error) { loads++; return nil, errors.New("database down") }
	for range 2 {
		if _, err := c.get(context.Background(), now, []byte("y"), true, down); err == nil || engine.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	}
	if loads != 7 {
		t.Fatalf("loads = %d: a failed lookup must not be cached", loads)
	}
	// A flood of distinct unknown tokens keeps the cache bounded.
	for i := range 3 * unknownSize {
		c.get(context.Background(), now, []byte(strconv.Itoa(i)), true, unknown)
	}
	if n := len(c.unknown); n > unknownSize {
		t.Fatalf("%d unknown hashes held, bound %d", n, unknownSize)
	}
}

// TestUserCacheDrop: a dropped hash authenticates nobody at once, without a
// database read, and a load in progress when the drop arrives (it may have
// read the token before its revocation committed) is neither accepted nor
// cached.
func TestUserCacheDrop(t *testing.T) {
	var c userCache
	u := &engine.User{ID: "u1"}
	now := time.Unix(1_700_000_000, 0)
	loads := 0
	load := func(context.Context, []byte) (*engine.User, error) { loads++; return u, nil }
	if _, err := c.get(t.Context(), now, []byte("h"), true, load); err != nil {
		t.Fatal(err)
	}
	c.drop(now, []byte("h"))
	if _, err := c.get(t.Context(), now, []byte("h"), true, load); !engine.IsNotFound(err) || loads != 1 {
		t.Fatalf("after drop: err %v, loads %d; want not found without a load", err, loads)
	}

	// A drop during a load: the load read the row before the revocation.
	inLoad, release := make(chan struct{}), make(chan struct{})
	slow := func(context.Context, []byte) (*engine.User, error) {
		close(inLoad)
		<-release
		return u, nil
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.get(t.Context(), now, []byte("k"), true, slow)
		errc <- err
	}()
	<-inLoad
	c.drop(now, []byte("k"))
	close(release)
	if err := <-errc; !engine.IsNotFound(err) {
		t.Fatalf("a load overtaken by a drop returned %v, want not found", err)
	}
	if _, err := c.get(t.Context(), now, []byte("k"), true, load); !engine.IsNotFound(err) {
		t.Fatalf("the overtaken load was cached: %v", err)
	}
	if len(c.loading) != 0 {
		t.Errorf("loads in progress left behind: %d", len(c.loading))
	}
}

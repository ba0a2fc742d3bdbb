package http

import (
	"context"
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
		if got, err := c.get(context.Background(), now, []byte("h"), load); err != nil || got != u {
			t.Fatalf("get = %v, %v", got, err)
		}
	}
	if loads != 1 {
		t.Fatalf("loads = %d within the TTL, want 1", loads)
	}
	c.get(context.Background(), now.Add(userCacheTTL), []byte("h"), load)
	if loads != 2 {
		t.Fatalf("loads = %d after the TTL, want 2", loads)
	}
	c.forget("u1")
	c.get(context.Background(), now.Add(userCacheTTL), []byte("h"), load)
	if loads != 3 {
		t.Fatalf("loads = %d after forget, want 3", loads)
	}
	unknown := func(context.Context, []byte) (*engine.User, error) { loads++; return nil, engine.ErrNotFound }
	for range 2 {
		if _, err := c.get(context.Background(), now, []byte("x"), unknown); !engine.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	}
	if loads != 5 {
		t.Fatalf("loads = %d: unknown tokens must not be cached", loads)
	}
}

package http

import (
	"context"
	"fmt"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

func TestAccountCacheByIDAndAddress(t *testing.T) {
	var c accountCache
	a := &engine.Account{ID: "a1", Owner: "u1", Address: common.HexToAddress("0x01"), Default: true, EncryptedKey: []byte("k")}
	loads := 0
	byID := func(_ context.Context, id string) (*engine.Account, error) {
		loads++
		if id != a.ID {
			return nil, engine.ErrNotFound
		}
		return a, nil
	}
	byAddr := func(_ context.Context, addr common.Address) (*engine.Account, error) {
		loads++
		return nil, engine.ErrNotFound
	}
	for range 3 {
		got, err := c.byIDForSend(context.Background(), "a1", byID)
		if err != nil || got.ID != "a1" || got.Owner != "u1" || got.Address != a.Address {
			t.Fatalf("byIDForSend = %+v, %v", got, err)
		}
		if got.Default || got.EncryptedKey != nil {
			t.Fatalf("cached account carries mutable or secret fields: %+v", got)
		}
		got.Owner = "changed by a caller" // a copy: the cache keeps its own
	}
	if loads != 1 {
		t.Fatalf("loads = %d, want 1", loads)
	}
	// The address of an account read by id is cached too.
	if got, err := c.byAddressForSend(context.Background(), a.Address, byAddr); err != nil || got.ID != "a1" || got.Owner != "u1" {
		t.Fatalf("byAddressForSend = %+v, %v", got, err)
	}
	if loads != 1 {
		t.Fatalf("loads = %d, want 1", loads)
	}
	// Errors are not cached.
	for range 2 {
		if _, err := c.byIDForSend(context.Background(), "nope", byID); !engine.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	}
	if loads != 3 {
		t.Fatalf("loads = %d, want 3", loads)
	}
}

func TestAccountCacheDefault(t *testing.T) {
	c := accountCache{cacheDefaults: true}
	cur := &engine.Account{ID: "a1", Owner: "u1", Address: common.HexToAddress("0x01"), Default: true}
	loads := 0
	load := func(context.Context, string) (*engine.Account, error) { loads++; return cur, nil }
	for range 3 {
		got, err := c.defaultOf(context.Background(), "u1", load)
		if err != nil || got.ID != "a1" || !got.Default {
			t.Fatalf("defaultOf = %+v, %v", got, err)
		}
	}
	if loads != 1 {
		t.Fatalf("loads = %d, want 1", loads)
	}
	// A change of the default drops the entry.
	cur = &engine.Account{ID: "a2", Owner: "u1", Address: common.HexToAddress("0x02"), Default: true}
	c.forgetDefault("u1")
	if got, _ := c.defaultOf(context.Background(), "u1", load); got.ID != "a2" || loads != 2 {
		t.Fatalf("after forgetDefault: %+v, loads %d", got, loads)
	}
	// A read that overlaps a change is answered but not cached.
	stale := func(context.Context, string) (*engine.Account, error) {
		loads++
		c.forgetDefault("u1") // the change lands while the old default is read
		return &engine.Account{ID: "a2", Owner: "u1"}, nil
	}
	cur = &engine.Account{ID: "a3", Owner: "u1", Address: common.HexToAddress("0x03"), Default: true}
	c.forgetDefault("u1")
	if got, _ := c.defaultOf(context.Background(), "u1", stale); got.ID != "a2" {
		t.Fatalf("overlapping read = %+v", got)
	}
	if got, _ := c.defaultOf(context.Background(), "u1", load); got.ID != "a3" {
		t.Fatalf("after an overlapping read the stale default was cached: %+v", got)
	}
	// No default: not cached.
	none := func(context.Context, string) (*engine.Account, error) { loads++; return nil, engine.ErrNotFound }
	before := loads
	for range 2 {
		if _, err := c.defaultOf(context.Background(), "u2", none); !engine.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	}
	if loads != before+2 {
		t.Fatalf("a missing default was cached")
	}
}

// In cluster mode another node may change the default: it is read every time.
func TestAccountCacheDefaultUncachedInCluster(t *testing.T) {
	c := accountCache{cacheDefaults: false}
	loads := 0
	load := func(context.Context, string) (*engine.Account, error) {
		loads++
		return &engine.Account{ID: "a1", Owner: "u1", Default: true}, nil
	}
	for range 3 {
		if got, err := c.defaultOf(context.Background(), "u1", load); err != nil || !got.Default {
			t.Fatalf("defaultOf = %+v, %v", got, err)
		}
	}
	if loads != 3 {
		t.Fatalf("loads = %d, want 3", loads)
	}
}

// TestAccountCacheRemembersCreated: an account just created is sent from
// without a read of the store (a cold account's first send), and the cache
// keeps no secret of it.
func TestAccountCacheRemembersCreated(t *testing.T) {
	var c accountCache
	a := &engine.Account{ID: "a2", Owner: "u2", Address: common.HexToAddress("0x02"), EncryptedKey: []byte("k")}
	c.remember(a)
	load := func(context.Context, string) (*engine.Account, error) {
		t.Fatal("the store was read for an account just created")
		return nil, nil
	}
	got, err := c.byIDForSend(context.Background(), "a2", load)
	if err != nil || got.Owner != "u2" || got.Address != a.Address || got.EncryptedKey != nil {
		t.Fatalf("byIDForSend = %+v, %v", got, err)
	}
}

// TestAccountCacheKeepsTheWorkingSet: more accounts than one generation
// holds are cached; an account in use survives the turn of a generation,
// one not used for two generations is read again.
func TestAccountCacheKeepsTheWorkingSet(t *testing.T) {
	var c accountCache
	loads := 0
	load := func(_ context.Context, id string) (*engine.Account, error) {
		loads++
		return &engine.Account{ID: id, Owner: "o"}, nil
	}
	ctx := context.Background()
	hot := "hot"
	if _, err := c.byIDForSend(ctx, hot, load); err != nil {
		t.Fatal(err)
	}
	for i := range accountCacheSize + accountCacheSize/2 {
		c.remember(&engine.Account{ID: fmt.Sprint("a", i)})
		if i%1000 == 0 {
			if _, err := c.byIDForSend(ctx, hot, load); err != nil {
				t.Fatal(err)
			}
		}
	}
	if loads != 1 {
		t.Fatalf("the account in use was read %d times, want once", loads)
	}
	for _, id := range []string{"a0", fmt.Sprint("a", accountCacheSize-1), fmt.Sprint("a", accountCacheSize+10)} {
		if _, err := c.byIDForSend(ctx, id, load); err != nil {
			t.Fatal(err)
		}
	}
	if loads != 1 {
		t.Fatalf("%d reads of accounts remembered within the last two generations, want none", loads-1)
	}
	for i := range 2 * accountCacheSize {
		c.remember(&engine.Account{ID: fmt.Sprint("b", i)})
	}
	if _, err := c.byIDForSend(ctx, "a0", load); err != nil {
		t.Fatal(err)
	}
	if loads != 2 {
		t.Fatalf("an account unused for two generations: %d reads, want 1 (it is bounded)", loads-1)
	}
}

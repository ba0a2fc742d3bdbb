package http

import (
	"context"
	"testing"

	"github.com/txengine/txengine/engine"
)

func TestContractCacheLoadsOnceAndParsesOnce(t *testing.T) {
	var c contractCache
	loads := 0
	ct := &engine.Contract{ID: "c1", ABI: []byte(testERC20ABI)}
	load := func(context.Context, string) (*engine.Contract, error) {
		loads++
		return ct, nil
	}
	for range 3 {
		got, err := c.contract(context.Background(), "c1", load)
		if err != nil || got != ct {
			t.Fatalf("contract = %v, %v", got, err)
		}
	}
	if loads != 1 {
		t.Fatalf("loaded %d times, want 1", loads)
	}
	a1, err := c.of(ct)
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := c.of(ct); a1 != a2 || a1.Methods["transfer"].Name != "transfer" {
		t.Fatal("the ABI was parsed again or is wrong")
	}
	// Not-found is not cached: the next call loads again.
	miss := func(context.Context, string) (*engine.Contract, error) { loads++; return nil, engine.ErrNotFound }
	for range 2 {
		if _, err := c.contract(context.Background(), "c2", miss); !engine.IsNotFound(err) {
			t.Fatalf("err = %v", err)
		}
	}
	if loads != 3 {
		t.Fatalf("loads = %d, want 3 (misses are not cached)", loads)
	}
}

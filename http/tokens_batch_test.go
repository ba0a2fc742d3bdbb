package http

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// tokensEnv is a contractEnv where alice holds n more ERC-20 tokens, all
// answering as the fake token does.
func tokensEnv(t *testing.T, n int) *contractEnv {
	e := newContractEnv(t)
	e.rich.tokens = map[common.Address]bool{}
	for i := range n {
		a := common.BigToAddress(big.NewInt(int64(0x70000 + i)))
		e.rich.tokens[a] = true
		rec := e.req("PUT", "/contracts", "/contracts", e.aliceToken,
			fmt.Sprintf(`{"name":"Token %d","network":"dev","address":"%s","type":"erc20"}`, i, a.Hex()))
		wantStatus(t, rec, 201)
	}
	return e
}

// listCounted lists alice's tokens and returns them with the round trips
// and getter calls the listing made.
func listCounted(t *testing.T, e *contractEnv) ([]tokenView, int, map[string]int) {
	t.Helper()
	e.rich.mu.Lock()
	e.rich.roundTrips, e.rich.methodCalls = 0, nil
	e.rich.mu.Unlock()
	rec := e.req("GET", "/tokens", "/tokens", e.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var got []tokenView
	decodeData(t, rec, &got)
	e.rich.mu.Lock()
	defer e.rich.mu.Unlock()
	calls := map[string]int{}
	for k, v := range e.rich.methodCalls {
		calls[k] = v
	}
	return got, e.rich.roundTrips, calls
}

// TestListTokensRoundTrips: GET /tokens reads N tokens in one JSON-RPC
// batch (one round trip, not one per call), reads name, symbol and
// decimals once per token (a second listing asks for the supply alone),
// and reads the supply fresh every time.
func TestListTokensRoundTrips(t *testing.T) {
	const n = 40
	e := tokensEnv(t, n)
	got, trips, calls := listCounted(t, e)
	t.Logf("first listing of %d tokens: %d round trips, calls %v", len(got), trips, calls)
	if len(got) != n+1 || trips != 1 {
		t.Fatalf("first listing: %d tokens in %d round trips; want %d in 1", len(got), trips, n+1)
	}
	for _, g := range []string{"name", "symbol", "decimals", "totalSupply"} {
		if calls[g] != n+1 {
			t.Fatalf("first listing: %d %s calls, want %d", calls[g], g, n+1)
		}
	}
	e.chain.mu.Lock()
	e.chain.supply = big.NewInt(777)
	e.chain.mu.Unlock()
	got, trips, calls = listCounted(t, e)
	t.Logf("second listing: %d round trips, calls %v", trips, calls)
	if trips != 1 || calls["name"]+calls["symbol"]+calls["decimals"] != 0 || calls["totalSupply"] != n+1 {
		t.Fatalf("second listing: %d round trips, calls %v; want 1 round trip of %d totalSupply calls", trips, calls, n+1)
	}
	for _, tk := range got {
		if tk.Parameters.Supply != "777" || tk.Parameters.Symbol != "DEMO" || tk.Parameters.Decimals != 18 {
			t.Fatalf("second listing: %+v; want the new supply 777 with the cached symbol and decimals", tk)
		}
	}
	// GET /tokens/{contractId} and GET /tokens/{network}/{address} share
	// the cache: one round trip for the supply.
	e.rich.mu.Lock()
	e.rich.roundTrips, e.rich.methodCalls = 0, nil
	e.rich.mu.Unlock()
	wantStatus(t, e.req("GET", "/tokens/{contractId}", "/tokens/"+e.aliceToken20.ID, e.aliceToken, ""), http.StatusOK)
	wantStatus(t, e.req("GET", "/tokens/{contractId}/{address}", "/tokens/dev/"+e.aliceToken20.Address.Hex(), e.aliceToken, ""), http.StatusOK)
	if e.rich.roundTrips != 2 || e.rich.methodCalls["totalSupply"] != 2 || len(e.rich.methodCalls) != 1 {
		t.Fatalf("single token reads: %d round trips, calls %v; want 2 of totalSupply", e.rich.roundTrips, e.rich.methodCalls)
	}
}

// TestListTokensNodeWithoutBatches: GET /tokens keeps no state about
// batches (a node that refuses them is the chain client's business:
// evm.Client makes the calls one each, see engine/evm's
// TestBatchesRefused): a chain whose batch fails as a whole (the node is
// down) makes the listing 503, and the next listing is one batch again.
func TestListTokensNodeWithoutBatches(t *testing.T) {
	const n = 10
	e := tokensEnv(t, n)
	e.rich.batchErr = errors.New("connection refused")
	wantError(t, e.req("GET", "/tokens", "/tokens", e.aliceToken, ""), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	e.rich.batchErr = nil
	if got, trips, _ := listCounted(t, e); len(got) != n+1 || trips != 1 || e.rich.batches != 2 {
		t.Fatalf("listing after the failure: %d tokens in %d round trips, %d batches tried; want one batch", len(got), trips, e.rich.batches)
	}
}

// TestListTokensBadToken: a registered token that does not answer as an
// ERC-20 makes the listing 503 naming it, as before (the documented
// behaviour: a read that needs a node fails whole), and is not cached.
func TestListTokensBadToken(t *testing.T) {
	e := tokensEnv(t, 3)
	bad := common.BigToAddress(big.NewInt(0x70001))
	delete(e.rich.tokens, bad)
	rec := e.req("GET", "/tokens", "/tokens", e.aliceToken, "")
	wantError(t, rec, http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	if !strings.Contains(rec.Body.String(), bad.Hex()) {
		t.Fatalf("the error does not name the token: %s", rec.Body.String())
	}
	e.rich.tokens[bad] = true
	if _, _, calls := listCounted(t, e); calls["name"] != 1 {
		t.Fatalf("after the token answers: calls %v; want its name read (it was not cached), the others' not", calls)
	}
}

package http

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// TestAccountViewNonces: GET /accounts/{id} shows the account's nonce
// health on each network, from the store (next nonce, lowest in flight),
// the node (chain nonce) and the engine (stuck since): a node that fails or
// hangs is said in chainError within the deadline and the view stands.
func TestAccountViewNonces(t *testing.T) {
	env := newTestEnv(t)
	path := "/accounts/" + env.aliceAcct.ID
	get := func() nonceView {
		t.Helper()
		rec := env.do("GET", path, env.aliceToken, "")
		wantStatus(t, rec, 200)
		var v struct {
			ID     string      `json:"id"`
			Nonces []nonceView `json:"nonces"`
		}
		decodeData(t, rec, &v)
		if v.ID != env.aliceAcct.ID || len(v.Nonces) != 1 || v.Nonces[0].Network != "dev" {
			t.Fatalf("view %s", rec.Body.String())
		}
		return v.Nonces[0]
	}
	u := func(p *uint64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	want := func(what string, got nonceView, chain, next, lowest, stuck any, inFlight int) {
		t.Helper()
		if u(got.ChainNonce) != chain || u(got.NextNonce) != next || u(got.LowestInFlight) != lowest || u(got.StuckSinceBlock) != stuck || got.InFlight != inFlight {
			t.Fatalf("%s: chain %v next %v lowest %v stuck %v inFlight %d (%q); want %v %v %v %v %d", what,
				u(got.ChainNonce), u(got.NextNonce), u(got.LowestInFlight), u(got.StuckSinceBlock), got.InFlight, got.ChainError,
				chain, next, lowest, stuck, inFlight)
		}
	}

	// The node fails: said, the rest stands.
	v := get()
	want("node fails, nothing stored", v, nil, nil, nil, nil, 0)
	if !strings.Contains(v.ChainError, "network dev is unavailable") {
		t.Fatalf("chainError %q", v.ChainError)
	}
	four := uint64(4)
	env.chain.mu.Lock()
	env.chain.nonce = &four
	env.chain.mu.Unlock()
	v = get()
	want("fresh account", v, uint64(4), uint64(4), nil, nil, 0)
	if v.ChainError != "" {
		t.Fatalf("chainError %q with a node that answers", v.ChainError)
	}

	// Nonces 5 and 6 in flight: a gap below them (chain at 4).
	var txs []*engine.Transaction
	for i := range 2 {
		tx := &engine.Transaction{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1), Owner: env.alice.ID, AccountID: env.aliceAcct.ID,
			Network: "dev", From: env.aliceAcct.Address, ContractID: env.aliceToken20.ID, Method: "transfer", Status: engine.StatusNew, Created: testNow}
		env.store.putTransaction(t, tx)
		n, h, now := uint64(5+i), common.BigToHash(common.Big1), testNow
		h[0] = byte(i)
		tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = &n, 21000, &h, []byte{byte(i)}, &now
		txs = append(txs, tx)
	}
	if err := env.store.MarkSubmittedMany(context.Background(), engine.Fence{}, txs); err != nil {
		t.Fatal(err)
	}
	want("gap, not yet found stuck", get(), uint64(4), uint64(7), uint64(5), nil, 2)
	since := uint64(42)
	env.engine.mu.Lock()
	env.engine.stuck = map[string]engine.NonceHealth{env.aliceAcct.ID + "@dev": {StuckSince: &since}}
	env.engine.mu.Unlock()
	want("stuck", get(), uint64(4), uint64(7), uint64(5), uint64(42), 2)

	// The node hangs: the view answers within the deadline, without the chain's nonce.
	env.server.cfg.ChainTimeout = 200 * time.Millisecond
	env.chain.mu.Lock()
	env.chain.nonceHangs = true
	env.chain.mu.Unlock()
	start := time.Now()
	v = get()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("view took %v with a hanging node", d)
	}
	want("node hangs", v, nil, uint64(7), uint64(5), uint64(42), 2)
	if !strings.Contains(v.ChainError, "did not answer in time") {
		t.Fatalf("chainError %q", v.ChainError)
	}

	// Other views of the account do not carry nonces; bob cannot see alice's.
	rec := env.do("GET", "/accounts/default", env.aliceToken, "")
	wantStatus(t, rec, 200)
	if strings.Contains(rec.Body.String(), "nonces") {
		t.Fatalf("default account view has nonces: %s", rec.Body.String())
	}
	wantError(t, env.do("GET", path, env.bobToken, ""), 404, engine.CodeNotFound, "")
}

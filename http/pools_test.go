package http

import (
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// createPool creates a pool of token's user through the API and returns
// its view.
func (env *testEnv) createPool(token, body string) poolView {
	env.t.Helper()
	rec := env.do("POST", "/pools", token, body)
	if rec.Code != http.StatusCreated {
		env.t.Fatalf("POST /pools %s: %d %s", body, rec.Code, rec.Body.String())
	}
	var v poolView
	decodePoolView(env.t, rec.Body.Bytes(), &v)
	return v
}

// accountCount returns how many accounts owner has.
func (env *testEnv) accountCount(owner string) int {
	env.t.Helper()
	return env.store.count(env.t, `SELECT COUNT(*) FROM accounts WHERE owner = ?`, owner)
}

// TestPoolRoutes: POST creates size new accounts of the caller and tells
// the engine of each and of the pool; GET lists and reads it (with the
// engine's live state merged in), PATCH resizes it both ways, DELETE
// removes it; members stay accounts throughout.
func TestPoolRoutes(t *testing.T) {
	env := newTestEnv(t)
	before := env.accountCount(env.alice.ID)
	p := env.createPool(env.aliceToken, `{"name":"payouts","network":"dev","size":2,"treasury":"`+env.aliceAcct.ID+`"}`)
	if p.Name != "payouts" || p.Network != "dev" || p.Size != 2 || p.Treasury == nil || *p.Treasury != env.aliceAcct.ID ||
		p.Created != "2026-11-21T23:25:31.120Z" || len(p.Members) != 2 || uuid.Validate(p.ID) != nil {
		t.Fatalf("created %+v", p)
	}
	for i, m := range p.Members {
		a, err := env.store.AccountByID(t.Context(), m.Account)
		if err != nil || a.Owner != env.alice.ID || a.Address.Hex() != m.Address || m.Slot != i || a.Default {
			t.Errorf("member %d %+v: account %+v, %v", i, m, a, err)
		}
	}
	if got := env.accountCount(env.alice.ID); got != before+2 {
		t.Errorf("accounts %d, want %d", got, before+2)
	}
	env.engine.mu.Lock()
	created, changed := len(env.engine.created), len(env.engine.poolsChanged)
	env.engine.mu.Unlock()
	if created != 2 || changed != 1 {
		t.Errorf("engine told of %d accounts, %d pools; want 2, 1", created, changed)
	}
	// No treasury: "treasury": null, not absent.
	q := env.createPool(env.aliceToken, `{"name":"second","network":"dev","size":1}`)
	rec := env.do("GET", "/pools/"+q.ID, env.aliceToken, "")
	if !strings.Contains(rec.Body.String(), `"treasury":null`) {
		t.Errorf("no treasury: %s", rec.Body.String())
	}

	// GET /pools: both, oldest first, with the members' loads.
	env.store.memPools.mu.Lock()
	env.store.memPools.loads[p.ID] = []engine.PoolMemberLoad{{AccountID: p.Members[1].Account, Queued: 4, InFlight: 3}}
	env.store.memPools.mu.Unlock()
	var list []poolView
	decodeData(t, env.do("GET", "/pools", env.aliceToken, ""), &list)
	if len(list) != 2 || list[0].ID != p.ID || list[1].ID != q.ID || list[0].Members[1].Queued != 4 || list[0].Members[1].InFlight != 3 {
		t.Errorf("list %+v", list)
	}
	decodeData(t, env.do("GET", "/pools", env.bobToken, ""), &list)
	if len(list) != 0 {
		t.Errorf("bob lists %+v", list)
	}

	// GET /pools/{id}: the engine's status.
	tokenAddr := common.HexToAddress("0xaa").Hex()
	env.engine.mu.Lock()
	env.engine.poolStatus = engine.PoolStatus{TopUps: 5, Short: "treasury holds 0 wei", Members: []engine.PoolMemberStatus{{
		PoolMember: engine.PoolMember{AccountID: p.Members[0].Account}, Balance: big.NewInt(77), Tokens: map[string]*big.Int{tokenAddr: big.NewInt(9)},
		Queued: 1, InFlight: 2, Window: 16, NonceHealth: "ok"}}}
	env.engine.mu.Unlock()
	var got poolView
	decodeData(t, env.do("GET", "/pools/"+p.ID, env.aliceToken, ""), &got)
	m0 := got.Members[0]
	if got.TopUps == nil || *got.TopUps != 5 || got.Short != "treasury holds 0 wei" || m0.Balance == nil || *m0.Balance != "77" ||
		m0.Tokens[tokenAddr] != "9" || m0.Queued != 1 || m0.InFlight != 2 || m0.Window == nil || *m0.Window != 16 || m0.NonceHealth != "ok" {
		t.Errorf("status view %+v", got)
	}
	if m1 := got.Members[1]; m1.Balance != nil || m1.Tokens != nil {
		t.Errorf("member the node did not answer for: %+v", m1)
	}

	// PATCH up then down; the members removed stay accounts.
	decodeData(t, env.do("PATCH", "/pools/"+p.ID, env.aliceToken, `{"size":4}`), &got)
	if got.Size != 4 || len(got.Members) != 4 || got.Members[0].Account != p.Members[0].Account || got.Members[3].Slot != 3 {
		t.Fatalf("resized up %+v", got)
	}
	if n := env.accountCount(env.alice.ID); n != before+5 {
		t.Errorf("accounts %d after growing, want %d", n, before+5)
	}
	decodeData(t, env.do("PATCH", "/pools/"+p.ID, env.aliceToken, `{"size":1}`), &got)
	if got.Size != 1 || len(got.Members) != 1 || got.Members[0].Account != p.Members[0].Account {
		t.Fatalf("resized down %+v", got)
	}
	if n := env.accountCount(env.alice.ID); n != before+5 {
		t.Errorf("accounts %d after shrinking, want %d", n, before+5)
	}

	// DELETE: the pool as it was, then 404; members stay accounts.
	decodeData(t, env.do("DELETE", "/pools/"+p.ID, env.aliceToken, ""), &got)
	if got.ID != p.ID || got.Size != 1 {
		t.Errorf("deleted %+v", got)
	}
	wantError(t, env.do("GET", "/pools/"+p.ID, env.aliceToken, ""), 404, engine.CodeNotFound, "")
	wantError(t, env.do("DELETE", "/pools/"+p.ID, env.aliceToken, ""), 404, engine.CodeNotFound, "")
	if n := env.accountCount(env.alice.ID); n != before+5 {
		t.Errorf("accounts %d after deleting, want %d", n, before+5)
	}
	env.engine.mu.Lock()
	changed = len(env.engine.poolsChanged)
	env.engine.mu.Unlock()
	if changed != 5 { // 2 created, 2 resized, 1 deleted
		t.Errorf("PoolChanged %d times, want 5", changed)
	}
}

// TestPoolBadInput: each bad request of docs/pools.md is a 4xx naming the
// field, and stores nothing (no pool, no account).
func TestPoolBadInput(t *testing.T) {
	env := newTestEnv(t)
	p := env.createPool(env.aliceToken, `{"name":"p","network":"dev","size":2}`)
	bobs := env.createPool(env.bobToken, `{"name":"b","network":"dev","size":1}`)
	rows, pools := env.store.rows(t), env.store.memPools.count()
	body := func(fields string) string { return `{"name":"p","network":"dev",` + fields + `}` }
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     engine.Code
		field                    string
	}{
		{"size 0", "POST", "/pools", body(`"size":0`), 400, engine.CodeInvalidArgument, "size"},
		{"size 257", "POST", "/pools", body(`"size":257`), 400, engine.CodeInvalidArgument, "size"},
		{"negative size", "POST", "/pools", body(`"size":-1`), 400, engine.CodeInvalidArgument, "size"},
		{"fractional size", "POST", "/pools", body(`"size":1.5`), 400, engine.CodeInvalidArgument, "size"},
		{"size as string", "POST", "/pools", body(`"size":"2"`), 400, engine.CodeInvalidArgument, "size"},
		{"no size", "POST", "/pools", body(`"treasury":"` + env.aliceAcct.ID + `"`), 400, engine.CodeInvalidArgument, "size"},
		{"no name", "POST", "/pools", `{"network":"dev","size":1}`, 400, engine.CodeInvalidArgument, "name"},
		{"empty name", "POST", "/pools", `{"name":"","network":"dev","size":1}`, 400, engine.CodeInvalidArgument, "name"},
		{"blank name", "POST", "/pools", `{"name":"  ","network":"dev","size":1}`, 400, engine.CodeInvalidArgument, "name"},
		{"long name", "POST", "/pools", `{"name":"` + strings.Repeat("n", 101) + `","network":"dev","size":1}`, 400, engine.CodeInvalidArgument, "name"},
		{"unknown network", "POST", "/pools", `{"name":"p","network":"moon","size":1}`, 400, engine.CodeInvalidArgument, "network"},
		{"no network", "POST", "/pools", `{"name":"p","size":1}`, 400, engine.CodeInvalidArgument, "network"},
		{"bob's treasury", "POST", "/pools", body(`"size":1,"treasury":"` + env.bobAcct.ID + `"`), 404, engine.CodeNotFound, "treasury"},
		{"unknown treasury", "POST", "/pools", body(`"size":1,"treasury":"` + uuid.NewString() + `"`), 404, engine.CodeNotFound, "treasury"},
		{"treasury not an id", "POST", "/pools", body(`"size":1,"treasury":"x"`), 400, engine.CodeInvalidArgument, "treasury"},
		{"unknown field", "POST", "/pools", body(`"size":1,"sise":2`), 400, engine.CodeInvalidArgument, "sise"},
		{"empty body", "POST", "/pools", "", 400, engine.CodeInvalidJSON, ""},
		{"resize to 0", "PATCH", "/pools/" + p.ID, `{"size":0}`, 400, engine.CodeInvalidArgument, "size"},
		{"resize to 257", "PATCH", "/pools/" + p.ID, `{"size":257}`, 400, engine.CodeInvalidArgument, "size"},
		{"resize without size", "PATCH", "/pools/" + p.ID, `{}`, 400, engine.CodeInvalidArgument, "size"},
		{"resize to 2.5", "PATCH", "/pools/" + p.ID, `{"size":2.5}`, 400, engine.CodeInvalidArgument, "size"},
		{"resize another field", "PATCH", "/pools/" + p.ID, `{"size":3,"name":"x"}`, 400, engine.CodeInvalidArgument, "name"},
		{"get bob's pool", "GET", "/pools/" + bobs.ID, "", 404, engine.CodeNotFound, ""},
		{"resize bob's pool", "PATCH", "/pools/" + bobs.ID, `{"size":3}`, 404, engine.CodeNotFound, ""},
		{"delete bob's pool", "DELETE", "/pools/" + bobs.ID, "", 404, engine.CodeNotFound, ""},
		{"unknown pool", "GET", "/pools/" + uuid.NewString(), "", 404, engine.CodeNotFound, ""},
		{"pool id not a UUID", "GET", "/pools/payouts", "", 404, engine.CodeNotFound, ""},
		{"pools filter not an id", "GET", "/transactions?pool=payouts", "", 400, engine.CodeInvalidArgument, "pool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, env.do(c.method, c.path, env.aliceToken, c.body), c.status, c.code, c.field)
		})
	}
	if r, n := env.store.rows(t), env.store.memPools.count(); r != rows || n != pools {
		t.Errorf("stored: rows %d → %d, pools %d → %d", rows, r, pools, n)
	}
	var got poolView
	decodeData(t, env.do("GET", "/pools/"+bobs.ID, env.bobToken, ""), &got)
	if got.Size != 1 || len(got.Members) != 1 {
		t.Errorf("bob's pool changed: %+v", got)
	}
}

// TestPoolOverAccountCap: a pool whose members would pass the tree's
// account cap is refused as POST /accounts is, storing nothing; a pool
// without treasury asks the faucet for each member, one with a treasury
// does not.
func TestPoolOverAccountCap(t *testing.T) {
	env := newQuotaEnv(t, RateLimitConfig{PerSecond: 1 << 20, PerHour: 1 << 20},
		QuotaConfig{MaxAccounts: 4, FaucetPerOwner: 2, FaucetPeriod: time.Hour, FaucetNetworks: []string{"dev"}})
	_, tok := env.user(env.opToken, true) // 1 account
	rec := env.do("POST", "/pools", tok, `{"name":"p","network":"dev","size":4}`)
	wantError(t, rec, http.StatusForbidden, engine.CodeForbidden, "")
	var accts []accountView
	decodeData(t, env.do("GET", "/accounts", tok, ""), &accts)
	if len(accts) != 1 {
		t.Errorf("accounts after the refusal: %d, want 1", len(accts))
	}
	var list []poolView
	decodeData(t, env.do("GET", "/pools", tok, ""), &list)
	if len(list) != 0 {
		t.Errorf("pools after the refusal: %+v", list)
	}

	env.engine.mu.Lock()
	env.engine.created = nil
	env.engine.mu.Unlock()
	// The user's account took 1 grant of 2: the first member is funded,
	// the second refused.
	rec = env.do("POST", "/pools", tok, `{"name":"p","network":"dev","size":2}`)
	wantStatus(t, rec, http.StatusCreated)
	var p poolView
	decodePoolView(t, rec.Body.Bytes(), &p)
	rec = env.do("PATCH", "/pools/"+p.ID, tok, `{"size":3}`)
	wantStatus(t, rec, http.StatusOK) // 4 accounts: the cap
	env.engine.mu.Lock()
	var granted []bool
	for _, a := range env.engine.created {
		granted = append(granted, len(a.Faucet) == 1 && a.Faucet[0].Granted && a.Faucet[0].Network == "dev")
	}
	env.engine.mu.Unlock()
	if len(granted) != 3 || !granted[0] || granted[1] || granted[2] {
		t.Errorf("faucet grants of the members: %v, want [true false false]", granted)
	}
	wantError(t, env.do("PATCH", "/pools/"+p.ID, tok, `{"size":4}`), http.StatusForbidden, engine.CodeForbidden, "")

	// With a treasury, no faucet.
	_, tok2 := env.user(env.opToken, true)
	var me []accountView
	decodeData(t, env.do("GET", "/accounts", tok2, ""), &me)
	env.engine.mu.Lock()
	env.engine.created = nil
	env.engine.mu.Unlock()
	wantStatus(t, env.do("POST", "/pools", tok2, `{"name":"t","network":"dev","size":1,"treasury":"`+me[0].ID+`"}`), http.StatusCreated)
	env.engine.mu.Lock()
	defer env.engine.mu.Unlock()
	if len(env.engine.created) != 1 || env.engine.created[0].Faucet != nil {
		t.Errorf("member of a pool with a treasury: %+v", env.engine.created)
	}
}

// decodePoolView decodes {"data": pool}.
func decodePoolView(t testing.TB, body []byte, v *poolView) {
	t.Helper()
	var rec struct {
		Data *poolView `json:"data"`
	}
	rec.Data = v
	if err := json.Unmarshal(body, &rec); err != nil || rec.Data == nil {
		t.Fatalf("pool body %s: %v", body, err)
	}
}

package http

import (
	"bytes"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// quotaEnv is a server on the SQLite store (the caps and the faucet grants
// are the store's) with one operator, on a clock the test moves.
type quotaEnv struct {
	t       *testing.T
	server  *Server
	engine  *fakeEngine
	clock   *stepClock
	opToken string
}

func newQuotaEnv(t *testing.T, rl RateLimitConfig, q QuotaConfig) *quotaEnv {
	t.Helper()
	store := openSQLite(t)
	sealer, err := keystore.NewKeySealer(bytes.Repeat([]byte{7}, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	clk := &stepClock{t: testNow.Truncate(time.Second).Add(100 * time.Millisecond)}
	token, hash, err := keystore.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	op := &engine.User{ID: uuid.NewString(), Operator: true, Created: clk.Now()}
	if op.CallbackSecret, err = sealer.SealCallbackSecret(op.ID, "s"); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateUser(t.Context(), op, hash, nil); err != nil {
		t.Fatal(err)
	}
	env := &quotaEnv{t: t, engine: &fakeEngine{}, clock: clk, opToken: token}
	env.server = newTestServer(t, Config{RateLimit: rl, Quotas: q}, Deps{Store: store, Sealer: sealer, Engine: env.engine, Clock: clk,
		Networks: map[string]*engine.Network{"dev": {Name: "dev", ChainID: big.NewInt(1337), Chain: &fakeChain{}}}})
	return env
}

func (env *quotaEnv) do(method, path, token, body string) *httptest.ResponseRecorder {
	env.t.Helper()
	return serveOn(env.t, env.server, method, path, token, body)
}

// user creates a user with a token (and an account when account) as the
// holder of token.
func (env *quotaEnv) user(token string, account bool) (userView, string) {
	env.t.Helper()
	rec := env.do("POST", "/users", token, jsonString(env.t, map[string]bool{"auth": true, "account": account}))
	wantStatus(env.t, rec, http.StatusCreated)
	var u userView
	decodeData(env.t, rec, &u)
	return u, u.Token
}

// TestBudgetSharedByTree: the users a user creates share its rate limits;
// a user the operator creates, and one with an override, have their own.
func TestBudgetSharedByTree(t *testing.T) {
	env := newQuotaEnv(t, RateLimitConfig{PerSecond: 10, PerHour: 1000}, QuotaConfig{})
	a, tokA := env.user(env.opToken, false)
	env.clock.advance(2 * time.Second) // past any window of the previous requests
	// A creates B (one request of A's); B creates C: A, B and C share A's
	// 10 per second.
	_, tokB := env.user(tokA, false)
	c, tokC := env.user(tokB, false)
	env.clock.advance(2 * time.Second) // past any window of the previous requests
	tokens := []string{tokA, tokB, tokC}
	for i := range 10 {
		wantStatus(t, env.do("GET", "/accounts", tokens[i%3], ""), http.StatusOK)
	}
	for _, tok := range tokens {
		rec := env.do("GET", "/accounts", tok, "")
		wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	}

	// A user the operator creates is a root of its own.
	_, tokD := env.user(env.opToken, false)
	wantStatus(t, env.do("GET", "/accounts", tokD, ""), http.StatusOK)

	// An override gives C its own budget: 3 per second, A's tree still spent.
	wantStatus(t, env.do("PUT", "/users/"+c.ID+"/limits", env.opToken, `{"perSecond":3,"perHour":100}`), http.StatusOK)
	for range 3 {
		wantStatus(t, env.do("GET", "/accounts", tokC, ""), http.StatusOK)
	}
	wantError(t, env.do("GET", "/accounts", tokC, ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantError(t, env.do("GET", "/accounts", tokB, ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")

	// An override on the root applies to its whole tree but C (the cached
	// users of the tree see it at once).
	env.clock.advance(2 * time.Second) // past any window of the previous requests
	wantStatus(t, env.do("GET", "/accounts", tokB, ""), http.StatusOK)
	wantStatus(t, env.do("PUT", "/users/"+a.ID+"/limits", env.opToken, `{"perSecond":2,"perHour":100}`), http.StatusOK)
	wantStatus(t, env.do("GET", "/accounts", tokA, ""), http.StatusOK)
	wantError(t, env.do("GET", "/accounts", tokB, ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantStatus(t, env.do("GET", "/accounts", tokC, ""), http.StatusOK)
}

// TestQuotaCaps: a tree's users and accounts stop at the caps with 403
// forbidden naming the cap; nothing is stored; operators are exempt.
func TestQuotaCaps(t *testing.T) {
	env := newQuotaEnv(t, RateLimitConfig{PerSecond: 1 << 20, PerHour: 1 << 20}, QuotaConfig{MaxUsers: 3, MaxAccounts: 4})
	_, tokA := env.user(env.opToken, true) // tree A: 1 user, 1 account
	_, tokB := env.user(tokA, true)        // 2 users, 2 accounts
	_, tokC := env.user(tokB, false)       // 3 users
	rec := env.do("POST", "/users", tokC, `{"auth":true,"account":true}`)
	wantError(t, rec, http.StatusForbidden, engine.CodeForbidden, "")
	if !strings.Contains(rec.Body.String(), "at most 3 users per owner") || !strings.Contains(rec.Body.String(), "operator") {
		t.Errorf("refusal = %s", rec.Body.String())
	}
	for range 2 {
		wantStatus(t, env.do("POST", "/accounts", tokC, ""), http.StatusCreated)
	}
	rec = env.do("POST", "/accounts", tokB, "")
	wantError(t, rec, http.StatusForbidden, engine.CodeForbidden, "")
	if !strings.Contains(rec.Body.String(), "at most 4 accounts per owner") {
		t.Errorf("refusal = %s", rec.Body.String())
	}
	// Nothing was stored: B still has its one account, C its two.
	for tok, want := range map[string]int{tokB: 1, tokC: 2} {
		var accts []accountView
		decodeData(t, env.do("GET", "/accounts", tok, ""), &accts)
		if len(accts) != want {
			t.Errorf("accounts = %d, want %d", len(accts), want)
		}
	}
	// Another tree has its own caps; the operator has none.
	_, tokD := env.user(env.opToken, true)
	wantStatus(t, env.do("POST", "/accounts", tokD, ""), http.StatusCreated)
	for range 5 {
		wantStatus(t, env.do("POST", "/accounts", env.opToken, ""), http.StatusCreated)
		env.user(env.opToken, false)
	}
}

// TestFaucetBudget: the faucet funds a tree's new accounts up to its
// budget per period, says so in the 201 when it refuses, and funds again
// in the next period.
func TestFaucetBudget(t *testing.T) {
	env := newQuotaEnv(t, RateLimitConfig{PerSecond: 1 << 20, PerHour: 1 << 20},
		QuotaConfig{FaucetPerOwner: 2, FaucetPeriod: time.Hour, FaucetNetworks: []string{"dev"}})
	faucetOf := func(rec *httptest.ResponseRecorder) []faucetView {
		t.Helper()
		wantStatus(t, rec, http.StatusCreated)
		var raw struct {
			Data struct {
				Faucet  []faucetView `json:"faucet"`
				Account *struct {
					Faucet []faucetView `json:"faucet"`
				} `json:"account"`
			} `json:"data"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		if raw.Data.Account != nil {
			return raw.Data.Account.Faucet
		}
		return raw.Data.Faucet
	}
	want := func(got []faucetView, status string) {
		t.Helper()
		if len(got) != 1 || got[0].Network != "dev" || got[0].Status != status {
			t.Fatalf("faucet = %+v, want dev %s", got, status)
		}
		if status == "refused" && !strings.Contains(got[0].Message, "faucet budget reached: 2 new accounts per 1h") {
			t.Errorf("refusal message = %q", got[0].Message)
		}
	}
	granted := func() []bool {
		env.engine.mu.Lock()
		defer env.engine.mu.Unlock()
		out := make([]bool, len(env.engine.created))
		for i, a := range env.engine.created {
			out[i] = len(a.Faucet) == 1 && a.Faucet[0].Granted
		}
		return out
	}

	rec := env.do("POST", "/users", env.opToken, `{"auth":true,"account":true}`)
	want(faucetOf(rec), "funding") // A's first
	var a userView
	decodeData(t, rec, &a)
	want(faucetOf(env.do("POST", "/accounts", a.Token, "")), "funding") // A's second
	// The budget is the tree's: B, created by A, gets none.
	rec = env.do("POST", "/users", a.Token, `{"auth":true,"account":true}`)
	want(faucetOf(rec), "refused")
	var b userView
	decodeData(t, rec, &b)
	want(faucetOf(env.do("POST", "/accounts", b.Token, "")), "refused")
	// Another tree has its own budget; the operator's accounts are funded.
	want(faucetOf(env.do("POST", "/accounts", env.opToken, "")), "funding")
	if got := granted(); !slices.Equal(got, []bool{true, true, false, false, true}) {
		t.Errorf("granted = %v", got)
	}
	// Other responses carry no faucet field.
	rec = env.do("GET", "/accounts/default", a.Token, "")
	wantStatus(t, rec, http.StatusOK)
	if strings.Contains(rec.Body.String(), "faucet") {
		t.Errorf("GET names the faucet: %s", rec.Body.String())
	}
	// The next period funds again.
	env.clock.advance(time.Hour + time.Second)
	want(faucetOf(env.do("POST", "/accounts", b.Token, "")), "funding")
}

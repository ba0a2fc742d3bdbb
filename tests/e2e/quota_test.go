package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestQuotasAbuse tries to multiply a user's budget by creating users and
// to drain the dev chain's faucet: the tree's caps refuse with 403, the
// faucet funds the tree's first new account and refuses the next (which
// gets no ETH), only an operator creates ownerless users, and a user and
// the user it creates share one rate budget.
func TestQuotasAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	s := startService(t, dir, "TXENGINE_QUOTA_FAUCET_PER_OWNER=1", "TXENGINE_QUOTA_MAX_USERS=2", "TXENGINE_QUOTA_MAX_ACCOUNTS=3",
		"TXENGINE_RATE_LIMIT_PER_SECOND=1000", "TXENGINE_RATE_LIMIT_PER_HOUR=100")
	op := s.Token

	faucetOf := func(acct map[string]any) (status, message string) {
		t.Helper()
		fs, _ := acct["faucet"].([]any)
		if len(fs) != 1 {
			t.Fatalf("faucet = %v, want one answer (dev)", acct["faucet"])
		}
		f := fs[0].(map[string]any)
		if f["network"] != "dev" {
			t.Fatalf("faucet answer %v, want network dev", f)
		}
		m, _ := f["message"].(string)
		return f["status"].(string), m
	}

	// The operator creates A: A's tree gets its first faucet grant.
	a := s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true}).(map[string]any)
	aTok := a["token"].(string)
	aAcct := a["account"].(map[string]any)
	if st, _ := faucetOf(aAcct); st != "funding" {
		t.Fatalf("A's account: faucet %s, want funding", st)
	}
	// A creates B with an account: the tree's faucet budget (1) is spent.
	b := s.must(201, "POST", "/users", aTok, map[string]any{"auth": true, "account": true}).(map[string]any)
	bTok := b["token"].(string)
	bAcct := b["account"].(map[string]any)
	st, msg := faucetOf(bAcct)
	if st != "refused" || !strings.Contains(msg, "faucet budget reached: 1 new accounts per 24h") {
		t.Fatalf("B's account: faucet %s %q, want refused naming the budget", st, msg)
	}
	// More accounts do not drain it either.
	third := s.must(201, "POST", "/accounts", bTok, nil).(map[string]any)
	if st, _ := faucetOf(third); st != "refused" {
		t.Fatalf("third account: faucet %s, want refused", st)
	}
	// Caps: 2 users and 3 accounts per tree.
	rec := s.call("POST", "/users", bTok, map[string]any{"auth": true})
	wantErr(t, rec, 403, "forbidden", "")
	if !strings.Contains(string(rec.Raw), "at most 2 users per owner") {
		t.Errorf("users cap refusal: %s", string(rec.Raw))
	}
	rec = s.call("POST", "/accounts", aTok, nil)
	wantErr(t, rec, 403, "forbidden", "")
	if !strings.Contains(string(rec.Raw), "at most 3 accounts per owner") {
		t.Errorf("accounts cap refusal: %s", string(rec.Raw))
	}
	// Ownerless users: an operator's right only.
	rec = s.call("POST", "/users", aTok, map[string]any{"ownerless": true, "auth": true})
	wantErr(t, rec, 403, "forbidden", "")
	s.must(201, "POST", "/users", op, map[string]any{"ownerless": true})

	// A's account gets ETH; B's does not, blocks later.
	eventually(t, 30*time.Second, "faucet funds A", func() bool {
		return s.must(200, "GET", "/accounts/"+aAcct["id"].(string)+"/balance", aTok, nil).(string) != "0"
	})
	time.Sleep(3 * time.Second) // dev blocks every second: a transfer sent would be mined
	for _, acct := range []struct{ id, tok string }{{bAcct["id"].(string), bTok}, {third["id"].(string), bTok}} {
		if got := s.must(200, "GET", "/accounts/"+acct.id+"/balance", acct.tok, nil).(string); got != "0" {
			t.Errorf("account %s over the faucet budget has balance %s", acct.id, got)
		}
	}

	// R creates S (one request of R's): R and S together get the hour's
	// 100 requests, not 200; a user the operator creates has its own.
	r := s.must(201, "POST", "/users", op, map[string]any{"auth": true}).(map[string]any)["token"].(string)
	sTok := s.must(201, "POST", "/users", r, map[string]any{"auth": true}).(map[string]any)["token"].(string)
	allowed := 0
	for i := 0; i < 140; i++ {
		tok := []string{r, sTok}[i%2]
		switch res := s.call("GET", "/users/me", tok, nil); res.Status {
		case 200:
			allowed++
		case 429:
		default:
			t.Fatalf("GET /users/me: %d %s", res.Status, res.Raw)
		}
	}
	if allowed != 99 {
		t.Errorf("R and S together were allowed %d requests after R's POST /users, want 99 (100 per hour for the tree)", allowed)
	}
	other := s.must(201, "POST", "/users", op, map[string]any{"auth": true}).(map[string]any)["token"].(string)
	s.must(200, "GET", "/users/me", other, nil)
}

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestUsersAndAccounts drives users (me, tokens, limits, ownerless), the
// default account switch and ETH balances through the real binary, on the
// embedded dev chain and on geth.
func TestUsersAndAccounts(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range apiBackends() {
		t.Run(b.name, func(t *testing.T) { testUsersAndAccounts(t, b) })
	}
}

func testUsersAndAccounts(t *testing.T, b backend) {
	dir := t.TempDir()
	s := b.setup(t, dir).start(t, dir)

	me := s.must(200, "GET", "/users/me", s.Token, nil).(map[string]any)
	if me["operator"] != true || me["owner"] != nil || len(me["callbackSecret"].(string)) < 32 || !timestampRE.MatchString(me["created"].(string)) {
		t.Fatalf("operator me: %v", me)
	}
	opID := me["id"].(string)

	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	uid, utok := user["id"].(string), user["token"].(string)
	ume := s.must(200, "GET", "/users/me", utok, nil).(map[string]any)
	if ume["id"] != uid || ume["owner"] != opID || ume["operator"] != false {
		t.Fatalf("user me: %v", ume)
	}

	// Tokens: for yourself and for a user you own; others are not found.
	tok2 := s.must(201, "POST", "/users/"+uid+"/tokens", s.Token, nil).(map[string]any)["token"].(string)
	if s.must(200, "GET", "/users/me", tok2, nil).(map[string]any)["id"] != uid {
		t.Fatal("token issued by the owner does not name the user")
	}
	tok3 := s.must(201, "POST", "/users/"+uid+"/tokens", utok, map[string]any{}).(map[string]any)["token"].(string)
	if s.must(200, "GET", "/users/me", tok3, nil).(map[string]any)["id"] != uid {
		t.Fatal("self-issued token does not name the user")
	}
	wantErr(t, s.call("POST", "/users/"+opID+"/tokens", utok, nil), 404, "not_found", "")
	ownerless := s.must(201, "POST", "/users", s.Token, map[string]any{"ownerless": true, "auth": true}).(map[string]any)
	if ownerless["owner"] != nil {
		t.Fatalf("ownerless user has owner %v", ownerless["owner"])
	}
	wantErr(t, s.call("POST", "/users/"+ownerless["id"].(string)+"/tokens", s.Token, nil), 404, "not_found", "")
	olMe := s.must(200, "GET", "/users/me", ownerless["token"].(string), nil).(map[string]any)
	if olMe["owner"] != nil {
		t.Fatalf("ownerless me: %v", olMe)
	}

	// Limits: operator only.
	wantErr(t, s.call("PUT", "/users/"+uid+"/limits", utok, map[string]any{"perSecond": 5, "perHour": 100}), 403, "forbidden", "")
	wantErr(t, s.call("PUT", "/users/"+uid+"/limits", s.Token, map[string]any{"perSecond": 0, "perHour": 100}), 400, "invalid_argument", "perSecond")
	wantErr(t, s.call("PUT", "/users/"+uid+"/limits", s.Token, `{"perSecond":5}`), 400, "invalid_argument", "perHour")
	lim := s.must(200, "PUT", "/users/"+uid+"/limits", s.Token, map[string]any{"perSecond": 1000, "perHour": 7200}).(map[string]any)
	if lim["perSecond"] != float64(1000) || lim["perHour"] != float64(7200) {
		t.Fatalf("limits: %v", lim)
	}
	if l := s.must(200, "GET", "/users/me", utok, nil).(map[string]any)["limits"].(map[string]any); l["perHour"] != float64(7200) {
		t.Fatalf("limits in me: %v", l)
	}

	// Default account switch.
	first := s.must(200, "GET", "/accounts/default", utok, nil).(map[string]any)
	second := s.must(201, "POST", "/accounts", utok, nil).(map[string]any)
	got := s.must(200, "PUT", "/accounts/default", utok, map[string]any{"account": second["id"]}).(map[string]any)
	if got["id"] != second["id"] || got["defaultAccount"] != true {
		t.Fatalf("PUT default: %v", got)
	}
	if s.must(200, "GET", "/accounts/default", utok, nil).(map[string]any)["id"] != second["id"] {
		t.Fatal("default did not switch")
	}
	if s.must(200, "GET", "/accounts/"+first["id"].(string), utok, nil).(map[string]any)["defaultAccount"] != false {
		t.Fatal("old default is still default")
	}
	opDefault := s.must(200, "GET", "/accounts/default", s.Token, nil).(map[string]any)
	wantErr(t, s.call("PUT", "/accounts/default", utok, map[string]any{"account": opDefault["id"]}), 404, "not_found", "account")
	wantErr(t, s.call("PUT", "/accounts/default", utok, `{}`), 400, "invalid_argument", "account")
	wantErr(t, s.call("PUT", "/accounts/default", utok, `{"account":1}`), 400, "invalid_argument", "account")
	if s.must(200, "GET", "/accounts/default", utok, nil).(map[string]any)["id"] != second["id"] {
		t.Fatal("a refused PUT changed the default")
	}

	// ETH balances: the faucet funds new accounts.
	eventually(t, 30*time.Second, "faucet funds the new default account", func() bool {
		return bigOf(t, s.must(200, "GET", "/accounts/default/balance", utok, nil)).Sign() > 0
	})
	b1 := bigOf(t, s.must(200, "GET", "/accounts/"+second["id"].(string)+"/balance?network="+b.network, utok, nil))
	if b1.Sign() <= 0 {
		t.Fatalf("balance %s", b1)
	}
	if bigOf(t, s.must(200, "GET", "/accounts/default/balance?network="+b.network, s.Token, nil)).Sign() <= 0 {
		t.Fatal("operator has no ETH")
	}
	wantErr(t, s.call("GET", "/accounts/default/balance?network=nope", utok, nil), 400, "invalid_argument", "network")
	wantErr(t, s.call("GET", "/accounts/"+opDefault["id"].(string)+"/balance", utok, nil), 404, "not_found", "")
	if r := s.call("GET", "/users/me", "", nil); r.Status != 401 || !strings.Contains(string(r.Raw), "unauthenticated") {
		t.Fatalf("no token: %d %s", r.Status, r.Raw)
	}
}

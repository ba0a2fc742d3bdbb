package http

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/txengine/txengine/engine"
)

func TestListTokens(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/tokens", env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var got []tokenView
	decodeData(t, rec, &got)
	if len(got) != 1 {
		t.Fatalf("tokens = %+v (only alice's erc20, not her erc721 nor bob's)", got)
	}
	want := tokenView{
		ID: env.aliceToken20.ID, Name: "Demo Token", Network: "dev", Address: env.aliceToken20.Address.Hex(), Type: "erc20",
		Parameters: tokenParameters{Symbol: "DEMO", Decimals: 18, Supply: "1000000000000000000000000"},
	}
	if got[0] != want {
		t.Errorf("token = %+v, want %+v", got[0], want)
	}
	if !strings.Contains(rec.Body.String(), `"decimals":18,`) || !strings.Contains(rec.Body.String(), `"supply":"1000000000000000000000000"`) {
		t.Errorf("parameter encoding: %s", rec.Body.String())
	}

	for _, tt := range []struct {
		query string
		n     int
	}{
		{"?network=dev", 1},
		{"?network=rinkeby", 0},
		{"?name=demo%20token", 1},
		{"?name=Demo", 0},
		{"?symbol=demo", 1},
		{"?symbol=DEM", 0},
		{"?network=dev&name=Demo%20Token&symbol=DEMO", 1},
	} {
		rec := env.do("GET", "/tokens"+tt.query, env.aliceToken, "")
		wantStatus(t, rec, http.StatusOK)
		var got []tokenView
		decodeData(t, rec, &got)
		if len(got) != tt.n {
			t.Errorf("%s: %d tokens, want %d", tt.query, len(got), tt.n)
		}
	}

	env.chain.callErr = errors.New("connection refused")
	wantError(t, env.do("GET", "/tokens", env.aliceToken, ""), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
}

func TestGetToken(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/tokens/"+env.aliceToken20.ID, env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var got tokenView
	decodeData(t, rec, &got)
	if got.ID != env.aliceToken20.ID || got.Parameters.Symbol != "DEMO" {
		t.Errorf("token = %+v", got)
	}
	for _, id := range []string{env.bobToken20.ID, env.aliceNFT.ID, "00000000-0000-4000-8000-000000000000", "nope"} {
		wantError(t, env.do("GET", "/tokens/"+id, env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	}
	env.chain.callErr = errors.New("connection refused")
	wantError(t, env.do("GET", "/tokens/"+env.aliceToken20.ID, env.aliceToken, ""), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
}

func TestTokenBalances(t *testing.T) {
	env := newTestEnv(t)
	base := "/tokens/" + env.aliceToken20.ID + "/balances/"

	rec := env.do("GET", base+"default", env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	if strings.TrimSpace(rec.Body.String()) != `{"data":"12345"}` {
		t.Errorf("default balance = %s", rec.Body.String())
	}
	addr := env.aliceAcct.Address.Hex()
	for _, a := range []string{addr, strings.ToLower(addr), "0x" + strings.ToUpper(addr[2:])} {
		rec = env.do("GET", base+a, env.aliceToken, "")
		wantStatus(t, rec, http.StatusOK)
		if strings.TrimSpace(rec.Body.String()) != `{"data":"12345"}` {
			t.Errorf("balance of %s = %s", a, rec.Body.String())
		}
	}
	rec = env.do("GET", base+env.bobAcct.Address.Hex(), env.aliceToken, "")
	if strings.TrimSpace(rec.Body.String()) != `{"data":"0"}` {
		t.Errorf("zero balance = %s", rec.Body.String())
	}

	for _, bad := range []string{"0x123", "zz", "0xZZ00000000000000000000000000000000000000", wrongChecksum(addr), strings.TrimPrefix(strings.ToLower(addr), "0x")} {
		wantError(t, env.do("GET", base+bad, env.aliceToken, ""), http.StatusBadRequest, engine.CodeInvalidArgument, "address")
	}
	wantError(t, env.do("GET", "/tokens/"+env.bobToken20.ID+"/balances/default", env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	wantError(t, env.do("GET", "/tokens/"+env.bobToken20.ID+"/balances/"+addr, env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")

	// A user without a default account.
	rec = env.do("POST", "/users", env.aliceToken, `{"auth":true}`)
	var u userView
	decodeData(t, rec, &u)
	wantError(t, env.do("GET", "/tokens/"+env.aliceToken20.ID+"/balances/default", u.Token, ""), http.StatusNotFound, engine.CodeNotFound, "")

	env.chain.callErr = errors.New("connection refused")
	wantError(t, env.do("GET", base+"default", env.aliceToken, ""), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
}

// wrongChecksum flips the case of the first letter of a checksummed address.
func wrongChecksum(addr string) string {
	b := []byte(addr)
	for i := 2; i < len(b); i++ {
		switch {
		case b[i] >= 'a' && b[i] <= 'f':
			b[i] -= 'a' - 'A'
			return string(b)
		case b[i] >= 'A' && b[i] <= 'F':
			b[i] += 'a' - 'A'
			return string(b)
		}
	}
	panic("address without letters")
}

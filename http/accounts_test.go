package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

func TestListAccounts(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/accounts", env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var got []accountView
	decodeData(t, rec, &got)
	if len(got) != 1 || got[0].ID != env.aliceAcct.ID || !got[0].DefaultAccount || got[0].Owner != env.alice.ID {
		t.Fatalf("accounts = %+v", got)
	}
	if got[0].Address != env.aliceAcct.Address.Hex() || got[0].Created != "2026-11-21T23:25:31.120Z" {
		t.Errorf("account = %+v", got[0])
	}
	if strings.Contains(rec.Body.String(), "ncrypted") || strings.Contains(rec.Body.String(), "key") {
		t.Errorf("key material in %s", rec.Body.String())
	}
}

func TestCreateAccount(t *testing.T) {
	for _, body := range []string{"", "{}", " { } \n"} {
		env := newTestEnv(t)
		rec := env.do("POST", "/accounts", env.aliceToken, body)
		wantStatus(t, rec, http.StatusCreated)
		var a accountView
		decodeData(t, rec, &a)
		if a.DefaultAccount || a.Owner != env.alice.ID || !common.IsHexAddress(a.Address) || a.Address != common.HexToAddress(a.Address).Hex() {
			t.Errorf("body %q: account = %+v", body, a)
		}
		stored, err := env.store.AccountByID(t.Context(), a.ID)
		if err != nil || stored.Default || len(stored.EncryptedKey) == 0 {
			t.Fatalf("stored = %+v, %v", stored, err)
		}
		if len(env.engine.created) != 1 || env.engine.created[0].ID != a.ID {
			t.Errorf("AccountCreated calls = %v", env.engine.created)
		}
		// The default account did not change.
		def := env.do("GET", "/accounts/default", env.aliceToken, "")
		var d accountView
		decodeData(t, def, &d)
		if d.ID != env.aliceAcct.ID {
			t.Errorf("default changed to %s", d.ID)
		}
	}
}

func TestCreateAccountBadBody(t *testing.T) {
	env := newTestEnv(t)
	before := env.store.rows(t)
	wantError(t, env.do("POST", "/accounts", env.aliceToken, `{"network":"dev"}`), http.StatusBadRequest, engine.CodeInvalidArgument, "network")
	wantError(t, env.do("POST", "/accounts", env.aliceToken, `{`), http.StatusBadRequest, engine.CodeInvalidJSON, "")
	wantError(t, env.do("POST", "/accounts", env.aliceToken, `[]`), http.StatusBadRequest, engine.CodeInvalidArgument, "")
	if env.store.rows(t) != before || len(env.engine.created) != 0 {
		t.Error("something was stored")
	}
}

func TestGetAccount(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/accounts/"+env.aliceAcct.ID, env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var a accountView
	decodeData(t, rec, &a)
	if a.ID != env.aliceAcct.ID {
		t.Errorf("account = %+v", a)
	}
	// Upper-case UUIDs name the same account.
	wantStatus(t, env.do("GET", "/accounts/"+strings.ToUpper(env.aliceAcct.ID), env.aliceToken, ""), http.StatusOK)

	for _, id := range []string{
		env.bobAcct.ID,                         // another user's
		"6f1c2a4e-0000-4000-8000-000000000000", // nobody's
		"not-a-uuid", "1", "%27%20OR%201%3D1",  // not ids
		strings.ReplaceAll(env.aliceAcct.ID, "-", ""), // not canonical
	} {
		wantError(t, env.do("GET", "/accounts/"+id, env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	}
}

func TestDefaultAccount(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/accounts/default", env.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	var a accountView
	decodeData(t, rec, &a)
	if a.ID != env.bobAcct.ID || !a.DefaultAccount {
		t.Errorf("default = %+v", a)
	}

	// A user created without an account has no default account.
	rec = env.do("POST", "/users", env.aliceToken, `{"auth":true}`)
	wantStatus(t, rec, http.StatusCreated)
	var u userView
	decodeData(t, rec, &u)
	wantError(t, env.do("GET", "/accounts/default", u.Token, ""), http.StatusNotFound, engine.CodeNotFound, "")
	rec = env.do("GET", "/accounts", u.Token, "")
	wantStatus(t, rec, http.StatusOK)
	if strings.TrimSpace(rec.Body.String()) != `{"data":[]}` {
		t.Errorf("empty list = %s", rec.Body.String())
	}
}

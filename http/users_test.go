package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/txengine/txengine/engine"
)

func TestCreateUser(t *testing.T) {
	env := newTestEnv(t)

	t.Run("auth and account", func(t *testing.T) {
		rec := env.do("POST", "/users", env.aliceToken, `{"auth":true,"account":true}`)
		wantStatus(t, rec, http.StatusCreated)
		var u userView
		decodeData(t, rec, &u)
		if u.Owner == nil || *u.Owner != env.alice.ID || u.Token == "" || u.Account == nil || u.Created != "2026-11-21T23:25:31.120Z" {
			t.Fatalf("user = %+v", u)
		}
		if !u.Account.DefaultAccount || u.Account.Owner != u.ID {
			t.Errorf("account = %+v", u.Account)
		}
		stored, err := env.store.UserByID(t.Context(), u.ID)
		if err != nil || stored.Operator {
			t.Fatalf("stored = %+v, %v", stored, err)
		}
		// The callback secret is stored sealed: 64 hex digits inside.
		if secret, err := env.server.sealer.OpenCallbackSecret(u.ID, stored.CallbackSecret); err != nil || len(secret) != 64 ||
			bytes.Contains(stored.CallbackSecret, []byte(secret)) {
			t.Errorf("stored callback secret %x opens as %q, %v", stored.CallbackSecret, secret, err)
		}
		// The token works and names the new user, whose default account is the new one.
		rec = env.do("GET", "/accounts/default", u.Token, "")
		wantStatus(t, rec, http.StatusOK)
		var a accountView
		decodeData(t, rec, &a)
		if a.ID != u.Account.ID {
			t.Errorf("default account %s, want %s", a.ID, u.Account.ID)
		}
		if n := len(env.engine.created); n != 1 {
			t.Errorf("AccountCreated calls = %d", n)
		}
	})

	t.Run("ownerless is an operator's right", func(t *testing.T) {
		before := env.store.rows(t)
		rec := env.do("POST", "/users", env.bobToken, `{"ownerless":true,"auth":true,"account":true}`)
		wantError(t, rec, http.StatusForbidden, engine.CodeForbidden, "")
		if !strings.Contains(rec.Body.String(), "only an operator may create ownerless users") {
			t.Errorf("body = %s", rec.Body.String())
		}
		if env.store.rows(t) != before {
			t.Error("a refused ownerless user was stored")
		}
	})

	t.Run("ownerless without token", func(t *testing.T) {
		rec := env.do("POST", "/users", env.aliceToken, `{"ownerless":true}`)
		wantStatus(t, rec, http.StatusCreated)
		var raw map[string]json.RawMessage
		decodeData(t, rec, &raw)
		if string(raw["owner"]) != "null" {
			t.Errorf("owner = %s, want null", raw["owner"])
		}
		if _, ok := raw["token"]; ok {
			t.Error("token without auth")
		}
		if _, ok := raw["account"]; ok {
			t.Error("account without account")
		}
	})

	t.Run("no body", func(t *testing.T) {
		rec := env.do("POST", "/users", env.bobToken, "")
		wantStatus(t, rec, http.StatusCreated)
		var u userView
		decodeData(t, rec, &u)
		if u.Owner == nil || *u.Owner != env.bob.ID {
			t.Errorf("user = %+v", u)
		}
	})

	t.Run("bad bodies", func(t *testing.T) {
		before := env.store.rows(t)
		for _, tt := range []struct {
			body  string
			code  engine.Code
			field string
		}{
			{`{"auth":"yes"}`, engine.CodeInvalidArgument, "auth"},
			{`{"account":1}`, engine.CodeInvalidArgument, "account"},
			{`{"ownerless":null,"admin":true}`, engine.CodeInvalidArgument, "admin"},
			{`{"auth":true}x`, engine.CodeInvalidJSON, ""},
			{`"auth"`, engine.CodeInvalidArgument, ""},
			{`{"auth":tru}`, engine.CodeInvalidJSON, ""},
		} {
			wantError(t, env.do("POST", "/users", env.aliceToken, tt.body), http.StatusBadRequest, tt.code, tt.field)
		}
		if env.store.rows(t) != before {
			t.Error("a bad request stored something")
		}
	})
}

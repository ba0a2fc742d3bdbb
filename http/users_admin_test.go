package http

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/txengine/txengine/engine"
)

func TestUsersMeTokensLimits(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/users/me", env.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	var me map[string]json.RawMessage
	decodeData(t, rec, &me)
	if string(me["id"]) != `"`+env.bob.ID+`"` || string(me["operator"]) != "false" || string(me["callbackSecret"]) != `"s"` || string(me["owner"]) != "null" {
		t.Fatalf("me = %s", rec.Body.String())
	}

	// Bob creates a user he owns; an operator creates one that is ownerless.
	var owned, ownerless userView
	decodeData(t, env.do("POST", "/users", env.bobToken, `{}`), &owned)
	decodeData(t, env.do("POST", "/users", env.aliceToken, `{"ownerless":true}`), &ownerless)

	for _, id := range []string{env.bob.ID, owned.ID} {
		rec = env.do("POST", "/users/"+id+"/tokens", env.bobToken, "")
		wantStatus(t, rec, http.StatusCreated)
		var tok tokenCreatedView
		decodeData(t, rec, &tok)
		rec = env.do("GET", "/users/me", tok.Token, "")
		wantStatus(t, rec, http.StatusOK)
		var m meView
		decodeData(t, rec, &m)
		if m.ID != id {
			t.Errorf("new token of %s names %s", id, m.ID)
		}
	}
	before := env.store.rows(t)
	for _, id := range []string{ownerless.ID, env.alice.ID, "00000000-0000-0000-0000-000000000000", "nope"} {
		wantError(t, env.do("POST", "/users/"+id+"/tokens", env.bobToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	}
	wantError(t, env.do("POST", "/users/"+env.bob.ID+"/tokens", env.bobToken, `{"x":1}`), http.StatusBadRequest, engine.CodeInvalidArgument, "x")

	// Limits: operators only.
	path := "/users/" + env.bob.ID + "/limits"
	wantError(t, env.do("PUT", path, env.bobToken, `{"perSecond":5,"perHour":10}`), http.StatusForbidden, engine.CodeForbidden, "")
	for _, tt := range []struct{ body, field string }{
		{`{"perSecond":0,"perHour":10}`, "perSecond"},
		{`{"perSecond":5}`, "perHour"},
		{`{"perSecond":1.5,"perHour":10}`, "perSecond"},
		{`{"perSecond":"5","perHour":10}`, "perSecond"},
		{`{"perSecond":5,"perHour":-1}`, "perHour"},
	} {
		wantError(t, env.do("PUT", path, env.aliceToken, tt.body), http.StatusBadRequest, engine.CodeInvalidArgument, tt.field)
	}
	wantError(t, env.do("PUT", "/users/00000000-0000-0000-0000-000000000000/limits", env.aliceToken, `{"perSecond":5,"perHour":10}`), http.StatusNotFound, engine.CodeNotFound, "")
	if env.store.rows(t) != before {
		t.Fatal("a refused request wrote")
	}
	rec = env.do("PUT", path, env.aliceToken, `{"perSecond":50,"perHour":100000}`)
	wantStatus(t, rec, http.StatusOK)
	if rec.Body.String() != `{"data":{"perSecond":50,"perHour":100000}}` {
		t.Errorf("limits body %s", rec.Body.String())
	}
	rec = env.do("GET", "/users/me", env.bobToken, "")
	var m meView
	decodeData(t, rec, &m)
	if m.Limits == nil || m.Limits.PerSecond != 50 {
		t.Errorf("me after limits: %s", rec.Body.String())
	}
}

func TestPutDefaultAccount(t *testing.T) {
	env := newTestEnv(t)
	var a accountView
	decodeData(t, env.do("POST", "/accounts", env.bobToken, ""), &a)
	var before accountView // read (and cached) before the change
	decodeData(t, env.do("GET", "/accounts/default", env.bobToken, ""), &before)
	if before.ID == a.ID || !before.DefaultAccount {
		t.Fatalf("default before PUT = %+v", before)
	}
	rec := env.do("PUT", "/accounts/default", env.bobToken, `{"account":"`+a.ID+`"}`)
	wantStatus(t, rec, http.StatusOK)
	var got accountView
	decodeData(t, rec, &got)
	if got.ID != a.ID || !got.DefaultAccount {
		t.Fatalf("PUT default = %+v", got)
	}
	decodeData(t, env.do("GET", "/accounts/default", env.bobToken, ""), &got)
	if got.ID != a.ID {
		t.Fatalf("default is %s", got.ID)
	}
	wantError(t, env.do("PUT", "/accounts/default", env.bobToken, `{"account":"`+env.aliceAcct.ID+`"}`), http.StatusNotFound, engine.CodeNotFound, "account")
	wantError(t, env.do("PUT", "/accounts/default", env.bobToken, `{}`), http.StatusBadRequest, engine.CodeInvalidArgument, "account")
	wantError(t, env.do("GET", "/accounts/default/balance?network=nope", env.bobToken, ""), http.StatusBadRequest, engine.CodeInvalidArgument, "network")
}

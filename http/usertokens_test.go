package http

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// newToken gives user id one more token (POST /users/{id}/tokens as
// caller) and returns it.
func (env *testEnv) newToken(t *testing.T, caller, id string) string {
	t.Helper()
	rec := env.do("POST", "/users/"+id+"/tokens", caller, "")
	wantStatus(t, rec, http.StatusCreated)
	var v tokenCreatedView
	decodeData(t, rec, &v)
	return v.Token
}

// tokens lists the tokens of user id as caller.
func (env *testEnv) tokens(t *testing.T, caller, id string) []apiTokenView {
	t.Helper()
	path := "/users/" + id + "/tokens"
	rec := env.do("GET", path, caller, "")
	wantStatus(t, rec, http.StatusOK)
	newOpenAPIValidator(t).check(t, "GET", "/users/{id}/tokens", httptest.NewRequest("GET", path, nil), rec)
	for _, secret := range []string{caller, hex.EncodeToString(keystore.HashToken(caller))} {
		if strings.Contains(rec.Body.String(), secret) {
			t.Fatalf("GET /users/%s/tokens shows a token or its hash: %s", id, rec.Body.String())
		}
	}
	var v []apiTokenView
	decodeData(t, rec, &v)
	return v
}

func TestListUserTokens(t *testing.T) {
	env := newTestEnv(t)
	second := env.newToken(t, env.bobToken, env.bob.ID)
	got := env.tokens(t, env.bobToken, env.bob.ID)
	if len(got) != 2 || !got[0].Current || got[1].Current || got[0].Created != "2026-11-21T23:25:31.120Z" || got[0].Revoked != nil {
		t.Fatalf("bob's tokens = %+v; want 2, the first current", got)
	}
	for _, v := range got {
		if _, err := uuid.Parse(v.ID); err != nil {
			t.Errorf("token id %q: %v", v.ID, err)
		}
	}
	if got := env.tokens(t, second, env.bob.ID); got[0].Current || !got[1].Current {
		t.Errorf("with the second token: %+v; want the second current", got)
	}
	// An operator lists any user's tokens; none is its current one.
	if got := env.tokens(t, env.aliceToken, env.bob.ID); len(got) != 2 || got[0].Current || got[1].Current {
		t.Errorf("bob's tokens seen by the operator = %+v", got)
	}
	// A user lists those of the users it owns, not those of others.
	rec := env.do("POST", "/users", env.bobToken, `{"auth":true}`)
	wantStatus(t, rec, http.StatusCreated)
	var child userView
	decodeData(t, rec, &child)
	if got := env.tokens(t, env.bobToken, child.ID); len(got) != 1 || got[0].Current {
		t.Errorf("child's tokens seen by its owner = %+v", got)
	}
	for _, c := range []struct{ caller, id string }{
		{env.bobToken, env.alice.ID}, {child.Token, env.bob.ID}, {env.bobToken, uuid.NewString()}, {env.aliceToken, uuid.NewString()},
	} {
		wantError(t, env.do("GET", "/users/"+c.id+"/tokens", c.caller, ""), http.StatusNotFound, engine.CodeNotFound, "")
	}
	// A malformed user id is not found, as for every route with a user id.
	wantError(t, env.do("GET", "/users/nope/tokens", env.bobToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	wantError(t, env.do("GET", "/users/"+env.bob.ID+"/tokens", "", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
}

// revoke sends DELETE /users/{id}/tokens/{tokenID} as caller and decodes
// a success.
func (env *testEnv) revoke(t *testing.T, caller, id, tokenID string) apiTokenView {
	t.Helper()
	path := "/users/" + id + "/tokens/" + tokenID
	rec := env.do("DELETE", path, caller, "")
	wantStatus(t, rec, http.StatusOK)
	newOpenAPIValidator(t).check(t, "DELETE", "/users/{id}/tokens/{tokenId}", httptest.NewRequest("DELETE", path, nil), rec)
	var v apiTokenView
	decodeData(t, rec, &v)
	if v.Revoked == nil || *v.Revoked != "2026-11-21T23:25:31.120Z" {
		t.Errorf("revoked = %v, want the time of the revocation", v.Revoked)
	}
	return v
}

func TestRevokeUserToken(t *testing.T) {
	env := newTestEnv(t)
	second := env.newToken(t, env.bobToken, env.bob.ID)
	// Both tokens are in the cache (the test clock never moves: only a
	// drop removes an entry).
	wantStatus(t, env.do("GET", "/users/me", second, ""), http.StatusOK)
	toks := env.tokens(t, env.bobToken, env.bob.ID)

	t.Run("by id, then the very next request is refused", func(t *testing.T) {
		v := env.revoke(t, env.bobToken, env.bob.ID, toks[1].ID)
		if v.ID != toks[1].ID || v.Current {
			t.Errorf("answer = %+v, want token %s, not current", v, toks[1].ID)
		}
		wantError(t, env.do("GET", "/users/me", second, ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
		wantStatus(t, env.do("GET", "/users/me", env.bobToken, ""), http.StatusOK)
		wantError(t, env.do("DELETE", "/users/"+env.bob.ID+"/tokens/"+toks[1].ID, env.bobToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	})

	t.Run("bad input", func(t *testing.T) {
		aliceToks := env.tokens(t, env.aliceToken, env.alice.ID)
		api := newOpenAPIValidator(t)
		for _, c := range []struct {
			path   string
			status int
			code   engine.Code
			field  string
		}{
			{"/users/" + env.bob.ID + "/tokens/" + aliceToks[0].ID, http.StatusNotFound, engine.CodeNotFound, ""},   // another user's token
			{"/users/" + env.alice.ID + "/tokens/" + aliceToks[0].ID, http.StatusNotFound, engine.CodeNotFound, ""}, // a user bob cannot see
			{"/users/" + env.alice.ID + "/tokens/current", http.StatusNotFound, engine.CodeNotFound, ""},
			{"/users/" + env.bob.ID + "/tokens/" + uuid.NewString(), http.StatusNotFound, engine.CodeNotFound, ""},
			{"/users/" + env.bob.ID + "/tokens/nope", http.StatusBadRequest, engine.CodeInvalidArgument, "tokenId"},
			{"/users/" + env.bob.ID + "/tokens/" + strings.Repeat("z", 36), http.StatusBadRequest, engine.CodeInvalidArgument, "tokenId"},
			{"/users/nope/tokens/current", http.StatusNotFound, engine.CodeNotFound, ""},
		} {
			rec := env.do("DELETE", c.path, env.bobToken, "")
			wantError(t, rec, c.status, c.code, c.field)
			api.check(t, "DELETE", "/users/{id}/tokens/{tokenId}", httptest.NewRequest("DELETE", c.path, nil), rec)
		}
		wantStatus(t, env.do("GET", "/users/me", env.aliceToken, ""), http.StatusOK)
		// The operator's current token is its own, not bob's.
		wantError(t, env.do("DELETE", "/users/"+env.bob.ID+"/tokens/current", env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	})

	t.Run("the owner and an operator revoke others' tokens", func(t *testing.T) {
		rec := env.do("POST", "/users", env.bobToken, `{"auth":true}`)
		wantStatus(t, rec, http.StatusCreated)
		var child userView
		decodeData(t, rec, &child)
		wantStatus(t, env.do("GET", "/users/me", child.Token, ""), http.StatusOK)
		childTok := env.tokens(t, env.bobToken, child.ID)[0]
		// The child cannot touch its owner's tokens.
		wantError(t, env.do("DELETE", "/users/"+env.bob.ID+"/tokens/"+toks[0].ID, child.Token, ""), http.StatusNotFound, engine.CodeNotFound, "")
		env.revoke(t, env.bobToken, child.ID, childTok.ID)
		wantError(t, env.do("GET", "/users/me", child.Token, ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")

		third := env.newToken(t, env.bobToken, env.bob.ID)
		wantStatus(t, env.do("GET", "/users/me", third, ""), http.StatusOK)
		toks := env.tokens(t, env.aliceToken, env.bob.ID)
		env.revoke(t, env.aliceToken, env.bob.ID, toks[len(toks)-1].ID)
		wantError(t, env.do("GET", "/users/me", third, ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	})

	t.Run("current", func(t *testing.T) {
		v := env.revoke(t, env.bobToken, env.bob.ID, "current")
		if !v.Current || v.ID != toks[0].ID {
			t.Errorf("answer = %+v, want token %s and current: true", v, toks[0].ID)
		}
		wantError(t, env.do("GET", "/users/me", env.bobToken, ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	})
}

func TestRevokeLastOperatorToken(t *testing.T) {
	env := newTestEnv(t)
	path := "/users/" + env.alice.ID + "/tokens/current"
	rec := env.do("DELETE", path, env.aliceToken, "")
	wantError(t, rec, http.StatusConflict, engine.CodeConflict, "")
	newOpenAPIValidator(t).check(t, "DELETE", "/users/{id}/tokens/{tokenId}", httptest.NewRequest("DELETE", path, nil), rec)
	if !strings.Contains(rec.Body.String(), "last active token of any operator") {
		t.Errorf("refusal = %s, want it to say why", rec.Body.String())
	}
	wantStatus(t, env.do("GET", "/users/me", env.aliceToken, ""), http.StatusOK)
	// With a second operator token, the first may go, the second not.
	second := env.newToken(t, env.aliceToken, env.alice.ID)
	if v := env.revoke(t, env.aliceToken, env.alice.ID, "current"); !v.Current {
		t.Errorf("answer = %+v, want current: true", v)
	}
	wantError(t, env.do("GET", "/users/me", env.aliceToken, ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, env.do("DELETE", "/users/"+env.alice.ID+"/tokens/current", second, ""), http.StatusConflict, engine.CodeConflict, "")
	wantStatus(t, env.do("GET", "/users/me", second, ""), http.StatusOK)
}

// fakeRevocations records TokenRevoked calls and answers with err, after
// delay (or when ctx ends, whichever comes first).
type fakeRevocations struct {
	mu     sync.Mutex
	hashes [][]byte
	delay  time.Duration
	err    error
	// unsettled makes MembershipSettled false: no token is cached.
	unsettled bool
}

func (f *fakeRevocations) MembershipSettled() bool { return !f.unsettled }

func (f *fakeRevocations) TokenRevoked(ctx context.Context, hash []byte) error {
	f.mu.Lock()
	f.hashes = append(f.hashes, hash)
	f.mu.Unlock()
	select {
	case <-time.After(f.delay):
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestRevokeTellsTheCluster: the revocation tells the other members and
// answers once they acknowledged; when one does not, the answer waits until
// the token cache's lifetime has passed since the revocation, so that no
// node's cache can still hold the token, and says so in the log.
func TestRevokeTellsTheCluster(t *testing.T) {
	for _, c := range []struct {
		name string
		fake *fakeRevocations
		wait bool
	}{
		{"all acknowledge", &fakeRevocations{}, false},
		{"a member refuses", &fakeRevocations{err: errors.New("member 10.0.0.2:7701: connection refused")}, true},
		{"a member does not answer", &fakeRevocations{delay: time.Hour}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTestEnv(t)
			env.server.revocations = c.fake
			began := time.Now()
			v := env.revoke(t, env.bobToken, env.bob.ID, "current")
			took := time.Since(began)
			waited := strings.Contains(env.logs.String(), "not every cluster member acknowledged")
			if waited != c.wait || (c.wait && took < userCacheTTL-100*time.Millisecond) || took > 3*userCacheTTL {
				t.Errorf("DELETE answered after %s, waited for the cache's lifetime: %v; want %v", took, waited, c.wait)
			}
			if len(c.fake.hashes) != 1 || hex.EncodeToString(c.fake.hashes[0]) != hex.EncodeToString(keystore.HashToken(env.bobToken)) || !v.Current {
				t.Errorf("members told %x, want bob's token hash once", c.fake.hashes)
			}
		})
	}
}

// TestUnsettledMembershipCachesNoToken: while the cluster membership is not
// settled (this node joined recently, or the membership changed), a token
// revoked without this node being told is refused at its next request;
// once settled, tokens are cached again (for userCacheTTL).
func TestUnsettledMembershipCachesNoToken(t *testing.T) {
	for _, settled := range []bool{false, true} {
		env := newTestEnv(t)
		env.server.revocations = &fakeRevocations{unsettled: !settled}
		wantStatus(t, env.do("GET", "/users/me", env.bobToken, ""), http.StatusOK)
		// Revoked behind this node's back: no drop of its cache.
		toks, err := env.store.ListTokens(t.Context(), env.bob.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.store.RevokeToken(t.Context(), env.bob.ID, toks[0].ID, testNow); err != nil {
			t.Fatal(err)
		}
		want := http.StatusUnauthorized
		if settled {
			want = http.StatusOK // cached, until the TTL (the test clock never moves)
		}
		wantStatus(t, env.do("GET", "/users/me", env.bobToken, ""), want)
	}
}

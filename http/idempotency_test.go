package http

import (
	"net/http"
	"sync"
	"testing"

	"github.com/txengine/txengine/engine"
)

func TestIdempotentCreateAccount(t *testing.T) {
	env := newTestEnv(t)
	first := env.do("POST", "/accounts", env.bobToken, "", "Idempotency-Key", "acct-1")
	wantStatus(t, first, http.StatusCreated)
	again := env.do("POST", "/accounts", env.bobToken, "", "Idempotency-Key", "acct-1")
	wantStatus(t, again, http.StatusCreated)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %s (%v), first %s", again.Body.String(), again.Header(), first.Body.String())
	}
	accts, _ := env.store.ListAccounts(t.Context(), env.bob.ID)
	if len(accts) != 2 {
		t.Fatalf("bob has %d accounts, want 2 (default + one new)", len(accts))
	}
	// Another body with the same key: 409, nothing created.
	rec := env.do("POST", "/accounts", env.bobToken, "{}", "Idempotency-Key", "acct-1")
	wantError(t, rec, http.StatusConflict, engine.CodeConflict, "Idempotency-Key")
	// The key is per user: alice may use it too.
	wantStatus(t, env.do("POST", "/accounts", env.aliceToken, "", "Idempotency-Key", "acct-1"), http.StatusCreated)
	// Another path with the same key is another request.
	rec = env.do("POST", "/users", env.bobToken, "", "Idempotency-Key", "acct-1")
	wantError(t, rec, http.StatusConflict, engine.CodeConflict, "Idempotency-Key")
	// Bad keys.
	rec = env.do("POST", "/accounts", env.bobToken, "", "Idempotency-Key", "has space")
	wantError(t, rec, http.StatusBadRequest, engine.CodeInvalidArgument, "Idempotency-Key")
	if accts, _ := env.store.ListAccounts(t.Context(), env.bob.ID); len(accts) != 2 {
		t.Fatalf("bob has %d accounts after refusals", len(accts))
	}
}

func TestIdempotentUserReplaysToken(t *testing.T) {
	env := newTestEnv(t)
	first := env.do("POST", "/users", env.aliceToken, `{"auth":true,"account":true}`, "Idempotency-Key", "u-1")
	wantStatus(t, first, http.StatusCreated)
	again := env.do("POST", "/users", env.aliceToken, `{"auth":true,"account":true}`, "Idempotency-Key", "u-1")
	if again.Code != http.StatusCreated || again.Body.String() != first.Body.String() {
		t.Fatalf("replay %d %s", again.Code, again.Body.String())
	}
	if n := len(env.engine.created); n != 1 {
		t.Errorf("accounts funded %d times", n)
	}
	// The stored body is sealed: the token is not in the clear.
	var u userView
	decodeData(t, first, &u)
	rec, err := env.store.IdempotencyRecord(t.Context(), env.alice.ID, "u-1")
	if err != nil || rec.Status != 201 || containsBytes(rec.Body, []byte(u.Token)) {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

func TestIdempotentTransferRace(t *testing.T) {
	env := newTestEnv(t)
	body := jsonString(t, map[string]any{"to": env.bobAcct.Address.Hex(), "value": "5"})
	path := "/tokens/" + env.aliceToken20.ID + "/transfers"
	var wg sync.WaitGroup
	codes := make([]int, 8)
	bodies := make([]string, 8)
	for i := range codes {
		wg.Go(func() {
			rec := env.do("POST", path, env.aliceToken, body, "Idempotency-Key", "race")
			codes[i], bodies[i] = rec.Code, rec.Body.String()
		})
	}
	wg.Wait()
	for i := range codes {
		if codes[i] != http.StatusAccepted || bodies[i] != bodies[0] {
			t.Fatalf("request %d: %d %s (first %s)", i, codes[i], bodies[i], bodies[0])
		}
	}
	if n := len(env.engine.submissions()); n != 1 {
		t.Fatalf("%d transactions submitted, want 1", n)
	}
	rec := env.do("POST", path, env.aliceToken, jsonString(t, map[string]any{"to": env.bobAcct.Address.Hex(), "value": "6"}), "Idempotency-Key", "race")
	wantError(t, rec, http.StatusConflict, engine.CodeConflict, "Idempotency-Key")
	if n := len(env.engine.submissions()); n != 1 {
		t.Fatalf("%d transactions submitted after the conflict", n)
	}
	// Without a key, every request creates.
	wantStatus(t, env.do("POST", path, env.aliceToken, body), http.StatusAccepted)
	if n := len(env.engine.submissions()); n != 2 {
		t.Fatalf("%d transactions submitted", n)
	}
}

func containsBytes(haystack, needle []byte) bool {
	for i := 0; i+len(needle) <= len(haystack); i++ {
		if string(haystack[i:i+len(needle)]) == string(needle) {
			return true
		}
	}
	return false
}

// TestIdempotentAfterClose: once the server's merged reads are closed (the
// HTTP server stopped), a request still running that must read its key
// gets 503 and creates nothing.
func TestIdempotentAfterClose(t *testing.T) {
	env := newTestEnv(t)
	env.server.Close()
	rec := env.do("POST", "/accounts", env.bobToken, "", "Idempotency-Key", "after-close")
	wantError(t, rec, http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	if accts, _ := env.store.ListAccounts(t.Context(), env.bob.ID); len(accts) != 1 {
		t.Fatalf("bob has %d accounts, want only the default", len(accts))
	}
}

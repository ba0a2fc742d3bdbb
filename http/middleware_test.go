package http

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

func TestAuthentication(t *testing.T) {
	env := newTestEnv(t)
	tests := []struct {
		name   string
		header string
	}{
		{"missing", ""},
		{"basic scheme", "Basic YWxpY2U6c2VjcmV0"},
		{"scheme only", "Bearer"},
		{"empty token", "Bearer "},
		{"two tokens", "Bearer a b"},
		{"bad characters", "Bearer tok\x01en"},
		{"too long", "Bearer " + strings.Repeat("a", 600)},
		{"unknown token", "Bearer txe_0000000000000000000000000000000000000000000000000000000000000000"},
		{"token without scheme", env.aliceToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec = env.do("GET", "/accounts", "", "", "Authorization", tt.header)
			wantError(t, rec, http.StatusUnauthorized, engine.CodeUnauthenticated, "")
			if h := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
				t.Errorf("WWW-Authenticate = %q", h)
			}
		})
	}
	t.Run("scheme is case-insensitive", func(t *testing.T) {
		rec := env.do("GET", "/accounts", "", "", "Authorization", "bearer "+env.aliceToken)
		wantStatus(t, rec, http.StatusOK)
	})
	t.Run("every API route needs a token", func(t *testing.T) {
		for _, r := range env.server.router.Routes() {
			if publicPaths[r.Path] {
				continue
			}
			path := strings.NewReplacer(":contractId", env.aliceToken20.ID, ":id", env.aliceAcct.ID, ":address", env.aliceAcct.Address.Hex()).Replace(r.Path)
			rec := env.do(r.Method, path, "", `{}`)
			wantError(t, rec, http.StatusUnauthorized, engine.CodeUnauthenticated, "")
		}
	})
	t.Run("public routes need none", func(t *testing.T) {
		for path := range publicPaths {
			wantStatus(t, env.do("GET", path, "", ""), http.StatusOK)
		}
	})
}

var publicPaths = map[string]bool{"/healthz": true, "/readyz": true, "/openapi.json": true, "/metrics": true}

func TestCommonHeadersOnEveryResponse(t *testing.T) {
	env := newTestEnv(t)
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	requests := []struct {
		method, path, token string
		status              int
	}{
		{"GET", "/healthz", "", 200},
		{"GET", "/readyz", "", 200},
		{"GET", "/openapi.json", "", 200},
		{"GET", "/accounts", env.aliceToken, 200},
		{"GET", "/accounts", "", 401},
		{"GET", "/nowhere", "", 404},
		{"GET", "/nowhere", env.aliceToken, 404},
		{"GET", "/accounts/", env.aliceToken, 404},
		{"DELETE", "/accounts", env.aliceToken, 405},
		{"GET", "/accounts/not-a-uuid", env.aliceToken, 404},
	}
	for _, r := range requests {
		rec := env.do(r.method, r.path, r.token, "")
		if rec.Code != r.status {
			t.Errorf("%s %s: status %d, want %d (%s)", r.method, r.path, rec.Code, r.status, rec.Body.String())
		}
		if v := rec.Header().Get("X-API-Version"); v != "1.2.1" {
			t.Errorf("%s %s: X-API-Version = %q", r.method, r.path, v)
		}
		if id := rec.Header().Get("X-Request-Id"); !uuidRE.MatchString(id) {
			t.Errorf("%s %s: X-Request-Id = %q, want a new UUID", r.method, r.path, id)
		}
	}

	for _, tt := range []struct {
		in   string
		echo bool
	}{
		{"abc-123_X.y", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"has space", false},
		{"semi;colon", false},
		{"ünïcode", false},
	} {
		rec := env.do("GET", "/nowhere", "", "", "X-Request-Id", tt.in)
		got := rec.Header().Get("X-Request-Id")
		if tt.echo && got != tt.in {
			t.Errorf("X-Request-Id %q: got %q, want it echoed", tt.in, got)
		}
		if !tt.echo && !uuidRE.MatchString(got) {
			t.Errorf("X-Request-Id %q: got %q, want a new UUID", tt.in, got)
		}
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	env := newTestEnv(t)
	wantError(t, env.do("GET", "/nowhere", env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	wantError(t, env.do("GET", "/tokens/"+env.aliceToken20.ID+"/balances", env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")

	rec := env.do("DELETE", "/accounts", env.aliceToken, "")
	wantError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed, "")
	if allow := rec.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow = %q", allow)
	}
	rec = env.do("PUT", "/tokens/"+env.aliceToken20.ID+"/transfers", env.aliceToken, "{}")
	wantError(t, rec, http.StatusMethodNotAllowed, codeMethodNotAllowed, "")
}

func TestPanicIsInternalError(t *testing.T) {
	env := newTestEnv(t)
	env.server.router.GET("/boom", func(*gin.Context) { panic("secret detail") })
	rec := env.do("GET", "/boom", "", "")
	wantError(t, rec, http.StatusInternalServerError, engine.CodeInternal, "")
	if strings.Contains(rec.Body.String(), "secret detail") {
		t.Errorf("panic value leaked: %s", rec.Body.String())
	}
	if !strings.Contains(env.logs.String(), "secret detail") {
		t.Errorf("panic not logged: %s", env.logs.String())
	}
}

func TestInternalErrorsAreGeneric(t *testing.T) {
	env := newTestEnv(t)
	env.engine.submitErr = errors.New("database exploded at 10.0.0.5")
	rec := env.do("POST", "/tokens/"+env.aliceToken20.ID+"/transfers", env.aliceToken,
		`{"to":"`+env.bobAcct.Address.Hex()+`","value":"1"}`, "X-Request-Id", "req-42")
	wantError(t, rec, http.StatusInternalServerError, engine.CodeInternal, "")
	if strings.Contains(rec.Body.String(), "exploded") {
		t.Errorf("internal detail leaked: %s", rec.Body.String())
	}
	logs := env.logs.String()
	if !strings.Contains(logs, "exploded") || !strings.Contains(logs, "req-42") {
		t.Errorf("error not logged with the request id: %s", logs)
	}

	env.engine.submitErr = engine.Errorf(engine.CodeUnavailable, "", "shutting down")
	rec = env.do("POST", "/tokens/"+env.aliceToken20.ID+"/transfers", env.aliceToken,
		`{"to":"`+env.bobAcct.Address.Hex()+`","value":"1"}`)
	wantError(t, rec, http.StatusServiceUnavailable, engine.CodeUnavailable, "")
}

func TestAccessLogNeverHasTheToken(t *testing.T) {
	env := newTestEnv(t)
	env.do("GET", "/accounts/"+env.aliceAcct.ID, env.aliceToken, "")
	env.do("GET", "/accounts", "", "", "Authorization", "Bearer txe_unknown_secret_value")
	logs := env.logs.String()
	if strings.Contains(logs, env.aliceToken) || strings.Contains(logs, "txe_unknown_secret_value") {
		t.Fatalf("token in logs: %s", logs)
	}
	if !strings.Contains(logs, "route=/accounts/:id") || !strings.Contains(logs, "status=200") {
		t.Errorf("access log line missing: %s", logs)
	}
}

func TestStatusTable(t *testing.T) {
	want := map[engine.Code]int{
		engine.CodeInvalidJSON: 400, engine.CodeInvalidArgument: 400, engine.CodeUnauthenticated: 401,
		engine.CodeForbidden: 403, engine.CodeNotFound: 404, codeMethodNotAllowed: 405, engine.CodeConflict: 409,
		engine.CodePayloadTooLarge: 413, engine.CodeRateLimited: 429, engine.CodeInternal: 500,
		engine.CodeUnavailable: 503, "something_else": 500,
	}
	for code, status := range want {
		if got := httpStatus(code); got != status {
			t.Errorf("httpStatus(%s) = %d, want %d", code, got, status)
		}
	}
}

func TestDrain(t *testing.T) {
	env := newTestEnv(t)
	env.server.Drain()
	wantError(t, env.do("GET", "/accounts", env.aliceToken, ""), http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	wantStatus(t, env.do("GET", "/healthz", "", ""), http.StatusOK)
	wantStatus(t, env.do("GET", "/readyz", "", ""), http.StatusServiceUnavailable)
}

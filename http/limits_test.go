package http

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// TestLimitsOfStringsAndQueries checks the bounds of method names (path and
// batch field) and of free-text query parameters: one over the bound is 400
// invalid_argument naming the field, one at the bound is not refused for
// its length, and nothing is submitted.
func TestLimitsOfStringsAndQueries(t *testing.T) {
	env := newTestEnv(t)
	ct := env.aliceToken20.ID
	long := strings.Repeat("m", engine.MaxMethodLen+1)
	longQ := strings.Repeat("q", maxQueryLen+1)
	tests := []struct {
		method, path, body string
		field              string
	}{
		{"POST", "/contracts/" + ct + "/send/" + long, `{"arg":[]}`, "method"},
		{"POST", "/contracts/" + ct + "/call/" + long, `{}`, "method"},
		{"POST", "/contracts/network/dev/address/" + env.aliceToken20.Address.Hex() + "/send/" + long, `{"type":"erc20"}`, "method"},
		{"POST", "/contracts/network/dev/address/" + env.aliceToken20.Address.Hex() + "/call/" + long, `{"type":"erc20"}`, "method"},
		{"GET", "/contracts?text=" + longQ, "", "text"},
		{"GET", "/contracts?network=" + longQ, "", "network"},
		{"GET", "/tokens?name=" + longQ, "", "name"},
		{"GET", "/tokens?symbol=" + longQ, "", "symbol"},
		{"GET", "/tokens?network=" + longQ, "", "network"},
		{"GET", "/transactions?method=" + longQ, "", "method"},
		{"GET", "/transactions?network=" + longQ, "", "network"},
		{"GET", "/contracts/" + ct + "/events?event=" + longQ, "", "event"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path[:min(len(tc.path), 60)], func(t *testing.T) {
			wantError(t, env.do(tc.method, tc.path, env.aliceToken, tc.body), 400, engine.CodeInvalidArgument, tc.field)
		})
	}
	if n := len(env.engine.submissions()); n != 0 {
		t.Fatalf("%d transactions submitted by refused requests", n)
	}

	// A batch call with an over-long method fails that call alone.
	rec := env.do("POST", "/contracts/call", env.aliceToken,
		`{"calls":[{"contractId":"`+ct+`","method":"`+long+`"},{"contractId":"`+ct+`","method":"decimals"}]}`)
	wantStatus(t, rec, 200)
	if body := rec.Body.String(); !strings.Contains(body, `"field":"method"`) || !strings.Contains(body, `"result":"18"`) {
		t.Fatalf("batch: %s", body)
	}

	// At the bounds: not refused for their length (an unknown method is 404).
	wantError(t, env.do("POST", "/contracts/"+ct+"/call/"+long[1:], env.aliceToken, `{}`), 404, engine.CodeNotFound, "method")
	wantStatus(t, env.do("GET", "/contracts?text="+longQ[1:], env.aliceToken, ""), 200)
}

// blockingStore is a store whose ListAccounts waits for the request's
// deadline, like a database that stopped answering.
type blockingStore struct{ *testStore }

func (s blockingStore) ListAccounts(ctx context.Context, _ string) ([]*engine.Account, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("list accounts: %w", ctx.Err())
}

// TestRequestTimeout checks the per-request deadline: a handler whose store
// call outlives it answers 503 unavailable (not 500), and a handler that
// returns without answering after the deadline gets 503 as well.
func TestRequestTimeout(t *testing.T) {
	env := newTestEnv(t)
	s := newTestServer(t, Config{RequestTimeout: 50 * time.Millisecond, RateLimit: RateLimitConfig{PerSecond: 1 << 30, PerHour: 1 << 30}}, Deps{
		Store: blockingStore{env.store}, Sealer: env.server.sealer, Networks: env.server.networks,
		Engine: env.engine, Clock: fixedClock{testNow},
	})
	s.router.GET("/test/silent", func(c *gin.Context) { <-c.Request.Context().Done() })
	s.router.GET("/test/deadline", func(c *gin.Context) {
		d, ok := c.Request.Context().Deadline()
		if !ok || time.Until(d) > 50*time.Millisecond {
			c.String(http.StatusTeapot, "no deadline")
			return
		}
		c.String(http.StatusOK, "ok")
	})
	env.server = s

	start := time.Now()
	rec := env.do("GET", "/accounts", env.aliceToken, "")
	wantError(t, rec, 503, engine.CodeUnavailable, "")
	if !strings.Contains(rec.Body.String(), "50ms") {
		t.Errorf("message does not name the limit: %s", rec.Body.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %s", d)
	}
	wantError(t, env.do("GET", "/test/silent", "", ""), 503, engine.CodeUnavailable, "")
	wantStatus(t, env.do("GET", "/test/deadline", "", ""), 200)
	// Other requests are unaffected.
	wantStatus(t, env.do("GET", "/users/me", env.aliceToken, ""), 200)
}

// TestDefaultRequestTimeout checks the documented default of 30 s.
func TestDefaultRequestTimeout(t *testing.T) {
	if got := (Config{}).withDefaults().RequestTimeout; got != 30*time.Second {
		t.Fatalf("default RequestTimeout = %s, want 30s", got)
	}
}

// TestCallbackLoopbackNames checks that callback URLs whose host is a name
// of loopback (localhost in any case, with a trailing dot, or under
// .localhost) are refused by the API like loopback addresses. Other names
// that resolve to private addresses are refused by the dispatcher when it
// connects (engine.TestDispatcherRefusesNamesResolvingToLoopback).
func TestCallbackLoopbackNames(t *testing.T) {
	env := newTestEnv(t)
	to := env.bobAcct.Address.Hex()
	path := "/tokens/" + env.aliceToken20.ID + "/transfers"
	for _, u := range []string{
		"http://localhost./cb", "http://LOCALHOST/cb", "http://LocalHost.:8080/cb",
		"https://api.localhost/cb", "http://a.b.localhost./cb", "http://127.1/cb", "http://2130706433/cb", "http://0177.0.0.1/cb", "http://0.0.0.0/cb",
		"http://[::ffff:127.0.0.1]/cb", "http://[fe80::1]/cb",
	} {
		t.Run(u, func(t *testing.T) {
			body := `{"to":"` + to + `","value":"1","callbacks":["` + u + `"]}`
			wantError(t, env.do("POST", path, env.aliceToken, body), 400, engine.CodeInvalidArgument, "callbacks")
		})
	}
	if n := len(env.engine.submissions()); n != 0 {
		t.Fatalf("%d transactions submitted", n)
	}
}

package http

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// stepClock is a fake clock that tests move by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withLimiter gives env's server a limiter of cfg on a fake clock that
// starts at start.
func withLimiter(env *testEnv, cfg RateLimitConfig, start time.Time) *stepClock {
	clk := &stepClock{t: start}
	env.server.limiter = newLimiter(cfg, clk)
	return clk
}

// wantLimitHeaders checks the X-RateLimit-* headers of rec.
func wantLimitHeaders(t *testing.T, rec *httptest.ResponseRecorder, limit, remaining, reset int) {
	t.Helper()
	h := rec.Header()
	got := [3]string{h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset")}
	want := [3]string{strconv.Itoa(limit), strconv.Itoa(remaining), strconv.Itoa(reset)}
	if got != want {
		t.Errorf("X-RateLimit Limit/Remaining/Reset = %v, want %v", got, want)
	}
}

// TestRateLimitPerSecond: ten requests in one second pass, the eleventh is
// 429 rate_limited with Retry-After, the next second passes again; requests
// without a valid token do not count.
func TestRateLimitPerSecond(t *testing.T) {
	env := newTestEnv(t)
	start := testNow.Truncate(time.Second).Add(300 * time.Millisecond)
	clk := withLimiter(env, RateLimitConfig{}, start)
	for i := 1; i <= 10; i++ {
		rec := env.do("GET", "/accounts", env.bobToken, "")
		wantStatus(t, rec, http.StatusOK)
		wantLimitHeaders(t, rec, 10, 10-i, 1)
		// Unauthenticated requests in between are not counted against anyone.
		wantStatus(t, env.do("GET", "/accounts", "", ""), http.StatusUnauthorized)
	}
	clk.advance(699 * time.Millisecond) // still the same second
	rec := env.do("GET", "/accounts", env.bobToken, "")
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantLimitHeaders(t, rec, 10, 0, 1)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	// A refused request does not count either: the next second has all ten.
	clk.advance(time.Millisecond)
	rec = env.do("GET", "/accounts", env.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	wantLimitHeaders(t, rec, 10, 9, 1)

	// The other user has its own budget.
	for i := 0; i < 10; i++ {
		wantStatus(t, env.do("GET", "/accounts", env.aliceToken, ""), http.StatusOK)
	}
	if v := gaugeOf(t, env, "txengine_http_rate_limited_total", map[string]string{"window": "second"}); v != 1 {
		t.Errorf("rate limited counter = %v, want 1", v)
	}
}

// TestRateLimitPerHour: with the second never exhausted, the 3601st request
// of an hour is refused until the hour ends; the headers describe the hour
// once it is the window closer to exhaustion.
func TestRateLimitPerHour(t *testing.T) {
	env := newTestEnv(t)
	hour := testNow.Truncate(time.Hour)
	clk := withLimiter(env, RateLimitConfig{}, hour)
	for i := 1; i <= 3600; i++ {
		rec := env.do("GET", "/accounts", env.bobToken, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, rec.Code, rec.Body)
		}
		if i == 3595 {
			// Five left in the hour, some in the second: the hour binds.
			wantLimitHeaders(t, rec, 3600, 5, int(time.Hour/time.Second)-(i-1)/9)
		}
		if i%9 == 0 {
			clk.advance(time.Second)
		}
	}
	clk.advance(time.Second)
	rec := env.do("GET", "/accounts", env.bobToken, "")
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	left := int(hour.Add(time.Hour).Sub(clk.Now()) / time.Second)
	wantLimitHeaders(t, rec, 3600, 0, left)
	if got := rec.Header().Get("Retry-After"); got != strconv.Itoa(left) {
		t.Errorf("Retry-After = %q, want %d", got, left)
	}
	clk.advance(time.Duration(left-1) * time.Second)
	wantStatus(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusTooManyRequests)
	clk.advance(time.Second) // the next hour
	rec = env.do("GET", "/accounts", env.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	wantLimitHeaders(t, rec, 10, 9, 1)
}

// TestRateLimitOperatorExempt: operators are never refused; their headers
// show the default per-second limit, unconsumed.
func TestRateLimitOperatorExempt(t *testing.T) {
	env := newTestEnv(t)
	withLimiter(env, RateLimitConfig{PerSecond: 3, PerHour: 5}, testNow.Truncate(time.Second))
	for i := 0; i < 20; i++ {
		rec := env.do("GET", "/accounts", env.aliceToken, "")
		wantStatus(t, rec, http.StatusOK)
		wantLimitHeaders(t, rec, 3, 3, 1)
	}
}

// TestRateLimitHeadersOnEveryResponse: API.md puts the X-RateLimit-*
// headers on every response. Responses that count no user (401s, the
// operational endpoints, unknown routes and methods, a draining server)
// carry the default per-second limit, unconsumed; they do not count
// against anyone: bob's window is untouched afterwards.
func TestRateLimitHeadersOnEveryResponse(t *testing.T) {
	env := newTestEnv(t)
	withLimiter(env, RateLimitConfig{PerSecond: 7, PerHour: 50}, testNow.Truncate(time.Second).Add(600*time.Millisecond))
	type req struct {
		name, method, path, auth string
		status                   int
	}
	reqs := []req{
		{"no token", "GET", "/accounts", "", http.StatusUnauthorized},
		{"unknown token", "GET", "/accounts", "Bearer txe_unknown", http.StatusUnauthorized},
		{"not bearer", "GET", "/accounts", "Basic Zm9vOmJhcg==", http.StatusUnauthorized},
		{"healthz", "GET", "/healthz", "", http.StatusOK},
		{"readyz", "GET", "/readyz", "", 0},
		{"openapi", "GET", "/openapi.json", "", http.StatusOK},
		{"metrics", "GET", "/metrics", "", 0},
		{"unknown route", "GET", "/nowhere", "", http.StatusNotFound},
		{"unknown method", "DELETE", "/accounts", "", http.StatusMethodNotAllowed},
	}
	check := func(r req) {
		t.Helper()
		hr := httptest.NewRequest(r.method, r.path, nil)
		if r.auth != "" {
			hr.Header.Set("Authorization", r.auth)
		}
		rec := httptest.NewRecorder()
		env.server.Handler().ServeHTTP(rec, hr)
		if r.status != 0 && rec.Code != r.status {
			t.Errorf("%s: status %d, want %d: %s", r.name, rec.Code, r.status, rec.Body)
		}
		// 600 ms into the second: 1 s (rounded up) until it resets.
		t.Run(r.name, func(t *testing.T) { wantLimitHeaders(t, rec, 7, 7, 1) })
	}
	for _, r := range reqs {
		check(r)
	}
	// Nothing above counted: bob's first request finds his whole window.
	wantLimitHeaders(t, env.do("GET", "/accounts", env.bobToken, ""), 7, 6, 1)
	env.server.Drain()
	check(req{"draining", "GET", "/accounts", "", http.StatusServiceUnavailable})
}

// TestRateLimitOverrides: a user's override (User.Limits) replaces the
// default of each window it sets.
func TestRateLimitOverrides(t *testing.T) {
	env := newTestEnv(t)
	env.store.mu.Lock()
	env.store.users[env.bob.ID].Limits = &engine.RateLimits{PerSecond: 2}
	env.store.mu.Unlock()
	withLimiter(env, RateLimitConfig{PerSecond: 10, PerHour: 100}, testNow.Truncate(time.Second))
	wantLimitHeaders(t, env.do("GET", "/accounts", env.bobToken, ""), 2, 1, 1)
	wantStatus(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusOK)
	rec := env.do("GET", "/accounts", env.bobToken, "")
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantLimitHeaders(t, rec, 2, 0, 1)

	cfg := RateLimitConfig{PerSecond: 10, PerHour: 100}.withDefaults()
	for _, tt := range []struct {
		limits          *engine.RateLimits
		perSec, perHour int
	}{
		{nil, 10, 100},
		{&engine.RateLimits{}, 10, 100},
		{&engine.RateLimits{PerHour: 7}, 10, 7},
		{&engine.RateLimits{PerSecond: 50, PerHour: 9000}, 50, 9000},
	} {
		s, h := cfg.Limits(&engine.User{Limits: tt.limits})
		if s != tt.perSec || h != tt.perHour {
			t.Errorf("limits %+v: %d/s %d/h, want %d/s %d/h", tt.limits, s, h, tt.perSec, tt.perHour)
		}
	}
}

// TestRateLimiterForgetsIdleUsers: memory is bounded by the users active in
// the current hour.
func TestRateLimiterForgetsIdleUsers(t *testing.T) {
	clk := &stepClock{t: testNow.Truncate(time.Hour)}
	l := newLimiter(RateLimitConfig{}, clk)
	for i := 0; i < 500; i++ {
		l.allow(t.Context(), &engine.User{ID: strconv.Itoa(i)})
	}
	if n := l.tracked(); n != 500 {
		t.Fatalf("tracked %d users, want 500", n)
	}
	clk.advance(time.Hour + time.Minute)
	if d := l.allow(t.Context(), &engine.User{ID: "new"}); !d.allowed {
		t.Fatal("refused")
	}
	if n := l.tracked(); n != 1 {
		t.Fatalf("tracked %d users after an idle hour, want 1", n)
	}
}

package http

import (
	"context"
	"math/rand/v2"
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
// 429 rate_limited with Retry-After; the window slides: the ten leave it
// 1.1 s after their 100 ms bucket began (never sooner than a second);
// requests without a valid token do not count.
func TestRateLimitPerSecond(t *testing.T) {
	env := newTestEnv(t)
	start := testNow.Truncate(time.Second).Add(300 * time.Millisecond)
	clk := withLimiter(env, RateLimitConfig{}, start)
	for i := 1; i <= 10; i++ {
		rec := env.do("GET", "/accounts", env.bobToken, "")
		wantStatus(t, rec, http.StatusOK)
		// The bucket began at start: its requests leave at start + 1.1 s.
		wantLimitHeaders(t, rec, 10, 10-i, 2)
		// Unauthenticated requests in between are not counted against anyone.
		wantStatus(t, env.do("GET", "/accounts", "", ""), http.StatusUnauthorized)
	}
	clk.advance(699 * time.Millisecond)
	rec := env.do("GET", "/accounts", env.bobToken, "")
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantLimitHeaders(t, rec, 10, 0, 1)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
	// A fixed window would have reset at the whole second; the sliding
	// one holds the ten until start + 1.1 s.
	clk.advance(time.Millisecond)
	wantError(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	clk.advance(399 * time.Millisecond)
	wantError(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	// A refused request does not count either: then all ten fit again.
	clk.advance(time.Millisecond)
	rec = env.do("GET", "/accounts", env.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	wantLimitHeaders(t, rec, 10, 9, 2)

	// The other user has its own budget.
	for i := 0; i < 10; i++ {
		wantStatus(t, env.do("GET", "/accounts", env.aliceToken, ""), http.StatusOK)
	}
	if v := gaugeOf(t, env, "txengine_http_rate_limited_total", map[string]string{"window": "second"}); v != 3 {
		t.Errorf("rate limited counter = %v, want 3", v)
	}
}

// TestRateLimitNoDoubleBurst: with 10 per second, 10 requests at x.9 s
// fill the second; 10 more at (x+1).1 s, which fixed windows let through
// (20 within 200 ms), are refused; so are requests until the first ten
// have left the window.
func TestRateLimitNoDoubleBurst(t *testing.T) {
	env := newTestEnv(t)
	base := testNow.Truncate(time.Second)
	clk := withLimiter(env, RateLimitConfig{PerSecond: 10, PerHour: 1000}, base.Add(900*time.Millisecond))
	burst := func() (passed int) {
		for range 10 {
			if rec := env.do("GET", "/accounts", env.bobToken, ""); rec.Code == http.StatusOK {
				passed++
			} else {
				wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
			}
		}
		return passed
	}
	if n := burst(); n != 10 {
		t.Fatalf("%d of the first 10 passed", n)
	}
	clk.advance(200 * time.Millisecond)
	if n := burst(); n != 0 {
		t.Fatalf("%d of 10 passed 200 ms after 10 others, across the second's boundary", n)
	}
	clk.advance(899 * time.Millisecond) // (x+1).999 s: still within a second of the first ten's bucket
	if n := burst(); n != 0 {
		t.Fatalf("%d of 10 passed at %s", n, clk.Now().Format("05.000"))
	}
	clk.advance(time.Millisecond) // (x+2).0 s: the first ten have left
	if n := burst(); n != 10 {
		t.Fatalf("%d of 10 passed once the first ten left the window", n)
	}
}

// TestRateLimitAnyPeriod: requests at random instants over ten seconds,
// some of them refused: no period of one second holds more allowed
// requests than the limit, and the limiter lets through at least the limit
// in each whole second where that many were sent (it is no stricter than a
// window of 1.1 s).
func TestRateLimitAnyPeriod(t *testing.T) {
	const limit = 7
	clk := &stepClock{t: testNow.Truncate(time.Second)}
	l := newLimiter(RateLimitConfig{PerSecond: limit, PerHour: 1 << 20}, clk)
	start := clk.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	var allowed []time.Duration
	for clk.Now().Sub(start) < 10*time.Second {
		clk.advance(time.Duration(rng.IntN(60)) * time.Millisecond)
		if l.allowKey(t.Context(), "k", limit, 1<<20).allowed {
			allowed = append(allowed, clk.Now().Sub(start))
		}
	}
	for i, at := range allowed {
		n := 0
		for _, b := range allowed[i:] {
			if b-at < time.Second {
				n++
			}
		}
		if n > limit {
			t.Fatalf("%d requests allowed in the second from %s", n, at)
		}
	}
	if len(allowed) < limit*10*10/11-limit {
		t.Fatalf("only %d requests allowed in 10 s at %d/s", len(allowed), limit)
	}
}

// TestRateLimitPerHour: with the second never exhausted (9 requests every
// 1.1 s), the 3601st request of an hour is refused until the first
// minute's requests leave the hour (61 minutes after it began); the
// headers describe the hour once it is the window closer to exhaustion.
func TestRateLimitPerHour(t *testing.T) {
	env := newTestEnv(t)
	hour := testNow.Truncate(time.Hour)
	clk := withLimiter(env, RateLimitConfig{}, hour)
	leave := hour.Add(time.Hour + time.Minute) // when the first minute's requests leave
	until := func() int { return int((leave.Sub(clk.Now()) + time.Second - 1) / time.Second) }
	for i := 1; i <= 3600; i++ {
		rec := env.do("GET", "/accounts", env.bobToken, "")
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, rec.Code, rec.Body)
		}
		if i == 3595 {
			// Five left in the hour, some in the second: the hour binds.
			wantLimitHeaders(t, rec, 3600, 5, until())
		}
		if i%9 == 0 {
			clk.advance(1100 * time.Millisecond)
		}
	}
	rec := env.do("GET", "/accounts", env.bobToken, "")
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	left := until()
	wantLimitHeaders(t, rec, 3600, 0, left)
	if got := rec.Header().Get("Retry-After"); got != strconv.Itoa(left) {
		t.Errorf("Retry-After = %q, want %d", got, left)
	}
	clk.advance(leave.Add(-time.Millisecond).Sub(clk.Now()))
	wantStatus(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusTooManyRequests)
	clk.advance(time.Millisecond) // the first minute's requests have left
	rec = env.do("GET", "/accounts", env.bobToken, "")
	wantStatus(t, rec, http.StatusOK)
	wantLimitHeaders(t, rec, 10, 9, 2)
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

// TestRateLimitHeadersOnEveryResponse: docs/api-decisions.md#authentication-and-users puts the X-RateLimit-*
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
	// (His bucket began at .600: its request leaves at 1.700.)
	wantLimitHeaders(t, env.do("GET", "/accounts", env.bobToken, ""), 7, 6, 2)
	env.server.Drain()
	check(req{"draining", "GET", "/accounts", "", http.StatusServiceUnavailable})
}

// TestRateLimitOverrides: a user's override (User.Limits) replaces the
// default of each window it sets.
func TestRateLimitOverrides(t *testing.T) {
	env := newTestEnv(t)
	if err := env.store.SetUserLimits(context.Background(), env.bob.ID, &engine.RateLimits{PerSecond: 2}); err != nil {
		t.Fatal(err)
	}
	withLimiter(env, RateLimitConfig{PerSecond: 10, PerHour: 100}, testNow.Truncate(time.Second))
	wantLimitHeaders(t, env.do("GET", "/accounts", env.bobToken, ""), 2, 1, 2)
	wantStatus(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusOK)
	rec := env.do("GET", "/accounts", env.bobToken, "")
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantLimitHeaders(t, rec, 2, 0, 2)

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
// the last hour (61 minutes: the hour window and its bucket).
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

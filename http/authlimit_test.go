package http

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// lookupCounter counts the token lookups that reach the store.
type lookupCounter struct {
	Store
	lookups atomic.Int64
}

func (s *lookupCounter) UserByTokenHash(ctx context.Context, hash []byte) (*engine.User, error) {
	s.lookups.Add(1)
	return s.Store.UserByTokenHash(ctx, hash)
}

// fromAddr sends a request to env's server from the client address addr,
// with an optional X-Forwarded-For; auth "" sends no Authorization header.
func fromAddr(env *testEnv, addr, forwardedFor, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/accounts", nil)
	req.RemoteAddr = addr
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	rec := httptest.NewRecorder()
	env.server.Handler().ServeHTTP(rec, req)
	return rec
}

// TestAuthFailuresLimitedPerAddress: missing, malformed and unknown tokens
// count against the client address; once over its limit the address gets
// 429 rate_limited, with the X-RateLimit-* headers of that limit and
// Retry-After, before any token lookup, for good tokens too; other
// addresses are not affected; X-Forwarded-For from an untrusted peer does
// not change the address; the limits slide like the users'.
func TestAuthFailuresLimitedPerAddress(t *testing.T) {
	env := newTestEnv(t)
	clk := withLimiter(env, RateLimitConfig{AuthFailuresPerSecond: 3, AuthFailuresPerHour: 5}, testNow.Truncate(time.Second))
	env.server.clock = clk
	store := &lookupCounter{Store: env.server.store}
	env.server.store = store
	const a, b = "198.51.100.7:40000", "203.0.113.5:40000"
	bad := func(i int) string { return fmt.Sprintf("Bearer txe_unknown_%d", i) }

	wantError(t, fromAddr(env, a, "", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, a, "", "Basic Zm9vOmJhcg=="), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, a, "", bad(1)), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	if n := store.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups, want 1", n)
	}
	for _, auth := range []string{bad(2), "Bearer " + env.bobToken, ""} {
		rec := fromAddr(env, a, "", auth)
		wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
		wantLimitHeaders(t, rec, 3, 0, 2)
		if got := rec.Header().Get("Retry-After"); got != "2" {
			t.Errorf("Retry-After = %q, want 2", got)
		}
	}
	// Spoofing X-Forwarded-For changes nothing: no proxy is trusted.
	wantError(t, fromAddr(env, a, "192.0.2.77", bad(3)), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	if n := store.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups: an address over its limit reached the store", n)
	}
	// Another address is served.
	wantStatus(t, fromAddr(env, b, "", "Bearer "+env.bobToken), http.StatusOK)
	wantError(t, fromAddr(env, b, "", bad(4)), http.StatusUnauthorized, engine.CodeUnauthenticated, "")

	// 1.1 s later the second has slid; two more failures fill the hour.
	clk.advance(1100 * time.Millisecond)
	wantStatus(t, fromAddr(env, a, "", "Bearer "+env.bobToken), http.StatusOK) // a success does not count
	wantError(t, fromAddr(env, a, "", bad(5)), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, a, "", bad(6)), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	clk.advance(1100 * time.Millisecond)
	rec := fromAddr(env, a, "", bad(7))
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	// The first failure's minute bucket leaves the hour 61 min after it began.
	leave := testNow.Truncate(time.Minute).Add(time.Hour + time.Minute)
	wantLimitHeaders(t, rec, 5, 0, int((leave.Sub(clk.Now())+time.Second-1)/time.Second))
	if v := gaugeOf(t, env, "txengine_http_rate_limited_total", map[string]string{"window": "hour"}); v != 1 {
		t.Errorf("rate limited (hour) = %v, want 1", v)
	}
}

// TestAuthFailuresTrustedProxy: behind a configured proxy, the address is
// the one it forwards.
func TestAuthFailuresTrustedProxy(t *testing.T) {
	env := newTestEnv(t)
	env.server = newTestServer(t, Config{TrustedProxies: []string{"10.0.0.0/8"},
		RateLimit: RateLimitConfig{AuthFailuresPerSecond: 1, AuthFailuresPerHour: 10}}, Deps{
		Store: env.store, Sealer: env.server.sealer, Engine: env.engine, Clock: fixedClock{testNow},
	})
	const proxy = "10.1.2.3:5000"
	wantError(t, fromAddr(env, proxy, "203.0.113.1", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, proxy, "203.0.113.1", ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantError(t, fromAddr(env, proxy, "203.0.113.2", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	// An untrusted peer's X-Forwarded-For is ignored: its own address counts.
	wantError(t, fromAddr(env, "198.51.100.1:5000", "203.0.113.3", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, "198.51.100.1:5000", "203.0.113.4", ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
}

// TestUnknownTokenNotLookedUpAgain: a repeated unknown token reaches the
// store once per 30 s; a token created meanwhile works at once; a revoked
// token stops working as before (within the users cache's TTL).
func TestUnknownTokenNotLookedUpAgain(t *testing.T) {
	env := newTestEnv(t)
	clk := &stepClock{t: testNow}
	env.server.clock = clk
	store := &lookupCounter{Store: env.server.store}
	env.server.store = store
	for range 50 {
		wantError(t, env.do("GET", "/accounts", "txe_not_a_token", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	}
	if n := store.lookups.Load(); n != 1 {
		t.Fatalf("50 requests with one unknown token: %d lookups, want 1", n)
	}
	clk.advance(unknownTTL)
	wantError(t, env.do("GET", "/accounts", "txe_not_a_token", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	if n := store.lookups.Load(); n != 2 {
		t.Fatalf("after %s: %d lookups, want 2", unknownTTL, n)
	}
	// A new token works at once.
	token, hash, err := keystore.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.store.AddToken(context.Background(), env.bob.ID, hash, nil); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, env.do("GET", "/accounts", token, ""), http.StatusOK)
	// Revoked: unknown once the users cache's entry expires.
	env.store.exec(t, `DELETE FROM api_tokens WHERE hash = ?`, hash)
	clk.advance(userCacheTTL)
	wantError(t, env.do("GET", "/accounts", token, ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
}

// TestAddressKey: IPv4 (mapped or not) counts per address, IPv6 per /64.
func TestAddressKey(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"198.51.100.7", "198.51.100.7"},
		{"::ffff:198.51.100.7", "198.51.100.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::ffff", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := addressKey(tt.addr); got != tt.want {
			t.Errorf("addressKey(%q) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// TestAuthFailuresIPv6PerPrefix: the addresses of one IPv6 /64 share a
// budget of failed authentications.
func TestAuthFailuresIPv6PerPrefix(t *testing.T) {
	env := newTestEnv(t)
	withLimiter(env, RateLimitConfig{AuthFailuresPerSecond: 2, AuthFailuresPerHour: 100}, testNow)
	wantError(t, fromAddr(env, "[2001:db8:0:1::1]:5000", "", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, "[2001:db8:0:1::2]:5000", "", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
	wantError(t, fromAddr(env, "[2001:db8:0:1:ffff::3]:5000", "", ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantError(t, fromAddr(env, "[2001:db8:0:2::1]:5000", "", ""), http.StatusUnauthorized, engine.CodeUnauthenticated, "")
}

// TestFailureAddressesBounded: beyond its bound, new addresses share one
// budget (limited together, not unlimited), and the table stays bounded;
// once their windows are empty the sweep makes room again.
func TestFailureAddressesBounded(t *testing.T) {
	clk := &stepClock{t: testNow}
	m := memCounter{max: 100}
	for i := range 100 {
		if _, _, ok := m.count(fmt.Sprintf("k%d", i), clk.Now(), 2, 100, true); !ok {
			t.Fatalf("key %d refused", i)
		}
	}
	// Two new keys fill the shared budget; the third is refused.
	for i, want := range []bool{true, true, false} {
		if _, _, ok := m.count(fmt.Sprintf("new%d", i), clk.Now(), 2, 100, true); ok != want {
			t.Fatalf("new key %d: allowed %v, want %v", i, ok, want)
		}
	}
	if n := m.tracked(); n != 101 {
		t.Fatalf("%d keys tracked, want 101 (the bound and the shared one)", n)
	}
	clk.advance(time.Hour + time.Minute)
	if _, _, ok := m.count("later", clk.Now(), 2, 100, true); !ok || m.tracked() != 1 {
		t.Fatalf("after an hour: allowed %v, %d keys tracked; want true, 1", ok, m.tracked())
	}
}

package http

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/prom"
	"github.com/txengine/txengine/persistence/sqlite"
)

// Several nodes of a cluster share one database: these tests run two
// Servers, as two nodes, on one store.

// openSQLite opens a fresh SQLite store for the test.
func openSQLite(t *testing.T) *sqlite.Store { return newTestStore(t).Store }

// serveOn sends a request to srv.
func serveOn(t *testing.T, srv *Server, method, path, token, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	return rec
}

// TestRateLimitSharedByTwoServers: two servers counting in one store
// enforce one limit between them, per second and per hour.
func TestRateLimitSharedByTwoServers(t *testing.T) {
	env := newTestEnv(t)
	counter := openSQLite(t)
	clk := &stepClock{t: testNow.Truncate(time.Second).Add(100 * time.Millisecond)}
	cfg := Config{RateLimit: RateLimitConfig{PerSecond: 3, PerHour: 5, Counter: counter}}
	deps := Deps{Store: env.store, Sealer: env.server.sealer, Engine: env.engine, Clock: clk}
	nodes := []*Server{newTestServer(t, cfg, deps), newTestServer(t, cfg, deps)}
	get := func(i int) *httptest.ResponseRecorder {
		return serveOn(t, nodes[i%2], "GET", "/accounts", env.bobToken, "")
	}
	for i := range 3 {
		rec := get(i)
		wantStatus(t, rec, http.StatusOK)
		if got := rec.Header().Get("X-RateLimit-Remaining"); got != strconv.Itoa(2-i) {
			t.Errorf("request %d: X-RateLimit-Remaining = %s, want %d", i, got, 2-i)
		}
	}
	// The fourth in the second is refused, whichever node serves it, and
	// does not count.
	wantError(t, get(3), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	wantError(t, get(4), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	// The window slides: one second later the three still count (their
	// 100 ms bucket leaves it 1.1 s after it began).
	clk.advance(time.Second)
	wantError(t, get(0), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	// Then two more make the hour's five.
	clk.advance(100 * time.Millisecond)
	wantStatus(t, get(0), http.StatusOK)
	wantStatus(t, get(1), http.StatusOK)
	rec := get(0)
	wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
	if !strings.Contains(rec.Body.String(), "per hour") {
		t.Errorf("refusal %s does not name the hour window", rec.Body.String())
	}
	// Operators are exempt; other users have their own budget.
	wantStatus(t, serveOn(t, nodes[1], "GET", "/accounts", env.aliceToken, ""), http.StatusOK)
}

// downCounter is a real store's rate counter whose calls fail while down
// is set, as a database that stopped answering.
type downCounter struct {
	engine.RateCounterStore
	down     atomic.Bool
	failures atomic.Int64
}

func (d *downCounter) CountRequest(ctx context.Context, key string, now time.Time, perSecond, perHour int) (engine.RateWindowCount, engine.RateWindowCount, bool, error) {
	if d.down.Load() {
		d.failures.Add(1)
		return engine.RateWindowCount{}, engine.RateWindowCount{}, false, errors.New("database down")
	}
	return d.RateCounterStore.CountRequest(ctx, key, now, perSecond, perHour)
}

func (d *downCounter) PruneRateCounters(ctx context.Context, now time.Time) error {
	if d.down.Load() {
		return errors.New("database down")
	}
	return d.RateCounterStore.PruneRateCounters(ctx, now)
}

// TestRateLimitCounterDownFallsBack: when the counter store fails, the
// node counts in its memory with the same limits, so over-limit requests
// still get 429; the failure is logged once a minute, not per request, and
// counted in a metric; once the store answers again it counts there.
func TestRateLimitCounterDownFallsBack(t *testing.T) {
	env := newTestEnv(t)
	counter := &downCounter{RateCounterStore: openSQLite(t)}
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	metrics, err := prom.New(reg, prom.Config{})
	if err != nil {
		t.Fatal(err)
	}
	clk := &stepClock{t: testNow.Truncate(time.Second).Add(100 * time.Millisecond)}
	srv := newTestServer(t, Config{RateLimit: RateLimitConfig{PerSecond: 3, PerHour: 100, Counter: counter}}, Deps{
		Store: env.store, Sealer: env.server.sealer, Engine: env.engine, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: metrics,
	})
	get := func() *httptest.ResponseRecorder { return serveOn(t, srv, "GET", "/accounts", env.bobToken, "") }
	logged := func() int { return strings.Count(logs.String(), "counting in this node's memory") }
	// Two requests counted in the store.
	wantStatus(t, get(), http.StatusOK)
	wantStatus(t, get(), http.StatusOK)

	counter.down.Store(true)
	// The node's memory allows the limit, three, then refuses.
	for i := range 3 {
		rec := get()
		wantStatus(t, rec, http.StatusOK)
		wantLimitHeaders(t, rec, 3, 2-i, 2)
	}
	for range 3 {
		rec := get()
		wantError(t, rec, http.StatusTooManyRequests, engine.CodeRateLimited, "")
		wantLimitHeaders(t, rec, 3, 0, 2)
		if rec.Header().Get("Retry-After") != "2" {
			t.Errorf("Retry-After = %q, want 2", rec.Header().Get("Retry-After"))
		}
	}
	if n := logged(); n != 1 {
		t.Fatalf("store failure logged %d times in 6 requests, want once:\n%s", n, logs.String())
	}
	// The memory's window slides like the store's.
	clk.advance(1100 * time.Millisecond)
	for range 3 {
		wantStatus(t, get(), http.StatusOK)
	}
	wantError(t, get(), http.StatusTooManyRequests, engine.CodeRateLimited, "")
	clk.advance(time.Minute)
	wantStatus(t, get(), http.StatusOK)
	if n := logged(); n != 2 {
		t.Fatalf("store failure logged %d times after a minute, want twice", n)
	}
	if v := valueIn(t, reg, "txengine_http_rate_limit_fallbacks_total", nil); v != float64(counter.failures.Load()) || v != 11 {
		t.Errorf("fallback metric %v, store failures %d; want 11 each", v, counter.failures.Load())
	}

	// The store answers again: it counts there (its window is empty).
	counter.down.Store(false)
	clk.advance(2 * time.Second)
	rec := get()
	wantStatus(t, rec, http.StatusOK)
	wantLimitHeaders(t, rec, 3, 2, 2)
	if counter.failures.Load() != 11 {
		t.Errorf("store failures %d after it came back", counter.failures.Load())
	}
}

// TestRateLimitCounterClosedStore: a closed store as the counter (every
// call fails) still leaves the limit in force.
func TestRateLimitCounterClosedStore(t *testing.T) {
	env := newTestEnv(t)
	closed, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "closed.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(t, Config{RateLimit: RateLimitConfig{PerSecond: 2, PerHour: 100, Counter: closed}}, Deps{
		Store: env.store, Sealer: env.server.sealer, Engine: env.engine, Clock: fixedClock{testNow},
	})
	wantStatus(t, serveOn(t, srv, "GET", "/accounts", env.bobToken, ""), http.StatusOK)
	wantStatus(t, serveOn(t, srv, "GET", "/accounts", env.bobToken, ""), http.StatusOK)
	wantError(t, serveOn(t, srv, "GET", "/accounts", env.bobToken, ""), http.StatusTooManyRequests, engine.CodeRateLimited, "")
}

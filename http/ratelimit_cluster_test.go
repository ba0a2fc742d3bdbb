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

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// Several nodes of a cluster share one database: these tests run two
// Servers, as two nodes, on one store.

// openSQLite opens a fresh SQLite store for the test.
func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "txengine.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

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
	nodes := []*Server{NewServer(cfg, deps), NewServer(cfg, deps)}
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
	// The next second: two more make the hour's five.
	clk.advance(time.Second)
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

// failingCounter is a rate counter store that is down.
type failingCounter struct{ calls atomic.Int64 }

func (f *failingCounter) CountRequest(context.Context, string, time.Time, time.Time, int, int) (int, int, bool, error) {
	f.calls.Add(1)
	return 0, 0, false, errors.New("database down")
}

func (f *failingCounter) PruneRateCounters(context.Context, time.Time) error {
	return errors.New("database down")
}

// TestRateLimitCounterDownAllows: when the counter store fails, requests
// pass (they meet the store anyway) and the failure is logged.
func TestRateLimitCounterDownAllows(t *testing.T) {
	env := newTestEnv(t)
	counter := &failingCounter{}
	var logs bytes.Buffer
	srv := NewServer(Config{RateLimit: RateLimitConfig{PerSecond: 1, PerHour: 1, Counter: counter}}, Deps{
		Store: env.store, Sealer: env.server.sealer, Engine: env.engine, Clock: fixedClock{testNow},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	for range 3 {
		wantStatus(t, serveOn(t, srv, "GET", "/accounts", env.bobToken, ""), http.StatusOK)
	}
	if counter.calls.Load() != 3 || !strings.Contains(logs.String(), "request allowed") {
		t.Fatalf("counter called %d times; logs %s", counter.calls.Load(), logs.String())
	}
}

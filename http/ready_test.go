package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadyzNamesStaleHead: with MaxHeadAge set, a network whose latest
// block is older than that is not ready, and the body says which and why.
func TestReadyzNamesStaleHead(t *testing.T) {
	env := newTestEnv(t)
	// The fake node's head has timestamp 0: 56 years before testNow.
	env.server.cfg.MaxHeadAge = 100 * 365 * 24 * time.Hour
	wantStatus(t, env.do("GET", "/readyz", "", ""), http.StatusOK)

	env.server.cfg.MaxHeadAge = 2 * time.Minute
	rec := env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	var body struct {
		Error  errorDetail       `json:"error"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Checks["database"] != "ok" || !strings.HasPrefix(body.Checks["network:dev"], "latest block is ") {
		t.Errorf("checks = %v", body.Checks)
	}
	if !strings.Contains(body.Error.Message, "network:dev: latest block is") {
		t.Errorf("message = %q does not name the network", body.Error.Message)
	}
}

// TestReadyzWhileDraining: once Drain is called /readyz says so, /healthz
// stays ok and API routes answer 503 unavailable.
func TestReadyzWhileDraining(t *testing.T) {
	env := newTestEnv(t)
	env.server.Drain()
	rec := env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if !strings.Contains(rec.Body.String(), "shutting down") {
		t.Errorf("body = %s", rec.Body)
	}
	wantStatus(t, env.do("GET", "/healthz", "", ""), http.StatusOK)
	wantError(t, env.do("GET", "/accounts", env.bobToken, ""), http.StatusServiceUnavailable, "unavailable", "")
}

// TestReadyzDatabaseUnreachable: a database that refuses connections is
// reported as the database (not a node) being unreachable, without its
// address.
func TestReadyzDatabaseUnreachable(t *testing.T) {
	env := newTestEnv(t)
	env.store.pingErr = fmt.Errorf("postgres: ping: %w", &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 5432}, Err: errors.New("connect: connection refused")})
	rec := env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if want := "not ready: database: database unreachable: dial: connect: connection refused"; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("body = %s, want it to say %q", rec.Body.String(), want)
	}
	if strings.Contains(rec.Body.String(), "10.9.8.7") {
		t.Errorf("database address leaked: %s", rec.Body.String())
	}
}

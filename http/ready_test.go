package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine/evm"
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
	env.store.failPing(fmt.Errorf("postgres: ping: %w", &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 9, 8, 7), Port: 5432}, Err: errors.New("connect: connection refused")}))
	rec := env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if want := "not ready: database: database unreachable: dial: connect: connection refused"; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("body = %s, want it to say %q", rec.Body.String(), want)
	}
	if strings.Contains(rec.Body.String(), "10.9.8.7") {
		t.Errorf("database address leaked: %s", rec.Body.String())
	}
}

// nodeAt points the test server's network "dev" at a real JSON-RPC client
// of a node served by h, dialled with an API key in its URL path.
func nodeAt(t *testing.T, env *testEnv, h http.HandlerFunc) (url string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url = srv.URL + "/v3/SECRETKEY"
	client, err := evm.Dial(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	env.server.networks["dev"].Chain = client
	return url
}

// readyCheck asks /readyz, wants 503 and returns the check of network:dev,
// after checking that neither the body nor the log names the node's URL.
func readyCheck(t *testing.T, env *testEnv, url string) string {
	t.Helper()
	rec := env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	var body struct {
		Error  errorDetail       `json:"error"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body.Error.Message, "network:dev: "+body.Checks["network:dev"]) {
		t.Errorf("message %q does not carry the check %q", body.Error.Message, body.Checks["network:dev"])
	}
	host := strings.TrimPrefix(url, "http://")
	for _, leak := range []string{"SECRETKEY", host[:strings.Index(host, "/")]} {
		if strings.Contains(rec.Body.String(), leak) || strings.Contains(env.logs.String(), leak) {
			t.Errorf("the node's URL (%s) leaked: body %s", leak, rec.Body.String())
		}
	}
	return body.Checks["network:dev"]
}

// TestReadyzNodeRefusesEveryCall: a node that answers every call with a
// JSON-RPC error (an API key the provider refuses) or an HTTP error status
// is not ready, and /readyz says what the node answered, not where it is.
func TestReadyzNodeRefusesEveryCall(t *testing.T) {
	env := newTestEnv(t)
	url := nodeAt(t, env, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32002,"message":"invalid project id"}}`, req.ID)
	})
	if got, want := readyCheck(t, env, url), "node refused eth_chainId: invalid project id (code -32002)"; got != want {
		t.Errorf("network:dev = %q, want %q", got, want)
	}

	env = newTestEnv(t)
	url = nodeAt(t, env, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized: "+strings.Repeat("x", 1000), http.StatusUnauthorized)
	})
	got := readyCheck(t, env, url)
	if !strings.HasPrefix(got, "401 Unauthorized: unauthorized: xxx") || len(got) > 310 {
		t.Errorf("network:dev = %q, want the node's 401, cut short", got)
	}
}

// TestReadyzWrongChainID: a node that serves another chain than the one
// configured (the URL of another network) is not ready.
func TestReadyzWrongChainID(t *testing.T) {
	env := newTestEnv(t)
	url := nodeAt(t, env, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x7a69"}`, req.ID) // Hardhat's 31337
	})
	if got, want := readyCheck(t, env, url), "the node serves chain id 31337, not the configured 1337"; got != want {
		t.Errorf("network:dev = %q, want %q", got, want)
	}
}

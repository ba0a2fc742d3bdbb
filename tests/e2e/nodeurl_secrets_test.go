package e2e

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/rpcproxy"
)

// TestNodeURLSecretsNeverShown configures a network whose node URLs carry
// a provider's key the three ways providers do: in the user part, in the
// path (`/v3/<key>`) and in the query (`?apikey=`). The HTTP URL reaches a
// real geth through a proxy that accepts any path; the WebSocket URL names
// geth's WebSocket port with a path it does not serve, so the head
// subscription keeps failing and being logged. The service serves (the
// calls go through the proxy), then the proxy resets every connection so
// that /readyz, /networks and the actors see the HTTP client's transport
// errors, which quote the URL. No secret shows in any log line of the run
// (JSON, debug level) nor in any API answer; nor in the refusal of a
// configuration whose URL is invalid.
func TestNodeURLSecretsNeverShown(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and geth")
	}
	node := gethtest.Start(t)
	proxy := rpcproxy.Start(t, node.HTTPURL)
	host := strings.TrimPrefix(proxy.URL(), "http://")
	wsHost := strings.TrimPrefix(node.WSURL, "ws://")
	secrets := []string{"NODEUSER1", "NODEPASS1", "SECRETKEY", "SECRET2", "WSSECRETKEY3", "WSSECRET4"}
	httpURL := "http://NODEUSER1:NODEPASS1@" + host + "/v3/SECRETKEY?apikey=SECRET2"
	wsURL := "ws://" + wsHost + "/v3/WSSECRETKEY3?apikey=WSSECRET4"
	env := []string{
		"TXENGINE_LOG_FORMAT=json", "TXENGINE_LOG_LEVEL=debug",
		"TXENGINE_NETWORK_NAME=geth", "TXENGINE_NETWORK_CHAIN_ID=1337",
		"TXENGINE_NETWORK_HTTP_URL=" + httpURL, "TXENGINE_NETWORK_WS_URL=" + wsURL,
		"TXENGINE_NETWORK_FAUCET_KEY=" + hex.EncodeToString(crypto.FromECDSA(node.FaucetKey)),
		"TXENGINE_MAX_HEAD_AGE=0s",
	}
	s := startService(t, t.TempDir(), env...)
	var answers []string
	record := func(what string, r response) {
		answers = append(answers, what+": "+string(r.Raw))
	}
	op := s.Token
	for _, p := range []string{"/healthz", "/readyz", "/networks", "/accounts/default", "/users/me", "/openapi.json"} {
		record("GET "+p, s.call("GET", p, op, nil))
	}
	u := s.call("POST", "/users", op, map[string]any{"auth": true, "account": true})
	record("POST /users", u)
	if u.Status != 201 {
		t.Fatalf("create user: %d %s", u.Status, u.Raw)
	}
	// Let the head subscription fail a few times (and be logged).
	time.Sleep(3 * time.Second)
	if proxy.Count("eth_chainId") == 0 {
		t.Fatalf("no call went through the proxy: %+v", proxy.Stats())
	}

	// The node's connections now fail: the errors of the HTTP client quote
	// the URL.
	proxy.ResetNext(1_000_000)
	for _, p := range []string{"/readyz", "/networks", "/accounts/default/balance",
		"/contracts/network/geth/gas-price", "/contracts/network/geth/block/latest"} {
		record("GET "+p+" (node failing)", s.call("GET", p, op, nil))
	}
	r := s.call("POST", "/accounts", op, map[string]any{"network": "geth"})
	record("POST /accounts (node failing)", r)
	rz := s.call("GET", "/readyz", "", nil)
	record("GET /readyz again", rz)
	if rz.Status != 503 || !strings.Contains(string(rz.Raw), "network:geth") {
		t.Errorf("/readyz with the node failing: %d %s", rz.Status, rz.Raw)
	}
	time.Sleep(2 * time.Second)
	proxy.ClearFaults()
	s.stop()

	logs := s.Logs()
	if !strings.Contains(logs, "REDACTED") {
		t.Errorf("no redacted URL in the logs: the test did not make the service name its node")
	}
	for _, secret := range secrets {
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("%q in a log line: %s", secret, line)
			}
		}
		for _, a := range answers {
			if strings.Contains(a, secret) {
				t.Errorf("%q in an API answer: %s", secret, a)
			}
		}
	}
	t.Logf("%d log lines and %d answers scanned for %d secrets", strings.Count(logs, "\n"), len(answers), len(secrets))

	// A configuration refused for its URL does not show it either.
	for _, bad := range []string{
		"TXENGINE_NETWORK_HTTP_URL=ftp://NODEUSER1:NODEPASS1@" + host + "/v3/SECRETKEY?apikey=SECRET2",
		"TXENGINE_NETWORK_HTTP_URL=http://" + host + "/v3/SECRETKEY\x7f?apikey=SECRET2",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, binary, "serve")
		cmd.Env = append(append(os.Environ(), "TXENGINE_LISTEN=127.0.0.1:0", "TXENGINE_DATA_DIR="+t.TempDir()), append(env, bad)...)
		out, err := combinedOutput(t, cmd)
		cancel()
		if err == nil || !strings.Contains(string(out), "httpUrl") {
			t.Errorf("bad URL not refused naming httpUrl: %v\n%s", err, out)
		}
		for _, secret := range secrets {
			if strings.Contains(string(out), secret) {
				t.Errorf("%q in the refusal: %s", secret, out)
			}
		}
	}
}

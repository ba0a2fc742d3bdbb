package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/gethtest"
)

// TestGethOutage: a transfer accepted while the node is down completes once
// it is back; the watcher's new-head subscription comes back by itself and
// drives the next transfer.
func TestGethOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and geth")
	}
	node := gethtest.Start(t)
	env := gethEnv(node)
	dir := t.TempDir()
	deployToken(t, dir, env, "geth", "Test Token", "TT", "1000000000000000000000000")
	s := startService(t, dir, env...)
	tok := operatorToken(t, s, "geth")
	id := tok["id"].(string)
	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	to := user["account"].(map[string]any)["address"].(string)
	subscriptions := func() int { return strings.Count(s.Logs(), `msg="subscribed to new heads"`) }
	eventually(t, 10*time.Second, "the watcher subscribes to new heads", func() bool { return subscriptions() == 1 })

	node.Stop()
	down := time.Now()
	r := s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to, "value": "1000"})
	if r.Status != 202 {
		t.Fatalf("transfer while the node is down: %d %s", r.Status, r.Raw)
	}
	txID := r.Body["data"].(map[string]any)["id"].(string)
	time.Sleep(3 * time.Second)
	if st := s.must(200, "GET", "/transactions/"+txID, s.Token, nil).(map[string]any)["status"]; st != "new" && st != "submitted" {
		t.Fatalf("status while the node is down = %v, want new or submitted", st)
	}
	if !strings.Contains(s.Logs(), "new-head subscription lost") {
		t.Fatalf("the watcher did not notice the node going away")
	}

	node.Restart()
	back := time.Now()
	t.Logf("geth down for %s (restart took %s)", back.Sub(down).Round(time.Millisecond), time.Since(down)-3*time.Second)
	done := s.waitTerminal(txID, s.Token, 90*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("transfer accepted during the outage ended %v: %v", done["status"], done["error"])
	}
	t.Logf("transfer accepted during the outage completed %s after geth was back", time.Since(back).Round(time.Millisecond))
	eventually(t, 30*time.Second, "the watcher re-subscribes", func() bool { return subscriptions() >= 2 })
	t.Logf("watcher re-subscribed within %s of geth being back", time.Since(back).Round(time.Millisecond))

	// Subscribed again, the watcher completes the next transfer on new heads
	// (its timer alone would wait 10 poll intervals).
	start := time.Now()
	r = s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to, "value": "2000"})
	if r.Status != 202 {
		t.Fatalf("transfer after the outage: %d %s", r.Status, r.Raw)
	}
	done = s.waitTerminal(r.Body["data"].(map[string]any)["id"].(string), s.Token, 30*time.Second)
	latency := time.Since(start)
	if done["status"] != "completed" || latency > 8*time.Second {
		t.Fatalf("transfer after the outage: %v in %s", done["status"], latency)
	}
	t.Logf("transfer after the outage completed in %s", latency.Round(time.Millisecond))
	if got := s.must(200, "GET", "/tokens/"+id+"/balances/"+to, s.Token, nil); got != "3000" {
		t.Fatalf("recipient balance = %v, want 3000", got)
	}
}

// TestGethChainIDMismatch: a configured chain id that is not the node's
// stops the start with both ids and the network's name.
func TestGethChainIDMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and geth")
	}
	node := gethtest.Start(t)
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(append(os.Environ(), "TXENGINE_LISTEN=127.0.0.1:0", "TXENGINE_DATA_DIR="+t.TempDir()), gethEnv(node)...)
	cmd.Env = append(cmd.Env, "TXENGINE_NETWORK_CHAIN_ID=5")
	out, err := combinedOutput(t, cmd)
	if err == nil {
		t.Fatalf("serve started with a wrong chain id:\n%s", out)
	}
	if want := "network geth: the node's chain id is 1337 but chainId 5 is configured"; !strings.Contains(string(out), want) {
		t.Fatalf("output %q does not say %q", out, want)
	}
}

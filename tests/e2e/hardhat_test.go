package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/hardhattest"
)

// hardhatEnv points the service at node as network "hardhat" (http for
// calls, ws on the same port for new heads), paying gas from Hardhat's
// account #0.
func hardhatEnv(node *hardhattest.Node) []string {
	return []string{
		"TXENGINE_NETWORK_NAME=hardhat",
		"TXENGINE_NETWORK_CHAIN_ID=31337",
		"TXENGINE_NETWORK_HTTP_URL=" + node.HTTPURL,
		"TXENGINE_NETWORK_WS_URL=" + node.WSURL,
		"TXENGINE_NETWORK_FAUCET_KEY=" + hardhattest.FaucetKeyHex,
	}
}

// TestHardhatQuickStart follows the quick start of docs/running.md ("Hardhat's
// node") against Hardhat's node as a new user would: `txengine token deploy` on the network, serve,
// a user with an account, a transfer from the operator's default account
// that completes with its Transfer event, and the balances moved.
func TestHardhatQuickStart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and Hardhat's node")
	}
	node := hardhattest.Start(t)
	dir := t.TempDir()
	env := hardhatEnv(node)
	const supply = "1000000000000000000000000"
	holder := deployToken(t, dir, env, "hardhat", "Demo Token", "DEMO", supply)
	s := startService(t, dir, env...)

	tok := operatorToken(t, s, "hardhat")
	id := tok["id"].(string)
	if p := tok["parameters"].(map[string]any); p["symbol"] != "DEMO" || p["supply"] != supply {
		t.Fatalf("token parameters: %v", p)
	}
	op := s.must(200, "GET", "/accounts/default", s.Token, nil).(map[string]any)
	if !strings.EqualFold(op["address"].(string), holder.Hex()) {
		t.Fatalf("operator's default account %v, token deploy said %s", op["address"], holder.Hex())
	}

	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	to := user["account"].(map[string]any)["address"].(string)
	const value = "1500000000000000000" // 1.5 DEMO
	created := s.must(202, "POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to, "value": value}).(map[string]any)
	if created["status"] != "new" || created["network"] != "hardhat" {
		t.Fatalf("created: %v", created)
	}
	done := s.waitTerminal(created["id"].(string), s.Token, 60*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("transfer ended %v: %v", done["status"], done["error"])
	}
	events, _ := done["events"].([]any)
	if len(events) != 1 {
		t.Fatalf("events = %v", done["events"])
	}
	if ev := events[0].(map[string]any); ev["event"] != "Transfer" || ev["returnValues"].(map[string]any)["value"] != value {
		t.Fatalf("event = %v", ev)
	}
	if got := s.must(200, "GET", "/tokens/"+id+"/balances/"+to, s.Token, nil); got != value {
		t.Fatalf("recipient balance = %v, want %s", got, value)
	}
	// The chain agrees: the transaction is in the block the service reports.
	var receipt map[string]any
	if err := node.Call(t.Context(), &receipt, "eth_getTransactionReceipt", done["transactionHash"]); err != nil || receipt == nil || receipt["status"] != "0x1" {
		t.Fatalf("node's receipt of %v: %v, %v", done["transactionHash"], receipt, err)
	}
}

package e2e

import (
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// operatorToken returns the only token registered to the operator, which
// must be an ERC-20 on network.
func operatorToken(t *testing.T, s *service, network string) map[string]any {
	t.Helper()
	tokens := s.must(200, "GET", "/tokens", s.Token, nil).([]any)
	if len(tokens) != 1 {
		t.Fatalf("operator has %d tokens, want 1: %v", len(tokens), tokens)
	}
	tok := tokens[0].(map[string]any)
	if tok["network"] != network || tok["type"] != "erc20" {
		t.Fatalf("operator's token: %v, want an erc20 on %s", tok, network)
	}
	return tok
}

// demoToken returns the demo token that the embedded default registers to
// the operator.
func demoToken(t *testing.T, s *service) map[string]any {
	t.Helper()
	return operatorToken(t, s, "dev")
}

func bigOf(t *testing.T, v any) *big.Int {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v (%T) is not a decimal string", v, v)
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("%q is not a decimal string", s)
	}
	return n
}

// TestTransferLifecycle follows the README on every backend: a transfer
// from the operator's default account to a new user's account reaches
// completed with its Transfer event, balances move, and everything survives a
// restart of the service.
func TestTransferLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { testTransferLifecycle(t, b) })
	}
}

func testTransferLifecycle(t *testing.T, b backend) {
	dir := t.TempDir()
	d := b.setup(t, dir)
	symbol, network := d.symbol, b.network
	s := d.start(t, dir)

	tok := operatorToken(t, s, network)
	id := tok["id"].(string)
	params := tok["parameters"].(map[string]any)
	supply := bigOf(t, params["supply"])
	if params["symbol"] != symbol || params["decimals"] != float64(18) || supply.Sign() <= 0 {
		t.Fatalf("token parameters: %v", params)
	}
	opAcct := s.must(200, "GET", "/accounts/default", s.Token, nil).(map[string]any)
	if bigOf(t, s.must(200, "GET", "/tokens/"+id+"/balances/default", s.Token, nil)).Cmp(supply) != 0 {
		t.Fatalf("operator's default account does not hold the supply")
	}

	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	userToken := user["token"].(string)
	userAcct := user["account"].(map[string]any)
	to := userAcct["address"].(string)
	if userAcct["defaultAccount"] != true || user["owner"] == nil {
		t.Fatalf("created user: %v", user)
	}

	r := s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": strings.ToLower(to), "value": "1234500"})
	if r.Status != 202 {
		t.Fatalf("transfer: %d %s", r.Status, r.Raw)
	}
	if r.Header.Get("X-API-Version") != "1.2.1" || r.Header.Get("X-Request-Id") == "" {
		t.Fatalf("headers: %v", r.Header)
	}
	created := r.Body["data"].(map[string]any)
	for k, want := range map[string]any{"status": "new", "type": "contract-method", "method": "transfer", "contractId": id, "from": opAcct["address"], "network": network} {
		if created[k] != want {
			t.Errorf("created %s = %v, want %v", k, created[k], want)
		}
	}
	if p := created["parameters"].([]any); len(p) != 2 || p[0] != to || p[1] != "1234500" {
		t.Errorf("parameters = %v, want [%s 1234500]", p, to)
	}
	if !timestampRE.MatchString(created["created"].(string)) {
		t.Errorf("created = %v", created["created"])
	}

	// Another user does not see the operator's transaction.
	s.must(404, "GET", "/transactions/"+created["id"].(string), userToken, nil)

	done := s.waitTerminal(created["id"].(string), s.Token, 60*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("transaction ended %v: %v", done["status"], done["error"])
	}
	for _, k := range []string{"submitted", "ended"} {
		if v, _ := done[k].(string); !timestampRE.MatchString(v) {
			t.Errorf("%s = %v", k, done[k])
		}
	}
	if h, _ := done["transactionHash"].(string); len(h) != 66 {
		t.Errorf("transactionHash = %v", done["transactionHash"])
	}
	if n, _ := done["blockNumber"].(float64); n < 1 {
		t.Errorf("blockNumber = %v", done["blockNumber"])
	}
	events := done["events"].([]any)
	if len(events) != 1 {
		t.Fatalf("events = %v", events)
	}
	ev := events[0].(map[string]any)
	rv := ev["returnValues"].(map[string]any)
	if ev["event"] != "Transfer" || rv["from"] != opAcct["address"] || rv["to"] != to || rv["value"] != "1234500" || ev["address"] != tok["address"] {
		t.Errorf("event = %v", ev)
	}

	if got := s.must(200, "GET", "/tokens/"+id+"/balances/"+to, s.Token, nil); got != "1234500" {
		t.Errorf("recipient balance = %v", got)
	}
	rest := new(big.Int).Sub(supply, big.NewInt(1234500))
	if got := bigOf(t, s.must(200, "GET", "/tokens/"+id+"/balances/default", s.Token, nil)); got.Cmp(rest) != 0 {
		t.Errorf("sender balance = %s, want %s", got, rest)
	}

	// A clean restart keeps users, accounts, transactions and the chain.
	s.stop()
	if b, err := os.ReadFile(filepath.Join(dir, "operator.token")); err != nil || strings.TrimSpace(string(b)) != s.Token {
		t.Fatalf("operator.token = %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "master.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("master.key: %v %v", fi, err)
	}
	s2 := d.start(t, dir)
	if s2.Token != s.Token {
		t.Fatalf("operator token changed across restart")
	}
	again := s2.must(200, "GET", "/transactions/"+created["id"].(string), s2.Token, nil).(map[string]any)
	if again["status"] != "completed" || again["transactionHash"] != done["transactionHash"] {
		t.Fatalf("after restart: %v", again)
	}
	if got := s2.must(200, "GET", "/accounts/default", userToken, nil).(map[string]any); got["address"] != to {
		t.Fatalf("user's default account after restart = %v", got)
	}
	if got := s2.must(200, "GET", "/tokens/"+id+"/balances/"+to, s2.Token, nil); got != "1234500" {
		t.Errorf("recipient balance after restart = %v", got)
	}
}

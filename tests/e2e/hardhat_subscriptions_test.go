package e2e

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/hardhattest"
)

// TestHardhatSubscriptionReorg: on a node that reorgs, a subscription with
// no confirmations delivers a transfer's log, then, when a reorg takes its
// block back (evm_revert to a snapshot and a longer chain of other
// blocks), a delivery of the same log with removed: true, then the log of
// the block that mines the transaction again: to pull clients and to the
// callback, in that order, numbered without gaps.
func TestHardhatSubscriptionReorg(t *testing.T) {
	r := hhStart(t, hhOpts{confirmations: 0, rebroadcast: 2, replace: 6})
	x := hhAddress()
	const subPath = "/sub"
	subID := r.s.must(201, "POST", "/subscriptions", r.s.Token, map[string]any{
		"contractId": r.token, "event": "Transfer", "filters": map[string]any{"to": x},
		"callbacks": []string{r.rc.URL + subPath}, "confirmations": 0,
	}).(map[string]any)["id"].(string)

	// blockOf is the block hash of a completed transfer (of its event).
	blockOf := func(tx map[string]any) any {
		evs, _ := tx["events"].([]any)
		if len(evs) == 0 {
			return nil
		}
		return evs[0].(map[string]any)["blockHash"]
	}
	snap := r.node.Snapshot()
	forkAt := r.node.Head()
	id := r.send(r.operator, x, big.NewInt(7), nil)
	first := r.waitAll([]string{id}, 60*time.Second, "the transfer completed", func(tx map[string]any) bool { return tx["status"] == "completed" })[id]
	var evs []map[string]any
	eventually(t, 30*time.Second, "the delivery", func() bool {
		evs, _ = pullEvents(t, r.s, r.s.Token, subID, "", 100)
		return len(evs) == 1
	})
	if evs[0]["blockHash"] != blockOf(first) || evs[0]["removed"] != false {
		t.Fatalf("delivery %v; the transfer is in block %v", evs[0], blockOf(first))
	}

	r.node.Revert(snap)
	r.mineEach(3)
	if rec := r.receipt(first["transactionHash"].(string)); rec != nil {
		t.Fatalf("the transfer is still mined after the reorg: %v", rec)
	}
	t.Logf("reorg at block %d: block %d (%v) replaced, head %d", forkAt, forkAt+1, blockOf(first), r.node.Head())
	r.node.SetIntervalMining(300)
	again := r.waitAll([]string{id}, 90*time.Second, "the transfer completed again", func(tx map[string]any) bool {
		return tx["status"] == "completed" && blockOf(tx) != blockOf(first)
	})[id]
	eventually(t, 30*time.Second, "the retraction and the new delivery", func() bool {
		evs, _ = pullEvents(t, r.s, r.s.Token, subID, "", 100)
		return len(evs) >= 3
	})
	time.Sleep(time.Second)
	evs, _ = pullEvents(t, r.s, r.s.Token, subID, "", 100)
	wantSequence(t, subID, evs)
	if len(evs) != 3 {
		t.Fatalf("%d deliveries, want 3 (log, removed, log again): %v", len(evs), evs)
	}
	removed, redo := evs[1], evs[2]
	if removed["removed"] != true || removed["blockHash"] != evs[0]["blockHash"] || removed["transactionHash"] != evs[0]["transactionHash"] ||
		removed["logIndex"] != evs[0]["logIndex"] || removed["id"] == evs[0]["id"] {
		t.Fatalf("retraction %v of delivery %v", removed, evs[0])
	}
	if redo["removed"] != false || redo["blockHash"] != blockOf(again) || !strings.EqualFold(redo["transactionHash"].(string), again["transactionHash"].(string)) {
		t.Fatalf("new delivery %v; the transfer is now in block %v", redo, blockOf(again))
	}
	eventually(t, 30*time.Second, "three callbacks", func() bool { return len(dedupe(eventCallbacks(t, r.rc, r.secret, subPath))) == 3 })
	for i, ev := range dedupe(eventCallbacks(t, r.rc, r.secret, subPath)) {
		if ev["id"] != evs[i]["id"] || ev["removed"] != evs[i]["removed"] {
			t.Fatalf("callback %d is %v, want %v", i+1, ev, evs[i])
		}
	}
}

// TestTwoNetworks: one service on two chains with different chain ids
// (geth --dev, 1337, and Hardhat's node, 31337), configured in one YAML
// file: a token deployed on each, a user's account that holds tokens on
// both, transfers on both, and per network an events subscription (to a
// callback) and the user's deposits subscription (pulled), each seeing
// only its own network's logs.
func TestTwoNetworks(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary, geth and Hardhat's node")
	}
	geth, hh := gethtest.Start(t), hardhattest.Start(t)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "txengine.yaml")
	yaml := fmt.Sprintf(`networks:
  - name: geth
    chainId: 1337
    httpUrl: %s
    wsUrl: %s
    faucetKey: %q
  - name: hardhat
    chainId: %d
    httpUrl: %s
    wsUrl: %s
    faucetKey: %q
`, geth.HTTPURL, geth.WSURL, hex.EncodeToString(crypto.FromECDSA(geth.FaucetKey)),
		hardhattest.ChainID, hh.HTTPURL, hh.WSURL, hardhattest.FaucetKeyHex)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg}
	const supply = "1000000000000000000000000"
	gethHolder := deployTokenArgs(t, dir, nil, args, "geth", "Geth Token", "GT", supply)
	hhHolder := deployTokenArgs(t, dir, nil, args, "hardhat", "Hardhat Token", "HT", supply)
	if gethHolder != hhHolder {
		t.Fatalf("the operator's default account differs per network: %s, %s", gethHolder, hhHolder)
	}
	s := startServiceArgs(t, dir, args, "TXENGINE_CALLBACKS_ALLOW_PRIVATE=true")
	secret := s.must(200, "GET", "/users/me", s.Token, nil).(map[string]any)["callbackSecret"].(string)
	tokens := map[string]map[string]any{}
	for _, tk := range s.must(200, "GET", "/tokens", s.Token, nil).([]any) {
		tok := tk.(map[string]any)
		tokens[tok["network"].(string)] = tok
	}
	if len(tokens) != 2 || tokens["geth"] == nil || tokens["hardhat"] == nil {
		t.Fatalf("operator's tokens: %v", tokens)
	}
	nets := s.must(200, "GET", "/networks", s.Token, nil)
	if b, _ := json.Marshal(nets); !strings.Contains(string(b), "31337") || !strings.Contains(string(b), "1337") {
		t.Fatalf("GET /networks: %s", b)
	}

	rc := newHookReceiver(t, func(string, int) int { return http.StatusOK })
	user := s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	userTok := user["token"].(string)
	acct := user["account"].(map[string]any)["address"].(string)
	deposits, events := map[string]string{}, map[string]string{}
	for net, tok := range tokens {
		deposits[net] = s.must(201, "POST", "/subscriptions", userTok, map[string]any{"kind": "deposits", "network": net}).(map[string]any)["id"].(string)
		events[net] = s.must(201, "POST", "/subscriptions", s.Token, map[string]any{
			"contractId": tok["id"], "event": "Transfer", "callbacks": []string{rc.URL + "/" + net},
		}).(map[string]any)["id"].(string)
	}
	values := map[string]string{"geth": "11", "hardhat": "22"}
	hashes := map[string]string{}
	for net, tok := range tokens {
		tx := s.must(202, "POST", "/tokens/"+tok["id"].(string)+"/transfers", s.Token, map[string]any{"to": acct, "value": values[net]}).(map[string]any)
		hashes[net] = tx["id"].(string)
	}
	for net, id := range hashes {
		tx := s.waitTerminal(id, s.Token, 90*time.Second)
		if tx["status"] != "completed" || tx["network"] != net {
			t.Fatalf("transfer on %s ended %v on %v: %v", net, tx["status"], tx["network"], tx["error"])
		}
		hashes[net] = strings.ToLower(tx["transactionHash"].(string))
		bal := s.must(200, "GET", "/tokens/"+tokens[net]["id"].(string)+"/balances/"+strings.ToLower(acct), s.Token, nil)
		if bal != values[net] {
			t.Fatalf("the account holds %v on %s, want %s", bal, net, values[net])
		}
	}
	for net := range tokens {
		var evs []map[string]any
		eventually(t, 60*time.Second, "the deposit on "+net, func() bool {
			evs, _ = pullEvents(t, s, userTok, deposits[net], "", 100)
			return len(evs) >= 1
		})
		rv := evs[0]["returnValues"].(map[string]any)
		if len(evs) != 1 || evs[0]["network"] != net || fmt.Sprint(rv["value"]) != values[net] ||
			strings.ToLower(evs[0]["transactionHash"].(string)) != hashes[net] {
			t.Fatalf("deposits on %s: %v", net, evs)
		}
		eventually(t, 60*time.Second, "the event callback on "+net, func() bool {
			for _, ev := range eventCallbacks(t, rc, secret, "/"+net) {
				if strings.ToLower(ev["transactionHash"].(string)) == hashes[net] {
					return true
				}
			}
			return false
		})
		for _, ev := range eventCallbacks(t, rc, secret, "/"+net) {
			if ev["network"] != net || ev["subscriptionId"] != events[net] {
				t.Fatalf("callback at /%s: %v", net, ev)
			}
		}
	}
}

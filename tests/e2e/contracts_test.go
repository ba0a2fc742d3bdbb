package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// txCount returns how many transactions the caller has (all pages).
func txCount(t *testing.T, s *service, token string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		r := s.call("GET", "/transactions?limit=1000"+cursor, token, nil)
		if r.Status != 200 {
			t.Fatalf("list transactions: %d %s", r.Status, r.Raw)
		}
		n += len(r.Body["data"].([]any))
		next, _ := r.Body["next"].(string)
		if next == "" {
			return n
		}
		cursor = "&cursor=" + next
	}
}

// wantError checks status, code and field of an error response.
func wantError(t *testing.T, r response, status int, code, field string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	if r.Status != status || e == nil || e["code"] != code || (e["field"] != nil || field != "") && e["field"] != field {
		t.Errorf("got %d %s, want %d %s field %q", r.Status, r.Raw, status, code, field)
	}
}

// TestContractsAndTransactions drives the contract and transaction
// endpoints on the embedded dev chain and on geth with the operator's
// token: registration by type and by ABI, sends and reads, batch calls,
// events, blocks, gas prices, direct use, transaction listing,
// cancellation, and refused input that stores nothing.
func TestContractsAndTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range apiBackends() {
		t.Run(b.name, func(t *testing.T) { testContractsAndTransactions(t, b) })
	}
}

func testContractsAndTransactions(t *testing.T, b backend) {
	dir := t.TempDir()
	d := b.setup(t, dir)
	s := d.start(t, dir)
	net := b.network
	op := s.Token
	tok := operatorToken(t, s, net)
	tokenAddr := tok["address"].(string)
	tokContract := s.must(200, "GET", "/contracts/"+tok["id"].(string), op, nil).(map[string]any)
	if tokContract["bwtype"] != "erc20" || tokContract["bwver"] != "1" {
		t.Fatalf("token contract: %v", tokContract)
	}
	opAddr := s.must(200, "GET", "/accounts/default", op, nil).(map[string]any)["address"].(string)
	user := s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true}).(map[string]any)
	userToken := user["token"].(string)
	to := user["account"].(map[string]any)["address"].(string)

	// Register the operator's token again: by type and by raw ABI.
	typed := s.must(201, "PUT", "/contracts", op, map[string]any{"name": "Typed", "network": net, "address": strings.ToLower(tokenAddr), "type": "erc20"}).(map[string]any)
	raw := s.must(201, "PUT", "/contracts", op, map[string]any{"name": "Raw ABI", "network": net, "address": tokenAddr, "abi": tokContract["abi"]}).(map[string]any)
	if typed["address"] != tokenAddr || typed["bwtype"] != "erc20" || raw["bwtype"] != nil || !timestampRE.MatchString(typed["created"].(string)) {
		t.Fatalf("registered: %v / %v", typed, raw)
	}
	if l := s.must(200, "GET", "/contracts?text=raw%20abi&network="+net, op, nil).([]any); len(l) != 1 {
		t.Fatalf("text search: %v", l)
	}
	if r := s.call("GET", "/contracts/"+typed["id"].(string), userToken, nil); r.Status != 404 {
		t.Fatalf("foreign contract: %d", r.Status)
	}
	before := txCount(t, s, op)

	// Sends: transfer by type, approve by raw ABI, transfer directly.
	send := func(path string, body map[string]any) map[string]any {
		t.Helper()
		tx := s.must(202, "POST", path, op, body).(map[string]any)
		if tx["status"] != "new" || tx["type"] != "contract-method" {
			t.Fatalf("send %s: %v", path, tx)
		}
		return tx
	}
	transfer := send("/contracts/"+typed["id"].(string)+"/send/transfer", map[string]any{"arg": []any{to, "1000"}})
	approve := send("/contracts/"+raw["id"].(string)+"/send/approve(address,uint256)", map[string]any{"arg": []any{to, "500"}, "dependsOn": []any{transfer["id"]}})
	direct := send("/contracts/network/"+net+"/address/"+tokenAddr+"/send/transfer", map[string]any{"arg": []any{to, 3}, "type": "erc20"})
	if direct["contractId"] != nil || direct["contractAddress"] != tokenAddr || approve["dependsOn"].([]any)[0] != transfer["id"] {
		t.Fatalf("direct: %v; approve: %v", direct, approve)
	}
	events := map[string]string{}
	var transferBlock float64
	for _, tx := range []map[string]any{transfer, approve, direct} {
		done := s.waitTerminal(tx["id"].(string), op, 30*time.Second)
		evs := done["events"].([]any)
		if done["status"] != "completed" || len(evs) != 1 {
			t.Fatalf("transaction %s: %v", tx["method"], done)
		}
		ev := evs[0].(map[string]any)
		events[tx["id"].(string)] = ev["event"].(string)
		if tx["id"] == transfer["id"] {
			transferBlock = done["blockNumber"].(float64)
			if ev["returnValues"].(map[string]any)["to"] != to || ev["transactionHash"] != done["transactionHash"] {
				t.Fatalf("transfer event: %v", ev)
			}
		}
	}
	if events[transfer["id"].(string)] != "Transfer" || events[approve["id"].(string)] != "Approval" || events[direct["id"].(string)] != "Transfer" {
		t.Fatalf("events: %v", events)
	}

	// Reads: single calls and one batch.
	if b := s.must(200, "POST", "/contracts/"+typed["id"].(string)+"/call/balanceOf", op, map[string]any{"arg": to}); b != "1003" {
		t.Fatalf("balanceOf: %v", b)
	}
	if a := s.must(200, "POST", "/contracts/"+raw["id"].(string)+"/call/allowance", op, map[string]any{"arg": []any{opAddr, to}}); a != "500" {
		t.Fatalf("allowance: %v", a)
	}
	if sym := s.must(200, "POST", "/contracts/network/"+net+"/address/"+tokenAddr+"/call/symbol", op, map[string]any{"type": "erc20"}); sym != d.symbol {
		t.Fatalf("symbol: %v", sym)
	}
	// A revert of a read is the caller's problem: transfer more than the user holds.
	wantError(t, s.call("POST", "/contracts/"+typed["id"].(string)+"/call/transfer", op, map[string]any{"arg": []any{opAddr, "1000000"}, "from": to}), 400, "invalid_argument", "arg")
	batch := s.must(200, "POST", "/contracts/call", op, map[string]any{"calls": []any{
		map[string]any{"contractId": typed["id"], "method": "balanceOf", "arg": []any{to}},
		map[string]any{"network": net, "address": tokenAddr, "type": "erc20", "method": "allowance", "arg": []any{opAddr, to}},
		map[string]any{"contractId": typed["id"], "method": "nope"},
		map[string]any{"network": net, "address": tokenAddr, "abi": tokContract["abi"], "method": "decimals"},
	}}).([]any)
	if len(batch) != 4 || batch[0].(map[string]any)["result"] != "1003" || batch[1].(map[string]any)["result"] != "500" ||
		batch[2].(map[string]any)["error"].(map[string]any)["field"] != "method" || batch[3].(map[string]any)["result"] != "18" {
		t.Fatalf("batch: %v", batch)
	}

	// Events of the contract, blocks and gas prices.
	// No query: every Transfer of the token, the mint at its deployment
	// (before its registration) first, oldest first, ours last.
	evs := s.must(200, "GET", "/contracts/"+typed["id"].(string)+"/events?event=Transfer", op, nil).([]any)
	if len(evs) < 3 {
		t.Fatalf("all Transfer events: %v", evs)
	}
	first, prev := evs[0].(map[string]any), -1.0
	if first["returnValues"].(map[string]any)["from"] != "0x0000000000000000000000000000000000000000" {
		t.Fatalf("the first Transfer is not the mint: %v", first)
	}
	for _, e := range evs {
		ev := e.(map[string]any)
		if ev["event"] != "Transfer" || ev["blockNumber"].(float64) < prev {
			t.Fatalf("Transfer events not oldest first: %v", evs)
		}
		prev = ev["blockNumber"].(float64)
	}
	value := func(i int) any { return evs[i].(map[string]any)["returnValues"].(map[string]any)["value"] }
	if last := fmt.Sprintf("%v %v", value(len(evs)-2), value(len(evs)-1)); last != "1000 3" && last != "3 1000" {
		t.Fatalf("our transfers are not the last events: %v", evs)
	}
	all := s.must(200, "GET", fmt.Sprintf("/contracts/%s/events?fromBlock=0&toBlock=%d", typed["id"], int(transferBlock)), op, nil).([]any)
	if len(all) < 2 { // the mint at deployment and our transfer, at least
		t.Fatalf("events from block 0 to %d: %v", int(transferBlock), all)
	}
	wantError(t, s.call("GET", "/contracts/"+typed["id"].(string)+"/events?event=Nope", op, nil), 400, "invalid_argument", "event")
	wantError(t, s.call("GET", "/contracts/"+typed["id"].(string)+"/events?toBlock=soon", op, nil), 400, "invalid_argument", "toBlock")
	latest := s.must(200, "GET", "/contracts/network/"+net+"/block/latest", op, nil).(map[string]any)
	blk := s.must(200, "GET", fmt.Sprintf("/contracts/network/"+net+"/block/%d", int(transferBlock)), op, nil).(map[string]any)
	if latest["number"].(float64) < transferBlock || blk["transactionCount"].(float64) < 1 || !timestampRE.MatchString(blk["timestamp"].(string)) || blk["baseFeePerGas"] == nil {
		t.Fatalf("blocks: %v / %v", latest, blk)
	}
	wantError(t, s.call("GET", "/contracts/network/"+net+"/block/99999999", op, nil), 404, "not_found", "number")
	wantError(t, s.call("GET", "/contracts/network/moon/gas-price", op, nil), 404, "not_found", "network")
	gas := s.must(200, "GET", "/contracts/network/"+net+"/gas-price", op, nil).(map[string]any)
	if bigOf(t, gas["maxFeePerGas"]).Cmp(bigOf(t, gas["baseFeePerGas"])) < 0 || gas["gasPrice"] == nil || gas["maxPriorityFeePerGas"] == nil {
		t.Fatalf("gas price: %v", gas)
	}

	// Listing: filters and pages.
	if n := txCount(t, s, op); n != before+3 {
		t.Fatalf("transactions: %d, want %d", n, before+3)
	}
	if l := s.must(200, "GET", "/transactions?method=approve", op, nil).([]any); len(l) != 1 || l[0].(map[string]any)["id"] != approve["id"] {
		t.Fatalf("method filter: %v", l)
	}
	if l := s.must(200, "GET", "/transactions?contractId="+typed["id"].(string)+"&status=completed&from="+strings.ToLower(opAddr), op, nil).([]any); len(l) != 1 {
		t.Fatalf("contract filter: %v", l)
	}
	var ids []string
	cursor := ""
	for {
		r := s.call("GET", "/transactions?sort=created&limit=1"+cursor, op, nil)
		for _, tx := range r.Body["data"].([]any) {
			ids = append(ids, tx.(map[string]any)["id"].(string))
		}
		next, _ := r.Body["next"].(string)
		if next == "" {
			break
		}
		cursor = "&cursor=" + next
	}
	if len(ids) != before+3 || ids[len(ids)-1] != direct["id"] {
		t.Fatalf("pages oldest first: %v", ids)
	}
	if l := s.must(200, "GET", "/transactions", userToken, nil).([]any); len(l) != 0 {
		t.Fatalf("the user sees the operator's transactions: %v", l)
	}

	// Cancel: completed is a conflict; others' transactions are not found.
	wantError(t, s.call("DELETE", "/transactions/"+transfer["id"].(string), op, nil), 409, "conflict", "")
	wantError(t, s.call("DELETE", "/transactions/"+transfer["id"].(string), userToken, nil), 404, "not_found", "")

	// Refused input stores nothing.
	typedSend := "/contracts/" + typed["id"].(string) + "/send/"
	for _, tt := range []struct {
		path   string
		body   any
		status int
		code   string
		field  string
	}{
		{typedSend + "transfer", map[string]any{"arg": []any{to}}, 400, "invalid_argument", "arg"},
		{typedSend + "transfer", map[string]any{"arg": []any{to, "1.5"}}, 400, "invalid_argument", "arg[1]"},
		{typedSend + "transfer", map[string]any{"arg": []any{to, "1"}, "value": "1"}, 400, "invalid_argument", "value"},
		{typedSend + "transfer", map[string]any{"arg": []any{to, "1"}, "waitForAsset": "ETH"}, 400, "invalid_argument", "waitForValue"},
		{typedSend + "transfer", map[string]any{"arg": []any{to, "1"}, "dependsOn": []any{"00000000-0000-4000-8000-000000000001"}}, 404, "not_found", "dependsOn"},
		{typedSend + "transfer", map[string]any{"arg": []any{to, "1"}, "from": to}, 404, "not_found", "from"},
		{typedSend + "mintAll", map[string]any{"arg": []any{}}, 404, "not_found", "method"},
		{typedSend + "transfer", `{"arg":`, 400, "invalid_json", ""},
		{"/contracts/network/" + net + "/address/" + tokenAddr + "/send/transfer", map[string]any{"arg": []any{to, "1"}}, 400, "invalid_argument", "abi"},
		{"/contracts/network/moon/address/" + tokenAddr + "/send/transfer", map[string]any{"arg": []any{to, "1"}, "type": "erc20"}, 404, "not_found", "network"},
		{"/tokens/" + tok["id"].(string) + "/transfers", map[string]any{"to": to, "value": "1", "waitForValue": "1"}, 400, "invalid_argument", "waitForAsset"},
	} {
		wantError(t, s.call("POST", tt.path, op, tt.body), tt.status, tt.code, tt.field)
	}
	contracts := len(s.must(200, "GET", "/contracts", op, nil).([]any))
	for _, body := range []map[string]any{
		{"name": "x", "network": "moon", "address": tokenAddr, "type": "erc20"},
		{"name": "x", "network": net, "address": tokenAddr},
		{"name": "x", "network": net, "address": tokenAddr, "type": "erc20", "abi": []any{}},
	} {
		r := s.call("PUT", "/contracts", op, body)
		if r.Status != 400 {
			t.Errorf("PUT /contracts %v: %d %s", body, r.Status, r.Raw)
		}
	}
	if n := txCount(t, s, op); n != before+3 {
		t.Fatalf("refused requests stored transactions: %d, want %d", n, before+3)
	}
	if l := s.must(200, "GET", "/contracts", op, nil).([]any); len(l) != contracts {
		t.Fatalf("refused registrations stored contracts: %d", len(l))
	}
}

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTokenInfoSupplyAndHistory drives the network token endpoints (info,
// supply, circulating as text/plain), the transfer history served from the
// service's own index, and idempotent transfers, through the real binary,
// on the embedded dev chain and on geth.
func TestTokenInfoSupplyAndHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	for _, b := range apiBackends() {
		t.Run(b.name, func(t *testing.T) { testTokenInfoSupplyAndHistory(t, b) })
	}
}

func testTokenInfoSupplyAndHistory(t *testing.T, b backend) {
	dir := t.TempDir()
	d := b.setup(t, dir)
	s := d.start(t, dir)
	net := b.network
	tok := operatorToken(t, s, net)
	id, addr := tok["id"].(string), tok["address"].(string)

	info := s.must(200, "GET", "/tokens/"+net+"/"+strings.ToLower(addr), s.Token, nil).(map[string]any)
	if info["network"] != net || info["address"] != addr || info["symbol"] != d.symbol || info["decimals"] != float64(18) ||
		info["name"] != d.tokenName || info["totalSupply"] != "1000000000000000000000000" {
		t.Fatalf("token info: %v", info)
	}
	plain := func(path string) string {
		t.Helper()
		r := s.call("GET", path, s.Token, nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("%s: %d %s %s", path, r.Status, r.Header.Get("Content-Type"), r.Raw)
		}
		return string(r.Raw)
	}
	if got := plain("/tokens/" + net + "/" + addr + "/supply"); got != "1000000" {
		t.Fatalf("supply = %q", got)
	}
	// The operator's default account holds the network's System NFT and the
	// whole supply: nothing circulates yet (once the NFT is indexed).
	eventually(t, 30*time.Second, "circulating 0", func() bool { return plain("/tokens/"+net+"/"+addr+"/circulating") == "0" })

	// Bad inputs.
	wantErr(t, s.call("GET", "/tokens/"+net+"/0x1234", s.Token, nil), 400, "invalid_argument", "address")
	wantErr(t, s.call("GET", "/tokens/nope/"+addr, s.Token, nil), 404, "not_found", "")
	wantErr(t, s.call("GET", "/tokens/"+net+"/0x000000000000000000000000000000000000dEaD/supply", s.Token, nil), 404, "not_found", "address")
	wantErr(t, s.call("GET", "/tokens/"+net+"/"+addr+"/supply", "", nil), 401, "unauthenticated", "")

	users := make([]map[string]any, 2)
	for i := range users {
		users[i] = s.must(201, "POST", "/users", s.Token, map[string]any{"auth": true, "account": true}).(map[string]any)
	}
	to1 := users[0]["account"].(map[string]any)["address"].(string)
	to2 := users[1]["account"].(map[string]any)["address"].(string)

	// Three transfers to user 0: 1.5, 0.25 tokens and 1 wei.
	var ids []string
	for _, v := range []string{"1500000000000000000", "250000000000000000", "1"} {
		tx := s.must(202, "POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to1, "value": v}).(map[string]any)
		ids = append(ids, tx["id"].(string))
	}

	// An idempotent transfer to user 1: the replay returns the same record,
	// another body with the key is 409, and one transaction exists.
	body := map[string]any{"to": to2, "value": "7"}
	r1 := s.callHeaders("POST", "/tokens/"+id+"/transfers", s.Token, body, "Idempotency-Key", "pay-user-1")
	r2 := s.callHeaders("POST", "/tokens/"+id+"/transfers", s.Token, body, "Idempotency-Key", "pay-user-1")
	if r1.Status != 202 || r2.Status != 202 || string(r1.Raw) != string(r2.Raw) || r2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("idempotent transfer: %d %s / %d %s", r1.Status, r1.Raw, r2.Status, r2.Raw)
	}
	wantErr(t, s.callHeaders("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to2, "value": "8"}, "Idempotency-Key", "pay-user-1"),
		409, "conflict", "Idempotency-Key")
	idemID := r1.Body["data"].(map[string]any)["id"].(string)
	ids = append(ids, idemID)

	// Bad transfers store nothing.
	wantErr(t, s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": to2, "value": "-1"}), 400, "invalid_argument", "value")
	wantErr(t, s.call("POST", "/tokens/"+id+"/transfers", s.Token, map[string]any{"to": "0x12", "value": "1"}), 400, "invalid_argument", "to")

	for _, txID := range ids {
		if tx := s.waitTerminal(txID, s.Token, 60*time.Second); tx["status"] != "completed" {
			t.Fatalf("transaction %s: %v", txID, tx)
		}
	}

	// History, from the index: newest first.
	list := func(query string) ([]map[string]any, string) {
		t.Helper()
		r := s.call("GET", "/tokens/"+id+"/transfers"+query, s.Token, nil)
		if r.Status != 200 {
			t.Fatalf("transfers%s: %d %s", query, r.Status, r.Raw)
		}
		var out []map[string]any
		for _, x := range r.Body["data"].([]any) {
			out = append(out, x.(map[string]any))
		}
		next, _ := r.Body["next"].(string)
		return out, next
	}
	eventually(t, 30*time.Second, "indexed transfers", func() bool {
		all, _ := list("")
		return len(all) == 5 // the mint at deployment and the four transfers
	})
	all, next := list("")
	if next != "" {
		t.Fatalf("unexpected next %q", next)
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1]["blockNumber"].(float64), all[i]["blockNumber"].(float64)
		if a < b || (a == b && all[i-1]["logIndex"].(float64) < all[i]["logIndex"].(float64)) {
			t.Fatalf("not newest first: %v", all)
		}
	}
	mint := all[len(all)-1]
	if mint["from"] != "0x0000000000000000000000000000000000000000" || mint["value"] != "1000000000000000000000000" {
		t.Fatalf("oldest transfer is not the mint: %v", mint)
	}
	to1Rows, _ := list("?to=" + strings.ToLower(to1))
	if len(to1Rows) != 3 {
		t.Fatalf("to user 0: %v", to1Rows)
	}
	for _, x := range to1Rows {
		if x["to"] != to1 || !strings.HasPrefix(x["transactionHash"].(string), "0x") {
			t.Fatalf("row %v", x)
		}
	}
	if rows, _ := list("?address=" + to2); len(rows) != 1 || rows[0]["value"] != "7" {
		t.Fatalf("idempotent transfer stored %d times: %v", len(rows), rows)
	}
	if rows, _ := list("?from=0x0000000000000000000000000000000000000000"); len(rows) != 1 {
		t.Fatalf("from zero: %v", rows)
	}
	// Pagination: pages of 2 over the transfers to user 0.
	page1, next := list("?to=" + to1 + "&limit=2")
	if len(page1) != 2 || next == "" {
		t.Fatalf("page 1: %v next %q", page1, next)
	}
	page2, next2 := list("?to=" + to1 + "&limit=2&cursor=" + next)
	if len(page2) != 1 || next2 != "" || page2[0]["value"] != "1500000000000000000" {
		t.Fatalf("page 2: %v next %q", page2, next2)
	}
	bn := int(mint["blockNumber"].(float64))
	if rows, _ := list(fmt.Sprintf("?fromBlock=%d&toBlock=%d", bn, bn)); len(rows) != 1 {
		t.Fatalf("block %d: %v", bn, rows)
	}
	wantErr(t, s.call("GET", "/tokens/"+id+"/transfers?limit=0", s.Token, nil), 400, "invalid_argument", "limit")
	wantErr(t, s.call("GET", "/tokens/"+id+"/transfers?cursor=zzz", s.Token, nil), 400, "invalid_argument", "cursor")
	wantErr(t, s.call("GET", "/tokens/"+id+"/transfers?from=0x12", s.Token, nil), 400, "invalid_argument", "from")
	wantErr(t, s.call("GET", "/tokens/"+id+"/transfers?fromBlock=-1", s.Token, nil), 400, "invalid_argument", "fromBlock")
	wantErr(t, s.call("GET", "/tokens/"+id+"/transfers", users[0]["token"].(string), nil), 404, "not_found", "")

	// Circulating now counts what left the NFT holder's wallet.
	if got := plain("/tokens/" + net + "/" + addr + "/circulating"); got != "1.750000000000000008" {
		t.Fatalf("circulating = %q", got)
	}
	if got := plain("/tokens/" + net + "/" + addr + "/supply"); got != "1000000" {
		t.Fatalf("supply = %q", got)
	}
}

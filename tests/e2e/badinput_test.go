package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// badRequest is one row of the bad-input catalogue: a request and the
// documented error it must get.
type badRequest struct {
	name   string
	method string
	path   string
	// auth is the Authorization header: "" sends the operator's token,
	// "-" none, anything else is sent as is.
	auth    string
	headers []string
	// body is nil (none), a string (sent as is) or a chunked.
	body   any
	status int
	code   string
	field  string
}

// apiRoutes are the authenticated routes of the API (method, path with
// valid placeholders filled in by the test), each tried with missing,
// malformed and unknown credentials.
type apiRoute struct{ method, path string }

// TestBadInputCatalogue sends a catalogue of bad requests to every endpoint
// of the real binary: bodies, paths, query parameters and headers. Each
// gets its documented 4xx status, code and field (never a 500), and nothing
// is stored or sent: the store's row counts, the users' lists, the
// accounts' ETH and token balances and the chain's transactions are the
// same before and after.
func TestBadInputCatalogue(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	// Private callback addresses are refused here, as on configured networks.
	s := startService(t, dir, "TXENGINE_CALLBACKS_ALLOW_PRIVATE=false")
	op := s.Token

	// Fixtures: the operator's account, demo token and System NFT; a
	// foreign (ownerless) user with an account, a contract and a
	// transaction; a completed transaction of the operator; an
	// Idempotency-Key the operator used.
	opAcct := s.must(200, "GET", "/accounts/default", op, nil).(map[string]any)
	opAcctID, opAddr := opAcct["id"].(string), opAcct["address"].(string)
	var tokID, tokAddr, nftID string
	for _, c := range s.must(200, "GET", "/contracts", op, nil).([]any) {
		c := c.(map[string]any)
		switch c["bwtype"] {
		case "erc20":
			tokID, tokAddr = c["id"].(string), c["address"].(string)
		case "erc721":
			nftID = c["id"].(string)
		}
	}
	if tokID == "" || nftID == "" {
		t.Fatal("no demo token or System NFT registered to the operator")
	}
	other := s.must(201, "POST", "/users", op, map[string]any{"auth": true, "account": true, "ownerless": true}).(map[string]any)
	bID, bTok := other["id"].(string), other["token"].(string)
	bAcct := other["account"].(map[string]any)
	bAcctID, bAddr := bAcct["id"].(string), bAcct["address"].(string)
	bCt := s.must(201, "PUT", "/contracts", bTok, map[string]any{"name": "B's token", "network": "dev", "address": tokAddr, "type": "erc20"}).(map[string]any)["id"].(string)
	eventually(t, 30*time.Second, "faucet funds the foreign account", func() bool {
		return s.must(200, "GET", "/accounts/default/balance", bTok, nil).(string) != "0"
	})
	bTx := s.must(202, "POST", "/tokens/"+bCt+"/transfers", bTok, map[string]any{"to": bAddr, "value": "0"}).(map[string]any)["id"].(string)
	opTx := s.must(202, "POST", "/tokens/"+tokID+"/transfers", op, map[string]any{"to": bAddr, "value": "1"}).(map[string]any)["id"].(string)
	bView := s.waitTerminal(bTx, bTok, 60*time.Second)
	opView := s.waitTerminal(opTx, op, 60*time.Second)
	if st := opView["status"]; st != "completed" {
		t.Fatalf("operator's transfer %s", st)
	}
	// The token index follows the chain on its own: wait until it holds
	// both fixture transfers, so that it does not catch up (and add rows)
	// while the catalogue runs.
	eventually(t, 30*time.Second, "the token index holds the fixture transfers", func() bool {
		body := s.must(200, "GET", "/tokens/"+tokID+"/transfers?limit=1000", op, nil)
		seen := map[string]bool{}
		for _, it := range body.([]any) {
			seen[strings.ToLower(it.(map[string]any)["transactionHash"].(string))] = true
		}
		for _, v := range []map[string]any{bView, opView} {
			if h, _ := v["transactionHash"].(string); h != "" && !seen[strings.ToLower(h)] {
				return false
			}
		}
		return true
	})
	// New accounts are funded by the faucet: wait for it, so that no
	// funding transaction is mined while the catalogue runs.
	usedKey := "catalogue-" + uuid.NewString()
	r := s.callHeaders("POST", "/accounts", op, "{}", "Idempotency-Key", usedKey)
	if r.Status != 201 {
		t.Fatalf("POST /accounts with a key: %d %s", r.Status, r.Raw)
	}
	keyedAcct := r.Body["data"].(map[string]any)["id"].(string)
	eventually(t, 30*time.Second, "faucet funds the new account", func() bool {
		return s.must(200, "GET", "/accounts/"+keyedAcct+"/balance", op, nil).(string) != "0"
	})

	before := catalogueState(t, s, dir, op, bTok, tokID, bCt)

	rows := badInputRows(catalogueFixtures{
		opAcctID: opAcctID, opAddr: opAddr, tokID: tokID, tokAddr: tokAddr, nftID: nftID, opTx: opTx,
		bID: bID, bAcctID: bAcctID, bAddr: bAddr, bCt: bCt, bTx: bTx, bTok: bTok, usedKey: usedKey,
	})
	routes := map[string]int{}
	for _, row := range rows {
		auth := row.auth
		switch auth {
		case "":
			auth = "Bearer " + op
		case "-":
			auth = ""
		}
		r, route := s.request(row.method, row.path, auth, row.body, row.headers...)
		if route != "" {
			routes[route]++
		}
		label := fmt.Sprintf("%s %s (%s)", row.method, shorten(row.path), row.name)
		if r.Status >= 500 {
			t.Errorf("%s: status %d: %.300s", label, r.Status, r.Raw)
			continue
		}
		e, _ := r.Body["error"].(map[string]any)
		field, _ := e["field"].(string)
		if r.Status != row.status || e == nil || e["code"] != row.code || field != row.field {
			t.Errorf("%s: got %d %.300s; want %d %s field %q", label, r.Status, r.Raw, row.status, row.code, row.field)
		}
		if r.Header.Get("X-Request-Id") == "" || r.Header.Get("X-API-Version") != "1.2.1" {
			t.Errorf("%s: common headers missing: %v", label, r.Header)
		}
		// docs/api-decisions.md#authentication-and-users: the rate-limit headers are on every response, 401s included.
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if _, err := strconv.Atoi(r.Header.Get(h)); err != nil {
				t.Errorf("%s: %s = %q, want a number", label, h, r.Header.Get(h))
			}
		}
	}

	after := catalogueState(t, s, dir, op, bTok, tokID, bCt)
	for k, v := range before.values {
		if after.values[k] != v {
			t.Errorf("%s changed during the catalogue: %v -> %v", k, v, after.values[k])
		}
	}
	// No transaction reached the chain while the catalogue ran.
	for n := before.head + 1; n <= after.head; n++ {
		blk := s.must(200, "GET", fmt.Sprintf("/contracts/network/dev/block/%d", n), op, nil).(map[string]any)
		if c := blk["transactionCount"].(float64); c != 0 {
			t.Errorf("block %d mined during the catalogue has %v transactions", n, c)
		}
	}

	names := make([]string, 0, len(routes))
	for k := range routes {
		names = append(names, k)
	}
	sort.Strings(names)
	t.Logf("bad inputs tried: %d; documented endpoints covered: %d (plus 405s on undocumented methods); blocks checked: %d",
		len(rows), len(routes), after.head-before.head)
	for _, n := range names {
		t.Logf("  %4d  %s", routes[n], n)
	}
	// docs/running.md ("The tests") states the catalogue's size: the figure
	// must be this run's.
	readme, err := os.ReadFile("../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`of (\d+) bad requests`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`docs/running.md no longer says "of N bad requests"`)
	}
	if string(m[1]) != strconv.Itoa(len(rows)) {
		t.Fatalf("docs/running.md says %s bad requests; the catalogue has %d: update one or the other", m[1], len(rows))
	}
	if len(routes) < 36 {
		t.Fatalf("only %d documented endpoints covered", len(routes))
	}
}

// shorten bounds a path for messages.
func shorten(p string) string {
	if len(p) > 120 {
		return p[:120] + "..."
	}
	return p
}

// catalogueSnapshot is what must not change while bad requests are sent.
type catalogueSnapshot struct {
	values map[string]any
	head   int64
}

// catalogueState reads the store's row counts (the tables that requests
// write; the chain follower's cursors move with every block), the lists
// and balances of both users, and the chain head.
func catalogueState(t *testing.T, s *service, dir, op, other, tokID, otherCt string) catalogueSnapshot {
	t.Helper()
	background := map[string]bool{"network_cursors": true, "processed_blocks": true, "token_index_blocks": true, "token_index_streams": true, "schema_migrations": true}
	v := map[string]any{}
	for table, n := range tableCounts(t, dir) {
		if !background[table] {
			v["rows of "+table] = n
		}
	}
	for who, tok := range map[string]string{"operator": op, "other": other} {
		v[who+" transactions"] = s.listLen("/transactions?limit=1000", tok)
		v[who+" accounts"] = s.listLen("/accounts", tok)
		v[who+" contracts"] = s.listLen("/contracts", tok)
		v[who+" tokens"] = s.listLen("/tokens", tok)
		v[who+" ETH"] = s.must(200, "GET", "/accounts/default/balance", tok, nil)
		me := s.must(200, "GET", "/users/me", tok, nil).(map[string]any)
		v[who+" limits"] = fmt.Sprint(me["limits"])
	}
	v["operator DEMO"] = s.must(200, "GET", "/tokens/"+tokID+"/balances/default", op, nil)
	v["other DEMO"] = s.must(200, "GET", "/tokens/"+otherCt+"/balances/default", other, nil)
	head := s.must(200, "GET", "/contracts/network/dev/block/latest", op, nil).(map[string]any)["number"].(float64)
	return catalogueSnapshot{values: v, head: int64(head)}
}

// catalogueFixtures are the ids and addresses the rows use.
type catalogueFixtures struct {
	opAcctID, opAddr, tokID, tokAddr, nftID, opTx string
	// b*: objects of another (ownerless) user, and its token.
	bID, bAcctID, bAddr, bCt, bTx, bTok string
	// usedKey is an Idempotency-Key the operator used for POST /accounts.
	usedKey string
}

// badInputRows builds the catalogue.
func badInputRows(f catalogueFixtures) []badRequest {
	const (
		s400 = 400
		s404 = 404
		inv  = "invalid_argument"
		bad  = "invalid_json"
		nf   = "not_found"
	)
	unknownID := uuid.NewString()
	notUUID := "not-a-uuid"
	maxUint := "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	// badSum is the operator's address with the case of one letter
	// flipped: mixed case that fails the EIP-55 checksum.
	badSum := flipCase(f.opAddr)
	short := "0x1234"
	big := `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	longName := strings.Repeat("n", 201)
	longMethod := strings.Repeat("m", 1025)
	longQ := strings.Repeat("q", 257)
	longURL := "https://example.com/" + strings.Repeat("a", 2048)
	tr := "/tokens/" + f.tokID + "/transfers"
	send := "/contracts/" + f.tokID + "/send/transfer"
	call := "/contracts/" + f.tokID + "/call/balanceOf"
	dsend := "/contracts/network/dev/address/" + f.tokAddr + "/send/transfer"
	dcall := "/contracts/network/dev/address/" + f.tokAddr + "/call/balanceOf"
	to := `"to":"` + f.bAddr + `"`
	xfer := func(fields string) string { return `{` + to + `,` + fields + `}` }
	sendBody := func(fields string) string {
		b := `{"arg":["` + f.bAddr + `","1"]`
		if fields != "" {
			b += "," + fields
		}
		return b + "}"
	}
	ids := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = `"` + uuid.NewString() + `"`
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	urls := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(`"https://example.com/cb/%d"`, i)
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	calls := func(n int) string {
		out := make([]string, n)
		for i := range out {
			out[i] = `{"contractId":"` + f.tokID + `","method":"decimals"}`
		}
		return `{"calls":[` + strings.Join(out, ",") + `]}`
	}
	cursor := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }

	rows := []badRequest{
		// Bodies: malformed, wrong shapes, unknown fields, empty, too large.
		{name: "empty body", method: "POST", path: tr, body: "", status: s400, code: bad},
		{name: "whitespace body", method: "POST", path: tr, body: " \n\t", status: s400, code: bad},
		{name: "truncated JSON", method: "POST", path: tr, body: `{"to":`, status: s400, code: bad},
		{name: "not JSON", method: "POST", path: tr, body: `to=0x1&value=1`, status: s400, code: bad},
		{name: "trailing data", method: "POST", path: tr, body: xfer(`"value":"1"`) + `x`, status: s400, code: bad},
		{name: "two objects", method: "POST", path: tr, body: xfer(`"value":"1"`) + `{}`, status: s400, code: bad},
		{name: "single quotes", method: "POST", path: tr, body: `{'to':'x'}`, status: s400, code: bad},
		{name: "array body", method: "POST", path: tr, body: `[` + xfer(`"value":"1"`) + `]`, status: s400, code: inv},
		{name: "null body", method: "POST", path: tr, body: `null`, status: s400, code: inv},
		{name: "string body", method: "POST", path: tr, body: `"hello"`, status: s400, code: inv},
		{name: "number body", method: "POST", path: tr, body: `42`, status: s400, code: inv},
		{name: "unknown field", method: "POST", path: tr, body: xfer(`"value":"1","amount":"1"`), status: s400, code: inv, field: "amount"},
		{name: "field in other case", method: "POST", path: tr, body: xfer(`"Value":"1"`), status: s400, code: inv, field: "Value"},
		{name: "duplicate field", method: "POST", path: tr, body: xfer(`"value":"1","value":"2"`), status: s400, code: inv, field: "value"},
		{name: "field in upper case", method: "PUT", path: "/accounts/default", body: `{"ACCOUNT":"` + f.opAcctID + `"}`, status: s400, code: inv, field: "ACCOUNT"},
		{name: "batch item field in other case", method: "POST", path: "/contracts/call", body: `{"Calls":[]}`, status: s400, code: inv, field: "Calls"},
		{name: "body over 1 MiB", method: "POST", path: tr, body: big, status: 413, code: "payload_too_large"},
		{name: "chunked body over 1 MiB", method: "POST", path: tr, body: chunked(big), status: 413, code: "payload_too_large"},
		{name: "body over 1 MiB with a key", method: "POST", path: tr, headers: []string{"Idempotency-Key", "big-1"}, body: chunked(big), status: 413, code: "payload_too_large"},

		// Amounts: every bad form.
		{name: "missing value", method: "POST", path: tr, body: `{` + to + `}`, status: s400, code: inv, field: "value"},
		{name: "negative value", method: "POST", path: tr, body: xfer(`"value":"-1"`), status: s400, code: inv, field: "value"},
		{name: "plus sign", method: "POST", path: tr, body: xfer(`"value":"+1"`), status: s400, code: inv, field: "value"},
		{name: "decimal value", method: "POST", path: tr, body: xfer(`"value":"1.5"`), status: s400, code: inv, field: "value"},
		{name: "exponent value", method: "POST", path: tr, body: xfer(`"value":"1e18"`), status: s400, code: inv, field: "value"},
		{name: "hex value", method: "POST", path: tr, body: xfer(`"value":"0x10"`), status: s400, code: inv, field: "value"},
		{name: "empty value", method: "POST", path: tr, body: xfer(`"value":""`), status: s400, code: inv, field: "value"},
		{name: "spaced value", method: "POST", path: tr, body: xfer(`"value":" 1"`), status: s400, code: inv, field: "value"},
		{name: "JSON number value", method: "POST", path: tr, body: xfer(`"value":1`), status: s400, code: inv, field: "value"},
		{name: "JSON float value", method: "POST", path: tr, body: xfer(`"value":1e30`), status: s400, code: inv, field: "value"},
		{name: "boolean value", method: "POST", path: tr, body: xfer(`"value":true`), status: s400, code: inv, field: "value"},
		{name: "null value", method: "POST", path: tr, body: xfer(`"value":null`), status: s400, code: inv, field: "value"},
		{name: "value 2^256", method: "POST", path: tr, body: xfer(`"value":"115792089237316195423570985008687907853269984665640564039457584007913129639936"`), status: s400, code: inv, field: "value"},
		{name: "value of 100 digits", method: "POST", path: tr, body: xfer(`"value":"` + strings.Repeat("9", 100) + `"`), status: s400, code: inv, field: "value"},
		{name: "value with underscore", method: "POST", path: tr, body: xfer(`"value":"1_000"`), status: s400, code: inv, field: "value"},
		{name: "send value negative", method: "POST", path: send, body: sendBody(`"value":"-1"`), status: s400, code: inv, field: "value"},
		{name: "send value JSON number", method: "POST", path: send, body: sendBody(`"value":0`), status: s400, code: inv, field: "value"},
		{name: "send value to non-payable", method: "POST", path: send, body: sendBody(`"value":"1"`), status: s400, code: inv, field: "value"},
		{name: "waitForValue decimal", method: "POST", path: tr, body: xfer(`"value":"1","waitForAsset":"ETH","waitForValue":"0.5"`), status: s400, code: inv, field: "waitForValue"},
		{name: "waitForValue over 2^256-1", method: "POST", path: tr, body: xfer(`"value":"1","waitForAsset":"ETH","waitForValue":"` + maxUint + `0"`), status: s400, code: inv, field: "waitForValue"},

		// Addresses.
		{name: "missing to", method: "POST", path: tr, body: `{"value":"1"}`, status: s400, code: inv, field: "to"},
		{name: "to as number", method: "POST", path: tr, body: `{"to":1,"value":"1"}`, status: s400, code: inv, field: "to"},
		{name: "short to", method: "POST", path: tr, body: `{"to":"` + short + `","value":"1"}`, status: s400, code: inv, field: "to"},
		{name: "to without 0x", method: "POST", path: tr, body: `{"to":"` + f.bAddr[2:] + `","value":"1"}`, status: s400, code: inv, field: "to"},
		{name: "to with bad checksum", method: "POST", path: tr, body: `{"to":"` + badSum + `","value":"1"}`, status: s400, code: inv, field: "to"},
		{name: "to not hex", method: "POST", path: tr, body: `{"to":"0x` + strings.Repeat("g", 40) + `","value":"1"}`, status: s400, code: inv, field: "to"},
		{name: "from bad checksum", method: "POST", path: tr, body: xfer(`"value":"1","from":"` + badSum + `"`), status: s400, code: inv, field: "from"},
		{name: "balance of short address", method: "GET", path: "/tokens/" + f.tokID + "/balances/" + short, status: s400, code: inv, field: "address"},
		{name: "balance of bad checksum", method: "GET", path: "/tokens/" + f.tokID + "/balances/" + badSum, status: s400, code: inv, field: "address"},
		{name: "token info of bad address", method: "GET", path: "/tokens/dev/" + short, status: s400, code: inv, field: "address"},
		{name: "token info of bad checksum", method: "GET", path: "/tokens/dev/" + badSum, status: s400, code: inv, field: "address"},
		{name: "token info of no token", method: "GET", path: "/tokens/dev/" + f.opAddr, status: s404, code: nf, field: "address"},
		{name: "supply of bad address", method: "GET", path: "/tokens/dev/" + short + "/supply", status: s400, code: inv, field: "address"},
		{name: "circulating of bad checksum", method: "GET", path: "/tokens/dev/" + badSum + "/circulating", status: s400, code: inv, field: "address"},
		{name: "register bad address", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + short + `","type":"erc20"}`, status: s400, code: inv, field: "address"},
		{name: "direct call bad address", method: "POST", path: "/contracts/network/dev/address/" + badSum + "/call/name", body: `{"type":"erc20"}`, status: s400, code: inv, field: "address"},
		{name: "direct send bad address", method: "POST", path: "/contracts/network/dev/address/" + short + "/send/transfer", body: `{"type":"erc20","arg":["` + f.bAddr + `","1"]}`, status: s400, code: inv, field: "address"},
		{name: "transactions from bad address", method: "GET", path: "/transactions?from=" + short, status: s400, code: inv, field: "from"},
		{name: "transfers from bad address", method: "GET", path: tr + "?from=" + badSum, status: s400, code: inv, field: "from"},
		{name: "transfers to bad address", method: "GET", path: tr + "?to=xyz", status: s400, code: inv, field: "to"},
		{name: "transfers address bad", method: "GET", path: tr + "?address=" + short, status: s400, code: inv, field: "address"},

		// Ids in paths: not UUIDs, unknown, of another user, of another kind.
		{name: "account not a UUID", method: "GET", path: "/accounts/" + notUUID, status: s404, code: nf},
		{name: "account unknown", method: "GET", path: "/accounts/" + unknownID, status: s404, code: nf},
		{name: "account foreign", method: "GET", path: "/accounts/" + f.bAcctID, status: s404, code: nf},
		{name: "account balance foreign", method: "GET", path: "/accounts/" + f.bAcctID + "/balance", status: s404, code: nf},
		{name: "account balance not a UUID", method: "GET", path: "/accounts/" + notUUID + "/balance", status: s404, code: nf},
		{name: "user tokens not a UUID", method: "POST", path: "/users/" + notUUID + "/tokens", status: s404, code: nf},
		{name: "user tokens unknown", method: "POST", path: "/users/" + unknownID + "/tokens", status: s404, code: nf},
		{name: "user tokens foreign", method: "POST", path: "/users/" + f.bID + "/tokens", status: s404, code: nf},
		{name: "limits not a UUID", method: "PUT", path: "/users/" + notUUID + "/limits", body: `{"perSecond":1,"perHour":1}`, status: s404, code: nf},
		{name: "limits unknown user", method: "PUT", path: "/users/" + unknownID + "/limits", body: `{"perSecond":1,"perHour":1}`, status: s404, code: nf},
		{name: "token not a UUID", method: "GET", path: "/tokens/" + notUUID, status: s404, code: nf},
		{name: "token unknown", method: "GET", path: "/tokens/" + unknownID, status: s404, code: nf},
		{name: "token foreign", method: "GET", path: "/tokens/" + f.bCt, status: s404, code: nf},
		{name: "token is an NFT", method: "GET", path: "/tokens/" + f.nftID, status: s404, code: nf},
		{name: "token balance foreign", method: "GET", path: "/tokens/" + f.bCt + "/balances/default", status: s404, code: nf},
		{name: "token address balance foreign", method: "GET", path: "/tokens/" + f.bCt + "/balances/" + f.bAddr, status: s404, code: nf},
		{name: "transfers of foreign token", method: "GET", path: "/tokens/" + f.bCt + "/transfers", status: s404, code: nf},
		{name: "transfer on foreign token", method: "POST", path: "/tokens/" + f.bCt + "/transfers", body: xfer(`"value":"1"`), status: s404, code: nf},
		{name: "transfer on unknown token", method: "POST", path: "/tokens/" + unknownID + "/transfers", body: xfer(`"value":"1"`), status: s404, code: nf},
		{name: "transfer on an NFT", method: "POST", path: "/tokens/" + f.nftID + "/transfers", body: xfer(`"value":"1"`), status: s404, code: nf},
		{name: "token info of unknown network", method: "GET", path: "/tokens/nonet/" + f.tokAddr, status: s404, code: nf},
		{name: "supply of unknown network", method: "GET", path: "/tokens/nonet/" + f.tokAddr + "/supply", status: s404, code: nf},
		{name: "circulating of unknown network", method: "GET", path: "/tokens/nonet/" + f.tokAddr + "/circulating", status: s404, code: nf},
		{name: "transaction not a UUID", method: "GET", path: "/transactions/" + notUUID, status: s404, code: nf},
		{name: "transaction unknown", method: "GET", path: "/transactions/" + unknownID, status: s404, code: nf},
		{name: "transaction foreign", method: "GET", path: "/transactions/" + f.bTx, status: s404, code: nf},
		{name: "cancel foreign", method: "DELETE", path: "/transactions/" + f.bTx, status: s404, code: nf},
		{name: "cancel not a UUID", method: "DELETE", path: "/transactions/" + notUUID, status: s404, code: nf},
		{name: "cancel unknown", method: "DELETE", path: "/transactions/" + unknownID, status: s404, code: nf},
		{name: "cancel completed", method: "DELETE", path: "/transactions/" + f.opTx, status: 409, code: "conflict"},
		{name: "contract not a UUID", method: "GET", path: "/contracts/" + notUUID, status: s404, code: nf},
		{name: "contract unknown", method: "GET", path: "/contracts/" + unknownID, status: s404, code: nf},
		{name: "contract foreign", method: "GET", path: "/contracts/" + f.bCt, status: s404, code: nf},
		{name: "send on foreign contract", method: "POST", path: "/contracts/" + f.bCt + "/send/transfer", body: sendBody(""), status: s404, code: nf},
		{name: "send on contract not a UUID", method: "POST", path: "/contracts/" + notUUID + "/send/transfer", body: sendBody(""), status: s404, code: nf},
		{name: "call on foreign contract", method: "POST", path: "/contracts/" + f.bCt + "/call/decimals", body: `{}`, status: s404, code: nf},
		{name: "call on unknown contract", method: "POST", path: "/contracts/" + unknownID + "/call/decimals", status: s404, code: nf},
		{name: "events of foreign contract", method: "GET", path: "/contracts/" + f.bCt + "/events", status: s404, code: nf},
		{name: "events of contract not a UUID", method: "GET", path: "/contracts/" + notUUID + "/events", status: s404, code: nf},
		{name: "latest block of unknown network", method: "GET", path: "/contracts/network/nonet/block/latest", status: s404, code: nf, field: "network"},
		{name: "block of unknown network", method: "GET", path: "/contracts/network/nonet/block/1", status: s404, code: nf, field: "network"},
		{name: "gas price of unknown network", method: "GET", path: "/contracts/network/nonet/gas-price", status: s404, code: nf, field: "network"},
		{name: "direct call unknown network", method: "POST", path: "/contracts/network/nonet/address/" + f.tokAddr + "/call/decimals", body: `{"type":"erc20"}`, status: s404, code: nf, field: "network"},
		{name: "direct send unknown network", method: "POST", path: "/contracts/network/nonet/address/" + f.tokAddr + "/send/transfer", body: `{"type":"erc20","arg":["` + f.bAddr + `","1"]}`, status: s404, code: nf, field: "network"},
		{name: "trailing slash", method: "GET", path: "/accounts/", status: s404, code: nf},
		{name: "unknown path", method: "GET", path: "/wallets", status: s404, code: nf},

		// Ids and addresses in bodies.
		{name: "from not an id", method: "POST", path: tr, body: xfer(`"value":"1","from":"` + notUUID + `"`), status: s400, code: inv, field: "from"},
		{name: "from as number", method: "POST", path: tr, body: xfer(`"value":"1","from":5`), status: s400, code: inv, field: "from"},
		{name: "from foreign account id", method: "POST", path: tr, body: xfer(`"value":"1","from":"` + f.bAcctID + `"`), status: s404, code: nf, field: "from"},
		{name: "from foreign address", method: "POST", path: tr, body: xfer(`"value":"1","from":"` + f.bAddr + `"`), status: s404, code: nf, field: "from"},
		{name: "from unknown account", method: "POST", path: tr, body: xfer(`"value":"1","from":"` + unknownID + `"`), status: s404, code: nf, field: "from"},
		{name: "send from foreign account", method: "POST", path: send, body: sendBody(`"from":"` + f.bAcctID + `"`), status: s404, code: nf, field: "from"},
		{name: "direct send from foreign", method: "POST", path: dsend, body: `{"type":"erc20","arg":["` + f.bAddr + `","1"],"from":"` + f.bAddr + `"}`, status: s404, code: nf, field: "from"},
		{name: "call from foreign account id", method: "POST", path: call, body: `{"arg":"` + f.bAddr + `","from":"` + f.bAcctID + `"}`, status: s404, code: nf, field: "from"},
		{name: "call from not an id", method: "POST", path: call, body: `{"arg":"` + f.bAddr + `","from":"me"}`, status: s400, code: inv, field: "from"},
		{name: "dependsOn not ids", method: "POST", path: tr, body: xfer(`"value":"1","dependsOn":["nope"]`), status: s400, code: inv, field: "dependsOn"},
		{name: "dependsOn a string", method: "POST", path: tr, body: xfer(`"value":"1","dependsOn":"` + f.opTx + `"`), status: s400, code: inv, field: "dependsOn"},
		{name: "dependsOn foreign", method: "POST", path: tr, body: xfer(`"value":"1","dependsOn":["` + f.bTx + `"]`), status: s404, code: nf, field: "dependsOn"},
		{name: "dependsOn unknown", method: "POST", path: send, body: sendBody(`"dependsOn":["` + unknownID + `"]`), status: s404, code: nf, field: "dependsOn"},
		{name: "dependsOn 101 ids", method: "POST", path: tr, body: xfer(`"value":"1","dependsOn":` + ids(101)), status: s400, code: inv, field: "dependsOn"},
		{name: "waitForAsset alone", method: "POST", path: tr, body: xfer(`"value":"1","waitForAsset":"ETH"`), status: s400, code: inv, field: "waitForValue"},
		{name: "waitForValue alone", method: "POST", path: tr, body: xfer(`"value":"1","waitForValue":"1"`), status: s400, code: inv, field: "waitForAsset"},
		{name: "waitForAsset unknown symbol", method: "POST", path: tr, body: xfer(`"value":"1","waitForAsset":"BTC","waitForValue":"1"`), status: s400, code: inv, field: "waitForAsset"},
		{name: "waitForAsset foreign token", method: "POST", path: tr, body: xfer(`"value":"1","waitForAsset":"` + f.bCt + `","waitForValue":"1"`), status: s404, code: nf, field: "waitForAsset"},
		{name: "waitForAsset an NFT", method: "POST", path: send, body: sendBody(`"waitForAsset":"` + f.nftID + `","waitForValue":"1"`), status: s400, code: inv, field: "waitForAsset"},
		{name: "waitForAsset bad checksum", method: "POST", path: tr, body: xfer(`"value":"1","waitForAsset":"` + badSum + `","waitForValue":"1"`), status: s400, code: inv, field: "waitForAsset"},
		{name: "waitTimeout zero", method: "POST", path: tr, body: xfer(`"value":"1","waitTimeout":0`), status: s400, code: inv, field: "waitTimeout"},
		{name: "waitTimeout a string", method: "POST", path: tr, body: xfer(`"value":"1","waitTimeout":"60"`), status: s400, code: inv, field: "waitTimeout"},
		{name: "waitTimeout over 30 days", method: "POST", path: send, body: sendBody(`"waitTimeout":2592001`), status: s400, code: inv, field: "waitTimeout"},
		{name: "set default: missing account", method: "PUT", path: "/accounts/default", body: `{}`, status: s400, code: inv, field: "account"},
		{name: "set default: account number", method: "PUT", path: "/accounts/default", body: `{"account":1}`, status: s400, code: inv, field: "account"},
		{name: "set default: not an id", method: "PUT", path: "/accounts/default", body: `{"account":"nope"}`, status: s400, code: inv, field: "account"},
		{name: "set default: foreign account", method: "PUT", path: "/accounts/default", body: `{"account":"` + f.bAcctID + `"}`, status: s404, code: nf, field: "account"},
		{name: "set default: unknown account", method: "PUT", path: "/accounts/default", body: `{"account":"` + unknownID + `"}`, status: s404, code: nf, field: "account"},
		{name: "set default: unknown field", method: "PUT", path: "/accounts/default", body: `{"account":"` + f.opAcctID + `","x":1}`, status: s400, code: inv, field: "x"},
		{name: "set default: empty body", method: "PUT", path: "/accounts/default", body: "", status: s400, code: bad},
		{name: "batch: calls missing", method: "POST", path: "/contracts/call", body: `{}`, status: s400, code: inv, field: "calls"},
		{name: "batch: calls a string", method: "POST", path: "/contracts/call", body: `{"calls":"x"}`, status: s400, code: inv, field: "calls"},
		{name: "batch: 101 calls", method: "POST", path: "/contracts/call", body: calls(101), status: s400, code: inv, field: "calls"},
		{name: "batch: unknown field", method: "POST", path: "/contracts/call", body: `{"calls":[],"parallel":true}`, status: s400, code: inv, field: "parallel"},
		{name: "batch: malformed", method: "POST", path: "/contracts/call", body: `{"calls":[`, status: s400, code: bad},

		// Other body fields: types, enums, lengths.
		{name: "accounts: unknown field", method: "POST", path: "/accounts", body: `{"name":"x"}`, status: s400, code: inv, field: "name"},
		{name: "accounts: malformed", method: "POST", path: "/accounts", body: `{`, status: s400, code: bad},
		{name: "accounts: array", method: "POST", path: "/accounts", body: `[]`, status: s400, code: inv},
		{name: "accounts: chunked over 1 MiB", method: "POST", path: "/accounts", body: chunked(big), status: 413, code: "payload_too_large"},
		{name: "users: auth a string", method: "POST", path: "/users", body: `{"auth":"yes"}`, status: s400, code: inv, field: "auth"},
		{name: "users: account a number", method: "POST", path: "/users", body: `{"account":1}`, status: s400, code: inv, field: "account"},
		{name: "users: unknown flag", method: "POST", path: "/users", body: `{"admin":true}`, status: s400, code: inv, field: "admin"},
		{name: "users: malformed", method: "POST", path: "/users", body: `{"auth":tru}`, status: s400, code: bad},
		{name: "users: ownerless by a non-operator", method: "POST", path: "/users", auth: "Bearer " + f.bTok,
			body: `{"ownerless":true,"auth":true,"account":true}`, status: 403, code: "forbidden"},
		{name: "user token: foreign user with a body", method: "POST", path: "/users/" + f.bID + "/tokens", body: `{}`, status: s404, code: nf},
		{name: "limits: zero", method: "PUT", path: "/users/" + f.bID + "/limits", body: `{"perSecond":0,"perHour":1}`, status: s400, code: inv, field: "perSecond"},
		{name: "limits: missing perHour", method: "PUT", path: "/users/" + f.bID + "/limits", body: `{"perSecond":1}`, status: s400, code: inv, field: "perHour"},
		{name: "limits: string", method: "PUT", path: "/users/" + f.bID + "/limits", body: `{"perSecond":"1","perHour":1}`, status: s400, code: inv, field: "perSecond"},
		{name: "limits: fraction", method: "PUT", path: "/users/" + f.bID + "/limits", body: `{"perSecond":1.5,"perHour":1}`, status: s400, code: inv, field: "perSecond"},
		{name: "limits: too high", method: "PUT", path: "/users/" + f.bID + "/limits", body: `{"perSecond":1,"perHour":2000000000}`, status: s400, code: inv, field: "perHour"},
		{name: "limits: empty body", method: "PUT", path: "/users/" + f.bID + "/limits", body: "", status: s400, code: bad},
		{name: "contract: missing name", method: "PUT", path: "/contracts", body: `{"network":"dev","address":"` + f.tokAddr + `","type":"erc20"}`, status: s400, code: inv, field: "name"},
		{name: "contract: blank name", method: "PUT", path: "/contracts", body: `{"name":"  ","network":"dev","address":"` + f.tokAddr + `","type":"erc20"}`, status: s400, code: inv, field: "name"},
		{name: "contract: name 201 chars", method: "PUT", path: "/contracts", body: `{"name":"` + longName + `","network":"dev","address":"` + f.tokAddr + `","type":"erc20"}`, status: s400, code: inv, field: "name"},
		{name: "contract: name a number", method: "PUT", path: "/contracts", body: `{"name":5,"network":"dev","address":"` + f.tokAddr + `","type":"erc20"}`, status: s400, code: inv, field: "name"},
		{name: "contract: missing network", method: "PUT", path: "/contracts", body: `{"name":"x","address":"` + f.tokAddr + `","type":"erc20"}`, status: s400, code: inv, field: "network"},
		{name: "contract: unknown network", method: "PUT", path: "/contracts", body: `{"name":"x","network":"nonet","address":"` + f.tokAddr + `","type":"erc20"}`, status: s400, code: inv, field: "network"},
		{name: "contract: missing address", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","type":"erc20"}`, status: s400, code: inv, field: "address"},
		{name: "contract: abi and type", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + f.tokAddr + `","type":"erc20","abi":[]}`, status: s400, code: inv, field: "abi"},
		{name: "contract: neither abi nor type", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + f.tokAddr + `"}`, status: s400, code: inv, field: "abi"},
		{name: "contract: unknown type", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + f.tokAddr + `","type":"erc1155"}`, status: s400, code: inv, field: "type"},
		{name: "contract: abi a string", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + f.tokAddr + `","abi":"[]"}`, status: s400, code: inv, field: "abi"},
		{name: "contract: bad abi entry", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + f.tokAddr + `","abi":[{"type":"function","name":1}]}`, status: s400, code: inv, field: "abi"},
		{name: "contract: unknown field", method: "PUT", path: "/contracts", body: `{"name":"x","network":"dev","address":"` + f.tokAddr + `","type":"erc20","owner":"me"}`, status: s400, code: inv, field: "owner"},
		{name: "contract: over 1 MiB", method: "PUT", path: "/contracts", body: big, status: 413, code: "payload_too_large"},
		{name: "send: unknown method", method: "POST", path: "/contracts/" + f.tokID + "/send/nosuch", body: `{}`, status: s404, code: nf, field: "method"},
		{name: "send: method over 1024 chars", method: "POST", path: "/contracts/" + f.tokID + "/send/" + longMethod, body: `{}`, status: s400, code: inv, field: "method"},
		{name: "send: malformed signature", method: "POST", path: "/contracts/" + f.tokID + "/send/transfer(address", body: `{}`, status: s400, code: inv, field: "method"},
		{name: "send: too few args", method: "POST", path: send, body: `{"arg":["` + f.bAddr + `"]}`, status: s400, code: inv, field: "arg"},
		{name: "send: bad address arg", method: "POST", path: send, body: `{"arg":["zz","1"]}`, status: s400, code: inv, field: "arg[0]"},
		{name: "send: negative uint arg", method: "POST", path: send, body: `{"arg":["` + f.bAddr + `","-1"]}`, status: s400, code: inv, field: "arg[1]"},
		{name: "send: abi on registered", method: "POST", path: send, body: sendBody(`"abi":[]`), status: s400, code: inv, field: "abi"},
		{name: "send: type on registered", method: "POST", path: send, body: sendBody(`"type":"erc20"`), status: s400, code: inv, field: "type"},
		{name: "send: 11 callbacks", method: "POST", path: send, body: sendBody(`"callbacks":` + urls(11)), status: s400, code: inv, field: "callbacks"},
		{name: "send: unknown field", method: "POST", path: send, body: sendBody(`"gas":1`), status: s400, code: inv, field: "gas"},
		{name: "call: unknown method", method: "POST", path: "/contracts/" + f.tokID + "/call/nosuch", body: `{}`, status: s404, code: nf, field: "method"},
		{name: "call: method over 1024 chars", method: "POST", path: "/contracts/" + f.tokID + "/call/" + longMethod, status: s400, code: inv, field: "method"},
		{name: "call: bad arg", method: "POST", path: call, body: `{"arg":"0x12"}`, status: s400, code: inv, field: "arg[0]"},
		{name: "call: abi on registered", method: "POST", path: call, body: `{"abi":[]}`, status: s400, code: inv, field: "abi"},
		{name: "direct call: no abi or type", method: "POST", path: dcall, body: `{"arg":"` + f.bAddr + `"}`, status: s400, code: inv, field: "abi"},
		{name: "direct call: unknown type", method: "POST", path: dcall, body: `{"type":"erc777"}`, status: s400, code: inv, field: "type"},
		{name: "direct call: empty body", method: "POST", path: dcall, body: "", status: s400, code: bad},
		{name: "direct call: method over 1024", method: "POST", path: "/contracts/network/dev/address/" + f.tokAddr + "/call/" + longMethod, body: `{"type":"erc20"}`, status: s400, code: inv, field: "method"},
		{name: "direct send: unknown method", method: "POST", path: "/contracts/network/dev/address/" + f.tokAddr + "/send/nosuch", body: `{"type":"erc20"}`, status: s404, code: nf, field: "method"},
		{name: "direct send: bad value", method: "POST", path: dsend, body: `{"type":"erc20","arg":["` + f.bAddr + `","1"],"value":"1e3"}`, status: s400, code: inv, field: "value"},

		// Callbacks.
		{name: "callbacks: 11", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":` + urls(11)), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: a string", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":"https://example.com"`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: ftp", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["ftp://example.com/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: relative", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: over 2048 chars", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["` + longURL + `"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: loopback", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://127.0.0.1:9/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: localhost.", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://localhost.:9/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: private", method: "POST", path: send, body: sendBody(`"callbacks":["https://10.1.2.3/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: link-local", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://169.254.169.254/latest"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: IPv6 loopback", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://[::1]/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: shared 100.64/10", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://100.64.0.1/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: this network 0/8", method: "POST", path: send, body: sendBody(`"callbacks":["http://0.0.0.0/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: IETF 192.0.0/24", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://192.0.0.1/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: benchmarking 198.18/15", method: "POST", path: send, body: sendBody(`"callbacks":["http://198.18.0.1/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: reserved 240/4", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://240.0.0.1/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: NAT64 of link-local", method: "POST", path: send, body: sendBody(`"callbacks":["http://[64:ff9b::a9fe:a9fe]/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: 6to4 of link-local", method: "POST", path: tr, body: xfer(`"value":"1","callbacks":["http://[2002:a9fe:a9fe::1]/cb"]`), status: s400, code: inv, field: "callbacks"},
		{name: "callbacks: IPv4-mapped loopback", method: "POST", path: send, body: sendBody(`"callbacks":["http://[::ffff:127.0.0.1]/cb"]`), status: s400, code: inv, field: "callbacks"},

		// Query parameters.
		{name: "limit 0", method: "GET", path: "/transactions?limit=0", status: s400, code: inv, field: "limit"},
		{name: "limit 1001", method: "GET", path: "/transactions?limit=1001", status: s400, code: inv, field: "limit"},
		{name: "limit x", method: "GET", path: "/transactions?limit=x", status: s400, code: inv, field: "limit"},
		{name: "limit -1", method: "GET", path: "/transactions?limit=-1", status: s400, code: inv, field: "limit"},
		{name: "cursor garbage", method: "GET", path: "/transactions?cursor=@@garbage@@", status: s400, code: inv, field: "cursor"},
		{name: "cursor not ours", method: "GET", path: "/transactions?cursor=" + cursor(`{"c":1}`), status: s400, code: inv, field: "cursor"},
		{name: "cursor of other sort", method: "GET", path: "/transactions?sort=created&cursor=" + cursor(`{"c":1,"s":1}`), status: s400, code: inv, field: "cursor"},
		{name: "sort unknown", method: "GET", path: "/transactions?sort=newest", status: s400, code: inv, field: "sort"},
		{name: "status unknown", method: "GET", path: "/transactions?status=done", status: s400, code: inv, field: "status"},
		{name: "status one bad of two", method: "GET", path: "/transactions?status=new,pending", status: s400, code: inv, field: "status"},
		{name: "since not a time", method: "GET", path: "/transactions?since=yesterday", status: s400, code: inv, field: "since"},
		{name: "until bad month", method: "GET", path: "/transactions?until=2026-13-01T00:00:00Z", status: s400, code: inv, field: "until"},
		{name: "contractId not a UUID", method: "GET", path: "/transactions?contractId=x", status: s400, code: inv, field: "contractId"},
		{name: "method over 256", method: "GET", path: "/transactions?method=" + longQ, status: s400, code: inv, field: "method"},
		{name: "network over 256", method: "GET", path: "/transactions?network=" + longQ, status: s400, code: inv, field: "network"},
		{name: "transfers limit 0", method: "GET", path: tr + "?limit=0", status: s400, code: inv, field: "limit"},
		{name: "transfers limit 1001", method: "GET", path: tr + "?limit=1001", status: s400, code: inv, field: "limit"},
		{name: "transfers cursor garbage", method: "GET", path: tr + "?cursor=zzz", status: s400, code: inv, field: "cursor"},
		{name: "transfers cursor other version", method: "GET", path: tr + "?cursor=" + cursor("t2:1:1"), status: s400, code: inv, field: "cursor"},
		{name: "transfers fromBlock -1", method: "GET", path: tr + "?fromBlock=-1", status: s400, code: inv, field: "fromBlock"},
		{name: "transfers toBlock x", method: "GET", path: tr + "?toBlock=latest", status: s400, code: inv, field: "toBlock"},
		{name: "events fromBlock x", method: "GET", path: "/contracts/" + f.tokID + "/events?fromBlock=x", status: s400, code: inv, field: "fromBlock"},
		{name: "events fromBlock hex", method: "GET", path: "/contracts/" + f.tokID + "/events?fromBlock=0x10", status: s400, code: inv, field: "fromBlock"},
		{name: "events toBlock decimal", method: "GET", path: "/contracts/" + f.tokID + "/events?toBlock=1.5", status: s400, code: inv, field: "toBlock"},
		{name: "events toBlock empty", method: "GET", path: "/contracts/" + f.tokID + "/events?toBlock=", status: s400, code: inv, field: "toBlock"},
		{name: "events from after to", method: "GET", path: "/contracts/" + f.tokID + "/events?fromBlock=10&toBlock=5", status: s400, code: inv, field: "fromBlock"},
		{name: "events unknown event", method: "GET", path: "/contracts/" + f.tokID + "/events?event=Minted", status: s400, code: inv, field: "event"},
		{name: "events event over 256", method: "GET", path: "/contracts/" + f.tokID + "/events?event=" + longQ, status: s400, code: inv, field: "event"},
		{name: "block number x", method: "GET", path: "/contracts/network/dev/block/x", status: s400, code: inv, field: "number"},
		{name: "block number -1", method: "GET", path: "/contracts/network/dev/block/-1", status: s400, code: inv, field: "number"},
		{name: "block number 2^64", method: "GET", path: "/contracts/network/dev/block/18446744073709551616", status: s400, code: inv, field: "number"},
		{name: "block beyond head", method: "GET", path: "/contracts/network/dev/block/999999999", status: s404, code: nf, field: "number"},
		{name: "balance of unknown network", method: "GET", path: "/accounts/default/balance?network=nonet", status: s400, code: inv, field: "network"},
		{name: "account balance unknown network", method: "GET", path: "/accounts/" + f.opAcctID + "/balance?network=nonet", status: s400, code: inv, field: "network"},
		{name: "contracts text over 256", method: "GET", path: "/contracts?text=" + longQ, status: s400, code: inv, field: "text"},
		{name: "contracts network over 256", method: "GET", path: "/contracts?network=" + longQ, status: s400, code: inv, field: "network"},
		{name: "tokens name over 256", method: "GET", path: "/tokens?name=" + longQ, status: s400, code: inv, field: "name"},
		{name: "tokens symbol over 256", method: "GET", path: "/tokens?symbol=" + longQ, status: s400, code: inv, field: "symbol"},

		// Headers: Idempotency-Key.
		{name: "key over 255 chars", method: "POST", path: "/accounts", headers: []string{"Idempotency-Key", strings.Repeat("k", 256)}, status: s400, code: inv, field: "Idempotency-Key"},
		{name: "key with a space", method: "POST", path: tr, headers: []string{"Idempotency-Key", "my key"}, body: xfer(`"value":"1"`), status: s400, code: inv, field: "Idempotency-Key"},
		{name: "key not ASCII", method: "PUT", path: "/contracts", headers: []string{"Idempotency-Key", "clé"}, body: `{}`, status: s400, code: inv, field: "Idempotency-Key"},
		{name: "key on users not ASCII", method: "POST", path: "/users", headers: []string{"Idempotency-Key", "k€y"}, status: s400, code: inv, field: "Idempotency-Key"},
		{name: "key reused with another body", method: "POST", path: "/accounts", headers: []string{"Idempotency-Key", f.usedKey}, body: `{ }`, status: 409, code: "conflict", field: "Idempotency-Key"},
		{name: "key reused on another path", method: "POST", path: "/users", headers: []string{"Idempotency-Key", f.usedKey}, body: `{}`, status: 409, code: "conflict", field: "Idempotency-Key"},

		// Wrong methods.
		{name: "405", method: "DELETE", path: "/accounts", status: 405, code: "method_not_allowed"},
		{name: "405", method: "PATCH", path: "/accounts/default", status: 405, code: "method_not_allowed"},
		{name: "405", method: "DELETE", path: "/users/me", status: 405, code: "method_not_allowed"},
		{name: "405", method: "PUT", path: "/tokens", status: 405, code: "method_not_allowed"},
		{name: "405", method: "POST", path: "/transactions", status: 405, code: "method_not_allowed"},
		{name: "405", method: "PUT", path: "/transactions/" + f.opTx, status: 405, code: "method_not_allowed"},
		{name: "405", method: "DELETE", path: "/contracts", status: 405, code: "method_not_allowed"},
		{name: "405", method: "PUT", path: "/contracts/call", status: 405, code: "method_not_allowed"},
		{name: "405", method: "GET", path: "/contracts/" + f.tokID + "/send/transfer", status: 405, code: "method_not_allowed"},
		{name: "405", method: "POST", path: "/healthz", status: 405, code: "method_not_allowed"},
		{name: "405", method: "DELETE", path: "/openapi.json", status: 405, code: "method_not_allowed"},
		{name: "405", method: "PUT", path: "/networks", status: 405, code: "method_not_allowed"},
	}

	// Credentials, on every authenticated route.
	routes := []apiRoute{
		{"GET", "/accounts"}, {"POST", "/accounts"}, {"GET", "/accounts/default"}, {"PUT", "/accounts/default"},
		{"GET", "/accounts/default/balance"}, {"GET", "/accounts/" + f.opAcctID}, {"GET", "/accounts/" + f.opAcctID + "/balance"},
		{"POST", "/users"}, {"GET", "/users/me"}, {"POST", "/users/" + f.bID + "/tokens"}, {"PUT", "/users/" + f.bID + "/limits"},
		{"GET", "/tokens"}, {"GET", "/tokens/" + f.tokID}, {"GET", "/tokens/" + f.tokID + "/balances/default"},
		{"GET", "/tokens/" + f.tokID + "/balances/" + f.opAddr}, {"POST", tr}, {"GET", tr},
		{"GET", "/tokens/dev/" + f.tokAddr}, {"GET", "/tokens/dev/" + f.tokAddr + "/supply"}, {"GET", "/tokens/dev/" + f.tokAddr + "/circulating"},
		{"GET", "/transactions"}, {"GET", "/transactions/" + f.opTx}, {"DELETE", "/transactions/" + f.opTx}, {"GET", "/networks"},
		{"PUT", "/contracts"}, {"GET", "/contracts"}, {"POST", "/contracts/call"}, {"GET", "/contracts/" + f.tokID},
		{"POST", send}, {"POST", call}, {"GET", "/contracts/" + f.tokID + "/events"},
		{"GET", "/contracts/network/dev/block/latest"}, {"GET", "/contracts/network/dev/block/1"}, {"GET", "/contracts/network/dev/gas-price"},
		{"POST", dcall}, {"POST", dsend},
		{"POST", "/pools"}, {"GET", "/pools"}, {"GET", "/pools/" + unknownID}, {"PATCH", "/pools/" + unknownID}, {"DELETE", "/pools/" + unknownID},
	}
	rows = append(rows, poolBadInputRows(f)...)
	for _, rt := range routes {
		var body any
		if rt.method != "GET" && rt.method != "DELETE" {
			body = `{}`
		}
		for _, cred := range []struct{ name, auth string }{
			{"no Authorization", "-"},
			{"Basic scheme", "Basic dXNlcjpwYXNz"},
			{"Bearer without token", "Bearer"},
			{"token with bad characters", "Bearer not a token!"},
			{"unknown token", "Bearer txe_" + strings.Repeat("A", 43)},
		} {
			rows = append(rows, badRequest{name: cred.name, method: rt.method, path: rt.path, auth: cred.auth, body: body, status: 401, code: "unauthenticated"})
		}
	}
	return rows
}

// TestBadInputAuthFailuresLimited: an address that sends too many
// requests with a missing, malformed or unknown token gets 429
// rate_limited with the X-RateLimit-* headers of that limit and
// Retry-After, for a good token too (it is refused before any lookup);
// X-Forwarded-For does not change the address (no proxy is trusted by
// default).
func TestBadInputAuthFailuresLimited(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	// Per hour, so that the test does not depend on its speed.
	s := startService(t, t.TempDir(), "TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_SECOND=1000",
		"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR=5")
	unknown := "txe_" + strings.Repeat("B", 43)
	for _, token := range []string{"", "not a token!", unknown, unknown, unknown} {
		wantErr(t, s.call("GET", "/accounts", token, nil), 401, "unauthenticated", "")
	}
	for _, r := range []response{
		s.call("GET", "/accounts", unknown, nil),
		s.call("GET", "/accounts", s.Token, nil),
		s.callHeaders("GET", "/accounts", unknown, nil, "X-Forwarded-For", "198.51.100.9"),
	} {
		wantErr(t, r, 429, "rate_limited", "")
		if r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("limit headers of the refusal: %v", r.Header)
		}
		if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 || n > 3660 {
			t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
		}
	}
	s.stop()
}

// flipCase returns addr with the case of its first letter flipped, so that
// mixed case no longer matches the EIP-55 checksum.
func flipCase(addr string) string {
	b := []byte(addr)
	for i := 2; i < len(b); i++ {
		switch {
		case b[i] >= 'a' && b[i] <= 'f':
			b[i] -= 'a' - 'A'
			return string(b)
		case b[i] >= 'A' && b[i] <= 'F':
			b[i] += 'a' - 'A'
			return string(b)
		}
	}
	panic("address without letters: " + addr)
}

package http

import (
	"math/big"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

const maxUint256 = "115792089237316195423570985008687907853269984665640564039457584007913129639935"

func TestTransferBadInput(t *testing.T) {
	env := newTestEnv(t)
	to := env.bobAcct.Address.Hex()
	path := "/tokens/" + env.aliceToken20.ID + "/transfers"
	body := func(fields string) string { return `{"to":"` + to + `",` + fields + `}` }

	tests := []struct {
		name   string
		path   string
		token  string
		body   string
		status int
		code   engine.Code
		field  string
	}{
		{"no token", path, "-", body(`"value":"1"`), 401, engine.CodeUnauthenticated, ""},
		{"empty body", path, "", "", 400, engine.CodeInvalidJSON, ""},
		{"whitespace body", path, "", "  \n", 400, engine.CodeInvalidJSON, ""},
		{"malformed JSON", path, "", `{"to":`, 400, engine.CodeInvalidJSON, ""},
		{"not JSON", path, "", `to=0x1&value=1`, 400, engine.CodeInvalidJSON, ""},
		{"trailing garbage", path, "", body(`"value":"1"`) + `x`, 400, engine.CodeInvalidJSON, ""},
		{"two objects", path, "", body(`"value":"1"`) + `{}`, 400, engine.CodeInvalidJSON, ""},
		{"array body", path, "", `[` + body(`"value":"1"`) + `]`, 400, engine.CodeInvalidArgument, ""},
		{"null body", path, "", `null`, 400, engine.CodeInvalidArgument, ""},
		{"string body", path, "", `"hello"`, 400, engine.CodeInvalidArgument, ""},
		{"unknown field", path, "", body(`"value":"1","vaule":"2"`), 400, engine.CodeInvalidArgument, "vaule"},
		{"missing to", path, "", `{"value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"null to", path, "", `{"to":null,"value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"missing value", path, "", body(`"from":"` + env.aliceAcct.ID + `"`), 400, engine.CodeInvalidArgument, "value"},
		{"value as number", path, "", body(`"value":1`), 400, engine.CodeInvalidArgument, "value"},
		{"value as big number", path, "", body(`"value":1e30`), 400, engine.CodeInvalidArgument, "value"},
		{"value as bool", path, "", body(`"value":true`), 400, engine.CodeInvalidArgument, "value"},
		{"value as array", path, "", body(`"value":["1"]`), 400, engine.CodeInvalidArgument, "value"},
		{"negative value", path, "", body(`"value":"-1"`), 400, engine.CodeInvalidArgument, "value"},
		{"plus sign", path, "", body(`"value":"+1"`), 400, engine.CodeInvalidArgument, "value"},
		{"decimal value", path, "", body(`"value":"1.5"`), 400, engine.CodeInvalidArgument, "value"},
		{"exponent value", path, "", body(`"value":"1e18"`), 400, engine.CodeInvalidArgument, "value"},
		{"hex value", path, "", body(`"value":"0x10"`), 400, engine.CodeInvalidArgument, "value"},
		{"empty value", path, "", body(`"value":""`), 400, engine.CodeInvalidArgument, "value"},
		{"spaced value", path, "", body(`"value":" 1"`), 400, engine.CodeInvalidArgument, "value"},
		{"value over 2^256-1", path, "", body(`"value":"115792089237316195423570985008687907853269984665640564039457584007913129639936"`), 400, engine.CodeInvalidArgument, "value"},
		{"value of 100 digits", path, "", body(`"value":"` + strings.Repeat("9", 100) + `"`), 400, engine.CodeInvalidArgument, "value"},
		{"to as number", path, "", `{"to":1,"value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"short to", path, "", `{"to":"0x1234","value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"to without 0x", path, "", `{"to":"` + strings.ToLower(to[2:]) + `","value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"to not hex", path, "", `{"to":"0xZZ` + strings.ToLower(to[4:]) + `","value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"to with bad checksum", path, "", `{"to":"` + wrongChecksum(to) + `","value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"empty to", path, "", `{"to":"","value":"1"}`, 400, engine.CodeInvalidArgument, "to"},
		{"from as number", path, "", body(`"value":"1","from":5`), 400, engine.CodeInvalidArgument, "from"},
		{"from neither address nor id", path, "", body(`"value":"1","from":"alice"`), 400, engine.CodeInvalidArgument, "from"},
		{"from with bad checksum", path, "", body(`"value":"1","from":"` + wrongChecksum(env.aliceAcct.Address.Hex()) + `"`), 400, engine.CodeInvalidArgument, "from"},
		{"foreign from address", path, "", body(`"value":"1","from":"` + env.bobAcct.Address.Hex() + `"`), 404, engine.CodeNotFound, "from"},
		{"foreign from id", path, "", body(`"value":"1","from":"` + env.bobAcct.ID + `"`), 404, engine.CodeNotFound, "from"},
		{"unknown from address", path, "", body(`"value":"1","from":"0x000000000000000000000000000000000000dEaD"`), 404, engine.CodeNotFound, "from"},
		{"unknown from id", path, "", body(`"value":"1","from":"00000000-0000-4000-8000-000000000001"`), 404, engine.CodeNotFound, "from"},
		{"callbacks not array", path, "", body(`"value":"1","callbacks":"https://example.com/cb"`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"callback not string", path, "", body(`"value":"1","callbacks":[1]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"relative callback", path, "", body(`"value":"1","callbacks":["/cb"]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"ftp callback", path, "", body(`"value":"1","callbacks":["ftp://example.com/cb"]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"loopback callback", path, "", body(`"value":"1","callbacks":["http://127.0.0.1:9/cb"]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"private callback", path, "", body(`"value":"1","callbacks":["http://10.1.2.3/cb"]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"link-local callback", path, "", body(`"value":"1","callbacks":["http://[fe80::1]/cb"]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"localhost callback", path, "", body(`"value":"1","callbacks":["http://localhost:8080/cb"]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"too many callbacks", path, "", body(`"value":"1","callbacks":[` + strings.TrimSuffix(strings.Repeat(`"https://example.com/cb",`, 11), ",") + `]`), 400, engine.CodeInvalidArgument, "callbacks"},
		{"unknown contract", "/tokens/00000000-0000-4000-8000-000000000000/transfers", "", body(`"value":"1"`), 404, engine.CodeNotFound, ""},
		{"foreign contract", "/tokens/" + env.bobToken20.ID + "/transfers", "", body(`"value":"1"`), 404, engine.CodeNotFound, ""},
		{"not a token", "/tokens/" + env.aliceNFT.ID + "/transfers", "", body(`"value":"1"`), 404, engine.CodeNotFound, ""},
		{"non-UUID contract id", "/tokens/demo/transfers", "", body(`"value":"1"`), 404, engine.CodeNotFound, ""},
		{"body over 1 MiB", path, "", body(`"value":"1","from":"` + strings.Repeat("a", 1<<20) + `"`), 413, engine.CodePayloadTooLarge, ""},
		{"wrong method", path, "", "", 405, codeMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := env.aliceToken
			if tt.token == "-" {
				token = ""
			}
			method := "POST"
			if tt.status == 405 {
				method = "PATCH"
			}
			writes := env.store.rows(t)
			rec := env.do(method, tt.path, token, tt.body)
			wantError(t, rec, tt.status, tt.code, tt.field)
			if n := len(env.engine.submissions()); n != 0 {
				t.Fatalf("engine received %d submissions", n)
			}
			if env.store.rows(t) != writes {
				t.Fatal("the store was written")
			}
		})
	}
}

func TestTransferBodyOverLimitWithoutLength(t *testing.T) {
	env := newTestEnv(t)
	big := `{"to":"` + env.bobAcct.Address.Hex() + `","value":"1","x":"` + strings.Repeat("a", 1<<20) + `"}`
	req := newChunkedRequest("POST", "/tokens/"+env.aliceToken20.ID+"/transfers", big)
	req.Header.Set("Authorization", "Bearer "+env.aliceToken)
	rec := serve(env, req)
	wantError(t, rec, http.StatusRequestEntityTooLarge, engine.CodePayloadTooLarge, "")
	if len(env.engine.submissions()) != 0 {
		t.Fatal("submitted")
	}
}

func TestTransferAccepted(t *testing.T) {
	env := newTestEnv(t)
	to := env.bobAcct.Address
	rec := env.do("POST", "/tokens/"+env.aliceToken20.ID+"/transfers", env.aliceToken,
		`{"to":"`+strings.ToLower(to.Hex())+`","value":"000250","callbacks":["https://example.com/cb?x=1"]}`)
	wantStatus(t, rec, http.StatusAccepted)

	var raw map[string]any
	decodeData(t, rec, &raw)
	want := map[string]any{
		"type":            "contract-method",
		"contractId":      env.aliceToken20.ID,
		"contractAddress": env.aliceToken20.Address.Hex(),
		"contractNetwork": "dev",
		"contractName":    "Demo Token",
		"contractBwtype":  "erc20",
		"from":            env.aliceAcct.Address.Hex(),
		"method":          "transfer",
		"value":           "0",
		"status":          "new",
		"network":         "dev",
		"created":         "2026-11-21T23:25:31.120Z",
	}
	for k, v := range want {
		if raw[k] != v {
			t.Errorf("%s = %v, want %v", k, raw[k], v)
		}
	}
	params, _ := raw["parameters"].([]any)
	if len(params) != 2 || params[0] != to.Hex() || params[1] != "250" {
		t.Errorf("parameters = %v", raw["parameters"])
	}
	if cbs, _ := raw["callbacks"].([]any); len(cbs) != 1 || cbs[0] != "https://example.com/cb?x=1" {
		t.Errorf("callbacks = %v", raw["callbacks"])
	}
	for _, absent := range []string{"submitted", "ended", "transactionHash", "blockNumber", "events", "error", "nonce", "gasUsed", "dependsOn", "waitForAsset", "waitForValue"} {
		if _, ok := raw[absent]; ok {
			t.Errorf("%s present on a new transaction", absent)
		}
	}
	if strings.Contains(rec.Body.String(), "null") {
		t.Errorf("null in %s", rec.Body.String())
	}
	id, _ := raw["id"].(string)
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("id = %q", id)
	}

	subs := env.engine.submissions()
	if len(subs) != 1 {
		t.Fatalf("%d submissions", len(subs))
	}
	tx := subs[0]
	if tx.ID != id || tx.Owner != env.alice.ID || tx.AccountID != env.aliceAcct.ID || tx.From != env.aliceAcct.Address ||
		tx.Network != "dev" || tx.ContractID != env.aliceToken20.ID || tx.ContractAddress != env.aliceToken20.Address ||
		tx.Status != engine.StatusNew || !tx.Created.Equal(testNow) || tx.Value == nil || tx.Value.Sign() != 0 {
		t.Errorf("submitted = %+v", tx)
	}
	parsed, err := abi.JSON(strings.NewReader(testERC20ABI))
	if err != nil {
		t.Fatal(err)
	}
	wantData, err := parsed.Pack("transfer", to, big.NewInt(250))
	if err != nil {
		t.Fatal(err)
	}
	if !bytesEqual(tx.Data, wantData) {
		t.Errorf("data = %x, want %x", tx.Data, wantData)
	}

	// The record reads back through GET /transactions/{id}, only for its owner.
	rec = env.do("GET", "/transactions/"+id, env.aliceToken, "")
	wantStatus(t, rec, http.StatusOK)
	var back map[string]any
	decodeData(t, rec, &back)
	if back["id"] != id || back["status"] != "new" || back["method"] != "transfer" {
		t.Errorf("read back = %v", back)
	}
	wantError(t, env.do("GET", "/transactions/"+id, env.bobToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	wantError(t, env.do("GET", "/transactions/x"+id[1:], env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
	wantError(t, env.do("GET", "/transactions/00000000-0000-4000-8000-000000000000", env.aliceToken, ""), http.StatusNotFound, engine.CodeNotFound, "")
}

func TestTransferFrom(t *testing.T) {
	env := newTestEnv(t)
	// A second account of alice, named by address (in lower case) and by id.
	rec := env.do("POST", "/accounts", env.aliceToken, "")
	var second accountView
	decodeData(t, rec, &second)
	path := "/tokens/" + env.aliceToken20.ID + "/transfers"
	for i, from := range []string{strings.ToLower(second.Address), second.Address, second.ID, strings.ToUpper(second.ID)} {
		rec := env.do("POST", path, env.aliceToken, `{"to":"`+env.bobAcct.Address.Hex()+`","value":"`+maxUint256+`","from":"`+from+`"}`)
		wantStatus(t, rec, http.StatusAccepted)
		subs := env.engine.submissions()
		if len(subs) != i+1 {
			t.Fatalf("%d submissions", len(subs))
		}
		tx := subs[i]
		if tx.AccountID != second.ID || tx.From != common.HexToAddress(second.Address) || tx.Parameters[1] != maxUint256 {
			t.Errorf("from %s: submitted %+v", from, tx)
		}
	}

	// A user without a default account must name the sender.
	rec = env.do("POST", "/users", env.aliceToken, `{"auth":true}`)
	var u userView
	decodeData(t, rec, &u)
	// (it has no tokens of its own, so give it a token contract)
	ct := *env.aliceToken20
	ct.ID, ct.Owner = "11111111-1111-4111-8111-111111111111", u.ID
	if err := env.store.CreateContract(t.Context(), &ct); err != nil {
		t.Fatal(err)
	}
	wantError(t, env.do("POST", "/tokens/"+ct.ID+"/transfers", u.Token, `{"to":"`+env.bobAcct.Address.Hex()+`","value":"1"}`),
		http.StatusNotFound, engine.CodeNotFound, "from")
}

func TestTransferUnconfiguredNetwork(t *testing.T) {
	env := newTestEnv(t)
	ct := *env.aliceToken20
	ct.ID, ct.Network = "22222222-2222-4222-8222-222222222222", "gone"
	if err := env.store.CreateContract(t.Context(), &ct); err != nil {
		t.Fatal(err)
	}
	wantError(t, env.do("POST", "/tokens/"+ct.ID+"/transfers", env.aliceToken, `{"to":"`+env.bobAcct.Address.Hex()+`","value":"1"}`),
		http.StatusServiceUnavailable, engine.CodeUnavailable, "")
	if len(env.engine.submissions()) != 0 {
		t.Fatal("submitted")
	}
}

func TestTransferPrivateCallbacksAllowed(t *testing.T) {
	env := newTestEnv(t)
	env.server.cfg.AllowPrivateCallbacks = true
	rec := env.do("POST", "/tokens/"+env.aliceToken20.ID+"/transfers", env.aliceToken,
		`{"to":"`+env.bobAcct.Address.Hex()+`","value":"1","callbacks":["http://127.0.0.1:8081/cb"]}`)
	wantStatus(t, rec, http.StatusAccepted)
	var v engine.TransactionView
	decodeData(t, rec, &v)
	if len(v.Callbacks) != 1 {
		t.Errorf("callbacks = %v", v.Callbacks)
	}
}

// TestCallbackSpecialRangesRefused: a transfer or a method send with a
// callback on one of the ranges of issue 18 (shared address space, "this
// network", IETF protocol assignments, benchmarking, reserved, and IPv6
// forms that embed a private IPv4 address) is 400 invalid_argument on
// callbacks, and nothing is stored or submitted; the same requests with a
// public IPv4 address and its NAT64 and 6to4 forms are accepted.
func TestCallbackSpecialRangesRefused(t *testing.T) {
	e := newContractEnv(t)
	to := e.bobAcct.Address.Hex()
	transfer := "/tokens/" + e.aliceToken20.ID + "/transfers"
	send := "/contracts/" + e.aliceToken20.ID + "/send/transfer(address,uint256)"
	bodies := map[string]func(cb string) string{
		transfer: func(cb string) string { return `{"to":"` + to + `","value":"1","callbacks":["` + cb + `"]}` },
		send: func(cb string) string {
			return `{"arg":["` + to + `","1"],"callbacks":["https://example.com/ok","` + cb + `"]}`
		},
	}
	writes := e.store.rows(t)
	for _, host := range []string{
		"100.64.0.1", "0.0.0.0", "192.0.0.1", "198.18.0.1", "240.0.0.1", "[64:ff9b::a9fe:a9fe]", "[2002:a9fe:a9fe::1]",
		"[::ffff:127.0.0.1]", "100.127.255.254:8443", "198.19.255.255", "255.255.255.255", "[::ffff:100.64.0.1]", "[2001::1]",
	} {
		for path, body := range bodies {
			t.Run(host+" "+path[:strings.LastIndexByte(path, '/')], func(t *testing.T) {
				rec := e.do("POST", path, e.aliceToken, body("http://"+host+"/cb"))
				wantError(t, rec, 400, engine.CodeInvalidArgument, "callbacks")
				if !strings.Contains(rec.Body.String(), "not publicly routable") {
					t.Errorf("message does not say why: %s", rec.Body.String())
				}
			})
		}
	}
	if n := len(e.engine.submissions()); n != 0 {
		t.Fatalf("%d transactions submitted", n)
	}
	if e.store.rows(t) != writes {
		t.Fatal("the store was written")
	}
	// The rule refuses ranges, not IPv4 literals or embedding forms.
	for _, host := range []string{"8.8.8.8", "[64:ff9b::808:808]", "[2002:808:808::1]", "[::ffff:8.8.8.8]", "100.128.0.1"} {
		for path, body := range bodies {
			wantStatus(t, e.do("POST", path, e.aliceToken, body("https://"+host+"/cb")), http.StatusAccepted)
		}
	}
	if n := len(e.engine.submissions()); n != 10 {
		t.Fatalf("%d transactions submitted, want 10", n)
	}
}

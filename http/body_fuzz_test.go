package http

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// The fuzz targets of this package drive the real router on the fakes of
// newTestEnv. Building the environment costs far more than one request, so
// each fuzzing process builds it once and the targets share it; every
// iteration only compares counts before and after its own request.
// fuzzEnv returns the environment of fuzz target f, closed when it ends.
func fuzzEnv(f *testing.F) *testEnv { return newTestEnv(f) }

// fuzzReset clears env's logs, which would otherwise grow for the whole run.
func fuzzReset(env *testEnv) { env.logs.Reset() }

// fuzzServe sends one request as alice and returns the recorder.
func fuzzServe(env *testEnv, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+env.aliceToken)
	rec := httptest.NewRecorder()
	env.server.Handler().ServeHTTP(rec, req)
	return rec
}

// fuzzCheckEnvelope fails unless rec is not 5xx and its body is the
// documented envelope: {"data": ...} for 2xx, otherwise exactly
// {"error": {"code", "message"[, "field"]}} with non-empty strings. It
// returns the error of a non-2xx answer.
func fuzzCheckEnvelope(t *testing.T, rec *httptest.ResponseRecorder, request string) (status int, e errorDetail) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s: status %d: %s", request, rec.Code, rec.Body.String())
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("%s: status %d, body is not a JSON object: %q", request, rec.Code, rec.Body.String())
	}
	if rec.Code >= 200 && rec.Code < 300 {
		if len(body) != 1 || body["data"] == nil {
			t.Fatalf("%s: status %d, body is not {\"data\"}: %s", request, rec.Code, rec.Body.String())
		}
		return rec.Code, e
	}
	if len(body) != 1 || body["error"] == nil {
		t.Fatalf("%s: status %d, body is not {\"error\"}: %s", request, rec.Code, rec.Body.String())
	}
	var detail map[string]json.RawMessage
	if err := json.Unmarshal(body["error"], &detail); err != nil {
		t.Fatalf("%s: status %d, error is not an object: %s", request, rec.Code, rec.Body.String())
	}
	for k := range detail {
		if k != "code" && k != "message" && k != "field" {
			t.Fatalf("%s: status %d, unexpected error member %q: %s", request, rec.Code, k, rec.Body.String())
		}
	}
	if err := json.Unmarshal(body["error"], &e); err != nil || e.Code == "" || e.Message == "" {
		t.Fatalf("%s: status %d, error without code or message: %s", request, rec.Code, rec.Body.String())
	}
	if raw, set := detail["field"]; set && (e.Field == "" || string(raw) == "null") {
		t.Fatalf("%s: status %d, empty field: %s", request, rec.Code, rec.Body.String())
	}
	return rec.Code, e
}

// fuzzBody sends body to method path and checks the envelope, and that a
// 4xx submitted nothing to the engine.
func fuzzBody(t *testing.T, env *testEnv, method, path, body string) {
	fuzzReset(env)
	before := len(env.engine.submissions())
	rec := fuzzServe(env, method, path, body)
	status, _ := fuzzCheckEnvelope(t, rec, method+" "+path+" "+truncateForLog(body))
	if after := len(env.engine.submissions()); status >= 400 && after != before {
		t.Fatalf("%s %s %q: status %d but %d transaction(s) submitted", method, path, body, status, after-before)
	}
}

func truncateForLog(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

const (
	fuzzAddr  = "0x52908400098527886e0f7030069857d2e4169ee7"
	fuzzAddr2 = "0x8617E340B3D01FA5F11F306F4090FD50E238070D"
	fuzzMaxU  = "115792089237316195423570985008687907853269984665640564039457584007913129639935"
)

// fuzzBodySeeds are bodies every body target starts from.
var fuzzBodySeeds = []string{
	``, ` `, `{}`, `null`, `[]`, `"x"`, `1`, `{`, `{}{}`, `{} x`, `{"a":1}`, `{"to":1}`, `{"to":null}`,
	`{"to":"` + fuzzAddr + `","value":"1","to":"x"}`, "{\"to\":\"\xff\"}", `{"value":"1",}`,
	`{"callbacks":"http://x"}`, `{"callbacks":[1]}`, `{"waitTimeout":1e400}`, `{"waitTimeout":-1}`, `{"waitTimeout":1.5}`,
	`{"dependsOn":[null]}`, `{"` + strings.Repeat(`a`, 300) + `":1}`, strings.Repeat(`[`, 10000),
}

// FuzzTransferBody: POST /tokens/{id}/transfers never answers 5xx, always
// answers the documented envelope, and a 4xx submits nothing.
func FuzzTransferBody(f *testing.F) {
	for _, s := range append(fuzzBodySeeds,
		`{"to":"`+fuzzAddr+`","value":"1"}`,
		`{"to":"`+fuzzAddr2+`","value":"`+fuzzMaxU+`","callbacks":["https://example.com/cb"]}`,
		`{"to":"`+fuzzAddr+`","value":"1","callbacks":["http://127.0.0.1/"]}`,
		`{"to":"`+fuzzAddr+`","value":"1","callbacks":["http://[fe80::1%25eth0]/"]}`,
		`{"to":"`+fuzzAddr+`","value":"1","from":"`+fuzzAddr+`"}`,
		`{"to":"`+fuzzAddr+`","value":"1","from":"00000000-0000-0000-0000-000000000000"}`,
		`{"to":"`+fuzzAddr+`","value":"1","waitForAsset":"`+fuzzAddr2+`","waitForValue":"5","waitTimeout":60}`,
		`{"to":"`+fuzzAddr+`","value":"1","dependsOn":["00000000-0000-0000-0000-000000000000"]}`,
		`{"to":"`+fuzzAddr+`","value":"-1"}`, `{"to":"`+fuzzAddr+`","value":1}`, `{"to":"`+fuzzAddr+`","value":"1e3"}`,
	) {
		f.Add(s)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzReset(env)
		fuzzBody(t, env, "POST", "/tokens/"+env.aliceToken20.ID+"/transfers", body)
	})
}

// fuzzSendMethods are the methods FuzzSendBody picks from.
var fuzzSendMethods = []string{"transfer", "approve", "transferFrom", "transfer(address,uint256)", "balanceOf", "nosuch"}

// FuzzSendBody: POST /contracts/{id}/send/{method} never answers 5xx, always
// answers the documented envelope, and a 4xx submits nothing.
func FuzzSendBody(f *testing.F) {
	for _, s := range append(fuzzBodySeeds,
		`{"arg":["`+fuzzAddr+`","1"]}`,
		`{"arg":["`+fuzzAddr+`",1],"value":"0"}`,
		`{"arg":["`+fuzzAddr+`","1"],"value":"1","callbacks":["https://example.com/cb"],"waitTimeout":5}`,
		`{"arg":["`+fuzzAddr+`","`+fuzzMaxU+`"],"from":"`+fuzzAddr2+`"}`,
		`{"arg":{"to":"`+fuzzAddr+`"}}`, `{"arg":"`+fuzzAddr+`"}`, `{"arg":null}`, `{"arg":[[],{}]}`,
		`{"arg":["`+fuzzAddr+`","1"],"type":"erc20"}`, `{"arg":["`+fuzzAddr+`","1"],"abi":[]}`,
		`{"arg":["`+fuzzAddr+`","1"],"abi":[{"type":"function","name":"transfer","inputs":[{"name":"t","type":"tuple","components":[]}]}]}`,
	) {
		f.Add(uint8(0), s)
	}
	f.Add(uint8(2), `{"arg":["`+fuzzAddr+`","`+fuzzAddr2+`","5"]}`)
	f.Add(uint8(4), `{"arg":["`+fuzzAddr+`"]}`)
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, method uint8, body string) {
		fuzzReset(env)
		m := fuzzSendMethods[int(method)%len(fuzzSendMethods)]
		fuzzBody(t, env, "POST", "/contracts/"+env.aliceToken20.ID+"/send/"+m, body)
	})
}

// FuzzCreateContractBody: PUT /contracts never answers 5xx and always
// answers the documented envelope.
func FuzzCreateContractBody(f *testing.F) {
	for _, s := range append(fuzzBodySeeds,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","type":"erc20"}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","abi":`+testERC20ABI+`}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","abi":[{"type":"function","name":"f","inputs":[{"name":"x","type":"uint7"}]}]}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","abi":[{"type":"function","name":"f","inputs":[{"name":"x","type":"tuple","components":[{"name":"","type":"uint8"},{"name":"","type":"uint8"}]}]}]}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","abi":[{"type":"event","name":"E","inputs":[{"name":"a","type":"string","indexed":true}]}]}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","abi":{}}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","abi":"[]"}`,
		`{"name":"T","network":"dev","address":"`+fuzzAddr+`","type":"erc721","abi":[]}`,
		`{"name":"","network":"dev","address":"`+fuzzAddr+`"}`,
		`{"name":"`+strings.Repeat("n", 500)+`","network":"dev","address":"`+fuzzAddr+`"}`,
		`{"name":"T","network":"nope","address":"`+fuzzAddr+`"}`,
	) {
		f.Add(s)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzBody(t, env, "PUT", "/contracts", body)
	})
}

// FuzzCreateSubscriptionBody: POST /subscriptions never answers 5xx and
// always answers the documented envelope, whatever the ABI, event, filters
// and fromBlock.
func FuzzCreateSubscriptionBody(f *testing.F) {
	direct := `"network":"dev","address":"` + fuzzAddr + `"`
	odd := `[{"type":"event","name":"E","inputs":[{"name":"s","type":"string","indexed":true},{"name":"b","type":"bytes","indexed":true},` +
		`{"name":"t","type":"tuple","indexed":true,"components":[{"name":"x","type":"uint8"}]}]},` +
		`{"type":"event","name":"E","inputs":[{"name":"a","type":"uint256[]","indexed":true}]},{"type":"event","name":7}]`
	for _, s := range append(fuzzBodySeeds,
		`{`+direct+`,"type":"erc20","event":"Transfer","filters":{"to":"`+fuzzAddr2+`"}}`,
		`{`+direct+`,"type":"erc721","event":"Transfer","filters":{"tokenId":["1","2"]},"fromBlock":"7"}`,
		`{`+direct+`,"abi":`+odd+`,"event":"E(string,bytes,(uint8))","filters":{"s":"x","b":"0x01","t":{"x":"1"}}}`,
		`{`+direct+`,"abi":`+odd+`,"event":"E(uint256[])","filters":{"a":["1"]}}`,
		`{`+direct+`,"abi":`+odd+`,"event":"E"}`,
		`{`+direct+`,"abi":[{"type":"event","name":"E","anonymous":true,"inputs":[]}],"event":"E"}`,
		`{`+direct+`,"abi":[{"type":"event","inputs":[]}],"event":""}`,
		`{`+direct+`,"type":"erc20","event":"Transfer","filters":{"to":[null]},"fromBlock":null}`,
		`{`+direct+`,"type":"erc20","event":"Transfer","filters":{"value":{}},"confirmations":9007199254740993}`,
		`{`+direct+`,"type":"erc20","event":"Transfer","fromBlock":18446744073709551616}`,
		`{"contractId":"00000000-0000-0000-0000-000000000000","event":"Transfer"}`,
		`{"kind":"deposits","network":"dev","fromBlock":"latest","callbacks":["https://example.com/x"]}`,
		`{"kind":"deposits","network":"dev","filters":null,"abi":null}`,
	) {
		f.Add(s)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzBody(t, env, "POST", "/subscriptions", body)
	})
}

package http

import (
	"testing"

	"github.com/txengine/txengine/engine"
)

// TestDecodeFieldNamesExact checks that body field names match exactly and
// once: encoding/json alone accepts "Value" for "value" and keeps the last
// of two, so a body could mean one thing to a validating proxy and another
// to the service.
func TestDecodeFieldNamesExact(t *testing.T) {
	env := newTestEnv(t)
	to := env.bobAcct.Address.Hex()
	tr := "/tokens/" + env.aliceToken20.ID + "/transfers"
	tests := []struct {
		name, path, body, field string
	}{
		{"other case", tr, `{"to":"` + to + `","Value":"1"}`, "Value"},
		{"upper case", tr, `{"TO":"` + to + `","value":"1"}`, "TO"},
		{"twice", tr, `{"to":"` + to + `","value":"1","value":"1000"}`, "value"},
		{"twice with other case", tr, `{"to":"` + to + `","value":"1","vALUE":"1000"}`, "vALUE"},
		{"batch field case", "/contracts/call", `{"CALLS":[]}`, "CALLS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, env.do("POST", tc.path, env.aliceToken, tc.body), 400, engine.CodeInvalidArgument, tc.field)
		})
	}
	if n := len(env.engine.submissions()); n != 0 {
		t.Fatalf("%d transactions submitted", n)
	}
	// A batch call item with a field in another case fails alone.
	rec := env.do("POST", "/contracts/call", env.aliceToken,
		`{"calls":[{"contractId":"`+env.aliceToken20.ID+`","Method":"decimals"},{"contractId":"`+env.aliceToken20.ID+`","method":"decimals"}]}`)
	wantStatus(t, rec, 200)
	if body := rec.Body.String(); body != `{"data":[{"error":{"code":"invalid_argument","message":"unknown field \"Method\"","field":"Method"}},{"result":"18"}]}` {
		t.Fatalf("batch: %s", body)
	}
	// Exact names still decode.
	wantStatus(t, env.do("POST", tr, env.aliceToken, `{"to":"`+to+`","value":"1"}`), 202)
}

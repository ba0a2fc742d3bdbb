package http

import (
	"bytes"
	"encoding/json"
	"slices"
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

// FuzzMemberNames: wherever memberNames reads the member names of a valid
// JSON object, it reads what encoding/json's tokens say.
func FuzzMemberNames(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `{"to":"0xab","value":"1"}`, `{"a":{"b":[1,{"c":"}"}]},"d":"\"},"}`,
		`{"a":1,"a":2}`, `{"a\u0062":1}`, `{"a":[],"b":{},"c":null,"d":true,"e":-1.5e3}`,
		"{\n\t\"x\" :\r 1 , \"y\":\"\\\\\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			return
		}
		got, ok := memberNames(obj)
		dec := json.NewDecoder(bytes.NewReader(obj))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			if ok {
				t.Fatalf("memberNames read names %q of a value that is not an object", got)
			}
			return
		}
		var want []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, tok.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if !ok {
			if len(want) <= maxFastMembers && !bytes.Contains(obj, []byte(`\`)) && !hasNonASCII(obj) {
				t.Fatalf("memberNames gave up on %q", obj)
			}
			return
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("memberNames(%q) = %q, want %q", obj, got, want)
		}
	})
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

package e2e

import (
	"testing"
	"time"

	"github.com/txengine/txengine/internal/servicetest"
)

// callHeaders is call with extra request headers (name, value pairs),
// without the contract check.
func (s *service) callHeaders(method, path, token string, body any, headers ...string) response {
	s.t.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	r, _, err := servicetest.Call(nil, s.URL, servicetest.Request{Method: method, Path: path, Token: token, Body: body, Header: h})
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// wantErr fails unless r is an error response with status, code and field.
func wantErr(t *testing.T, r response, status int, code, field string) {
	t.Helper()
	e, _ := r.Body["error"].(map[string]any)
	got, _ := e["field"].(string)
	if r.Status != status || e == nil || e["code"] != code || got != field {
		t.Fatalf("got %d %s, want %d %s field %q", r.Status, r.Raw, status, code, field)
	}
}

// eventually retries f until it returns true or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

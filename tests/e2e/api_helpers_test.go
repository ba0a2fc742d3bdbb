package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// callHeaders is call with extra request headers (name, value pairs).
func (s *service) callHeaders(method, path, token string, body any, headers ...string) response {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, ok := body.(string)
		if !ok {
			b, err := json.Marshal(body)
			if err != nil {
				s.t.Fatal(err)
			}
			raw = string(b)
		}
		rd = bytes.NewReader([]byte(raw))
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
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

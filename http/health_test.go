package http

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/txengine/txengine/engine"
)

func TestHealthz(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/healthz", "", "")
	wantStatus(t, rec, http.StatusOK)
	if strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Errorf("body = %s", rec.Body.String())
	}
}

func TestReadyz(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusOK)
	if got := strings.TrimSpace(rec.Body.String()); got != `{"status":"ready","checks":{"database":"ok","network:dev":"ok"}}` {
		t.Errorf("body = %s", got)
	}

	env.chain.headErr = &url.Error{Op: "Post", URL: "https://node.example/v3/SECRETKEY", Err: errors.New("dial tcp: connection refused")}
	rec = env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	var body struct {
		Error  errorDetail       `json:"error"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error.Code != engine.CodeUnavailable || !strings.HasPrefix(body.Error.Message, "not ready: network:dev: ") {
		t.Errorf("error = %+v", body.Error)
	}
	if body.Checks["database"] != "ok" || body.Checks["network:dev"] == "ok" {
		t.Errorf("checks = %v", body.Checks)
	}
	if strings.Contains(rec.Body.String(), "SECRETKEY") || strings.Contains(env.logs.String(), "SECRETKEY") {
		t.Errorf("node URL leaked: %s", rec.Body.String())
	}

	env.chain.headErr = nil
	env.store.failPing(errors.New("database is locked"))
	rec = env.do("GET", "/readyz", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if !strings.Contains(rec.Body.String(), "not ready: database: database is locked") {
		t.Errorf("body = %s", rec.Body.String())
	}
}

func TestOpenAPIServed(t *testing.T) {
	env := newTestEnv(t)
	rec := env.do("GET", "/openapi.json", "", "")
	wantStatus(t, rec, http.StatusOK)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" || doc.Info.Version != "1.2.1" {
		t.Errorf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}
}

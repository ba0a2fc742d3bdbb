package http

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsBearerToken: with a metrics token, GET /metrics on the API
// listener answers 401 unauthenticated (the API's error format, without
// the metrics) to no token, an API token and a wrong token, and the
// metrics to the right one; MetricsOnly (the separate listener) does the
// same with the guarded handler.
func TestMetricsBearerToken(t *testing.T) {
	const token = "metrics-token-0123456789abcdef"
	env := newTestEnv(t)
	inner := env.server.metricsHandler
	if inner == nil {
		t.Fatal("the test server has no metrics handler")
	}
	env.server.metricsHandler = MetricsAuth(token, inner)
	for _, tok := range []string{"", env.bobToken, "wrong", token + "x"} {
		rec := env.do("GET", "/metrics", tok, "")
		wantError(t, rec, http.StatusUnauthorized, "unauthenticated", "")
		if strings.Contains(rec.Body.String(), "txengine_") || rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %s %v", tok, rec.Body, rec.Header())
		}
	}
	rec := env.do("GET", "/metrics", token, "")
	wantStatus(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), "txengine_http_requests_total") {
		t.Errorf("no metrics with the right token: %s", rec.Body)
	}

	sep := MetricsOnly(MetricsAuth(token, inner))
	for tok, want := range map[string]int{"": 401, "wrong": 401, token: 200} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rec := httptest.NewRecorder()
		sep.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("separate listener, token %q: %d, want %d", tok, rec.Code, want)
		}
	}
	if MetricsAuth("", inner) == nil {
		t.Error("no token: nil handler")
	}
}

package http

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gaugeOf returns the value of the counter or gauge name with labels from
// env's registry, or -1 when there is no such series.
func gaugeOf(t *testing.T, env *testEnv, name string, labels map[string]string) float64 {
	t.Helper()
	return valueIn(t, env.registry, name, labels)
}

// valueIn returns the value of the series of name in reg whose labels
// include labels, or -1.
func valueIn(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	next:
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestMetricsEndpoint scrapes GET /metrics without a token and checks the
// HTTP series: by route template (never the raw path), method and status,
// with the right types.
func TestMetricsEndpoint(t *testing.T) {
	env := newTestEnv(t)
	wantStatus(t, env.do("GET", "/accounts/"+env.bobAcct.ID, env.bobToken, ""), http.StatusOK)
	wantStatus(t, env.do("GET", "/accounts/"+env.aliceAcct.ID, env.bobToken, ""), http.StatusNotFound)
	wantStatus(t, env.do("GET", "/no/such/path", "", ""), http.StatusNotFound)

	rec := env.do("GET", "/metrics", "", "")
	wantStatus(t, rec, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type = %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	for name, typ := range map[string]dto.MetricType{
		"txengine_http_requests_total":           dto.MetricType_COUNTER,
		"txengine_http_request_duration_seconds": dto.MetricType_HISTOGRAM,
	} {
		fam, ok := families[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if fam.GetType() != typ {
			t.Errorf("%s is %s, want %s", name, fam.GetType(), typ)
		}
	}
	seen := map[string]float64{}
	for _, m := range families["txengine_http_requests_total"].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			key += l.GetName() + "=" + l.GetValue() + " "
		}
		seen[strings.TrimSpace(key)] = m.GetCounter().GetValue()
	}
	for _, want := range []string{
		"method=GET route=/accounts/:id status=200",
		"method=GET route=/accounts/:id status=404",
		"method=GET route=(unmatched) status=404",
	} {
		if seen[want] != 1 {
			t.Errorf("series {%s} = %v, want 1 (have %v)", want, seen[want], seen)
		}
	}
	if strings.Contains(rec.Body.String(), env.bobAcct.ID) {
		t.Error("a raw path (with an id) became a label")
	}
}

// TestMetricsElsewhere: without a metrics handler (metrics.listen set) the
// main listener answers 404 on /metrics.
func TestMetricsElsewhere(t *testing.T) {
	env := newTestEnv(t)
	env.server.metricsHandler = nil
	wantError(t, env.do("GET", "/metrics", "", ""), http.StatusNotFound, "not_found", "")
}

// TestRequestIDInHandlerLogs: what is logged while serving a request, with
// the request's context, names the request id.
func TestRequestIDInHandlerLogs(t *testing.T) {
	env := newTestEnv(t)
	env.chain.headErr = errors.New("connection refused")
	env.do("GET", "/readyz", "", "", "X-Request-Id", "req-42")
	for _, line := range strings.Split(strings.TrimSpace(env.logs.String()), "\n") {
		if strings.Contains(line, "readiness check failed") && !strings.Contains(line, "request_id=req-42") {
			t.Errorf("log line without the request id: %s", line)
		}
	}
	if !strings.Contains(env.logs.String(), "readiness check failed") {
		t.Fatalf("no readiness log: %s", env.logs.String())
	}
}

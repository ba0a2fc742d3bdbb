package rpcmetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sample is an excerpt of the service's /metrics, with lines that must not
// count: other metrics whose names share a prefix, the histogram of the
// same requests, comments, and a label value with a brace, a quote and a
// comma inside.
const sample = `# HELP txengine_rpc_batched_requests_total JSON-RPC requests sent inside batches.
# TYPE txengine_rpc_batched_requests_total counter
txengine_rpc_batched_requests_total{method="eth_getTransactionReceipt",network="geth"} 2048
txengine_rpc_batched_requests_total{method="eth_sendRawTransaction",network="geth"} 1000
# HELP txengine_rpc_request_duration_seconds Latency of JSON-RPC requests.
# TYPE txengine_rpc_request_duration_seconds histogram
txengine_rpc_request_duration_seconds_bucket{method="batch",network="geth",outcome="ok",le="0.005"} 3
txengine_rpc_request_duration_seconds_count{method="batch",network="geth",outcome="ok"} 5
# HELP txengine_rpc_requests_total JSON-RPC requests to the nodes.
# TYPE txengine_rpc_requests_total counter
txengine_rpc_requests_total{method="batch",network="geth",outcome="ok"} 5
txengine_rpc_requests_total{method="batch",network="geth",outcome="timeout"} 1
txengine_rpc_requests_total{method="eth_blockNumber",network="geth",outcome="ok"} 40
txengine_rpc_requests_total{method="eth_chainId",network="odd} \"x\", y",outcome="error"} 1.5e+01
txengine_rpc_requests_total_extra{method="batch"} 999
txengine_rpc_requests_totalx 999
txengine_rpc_requests_total{method="broken",network="geth" 7
txengine_account_actors 12
`

func TestParse(t *testing.T) {
	c, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := Counters{RoundTrips: 5 + 1 + 40 + 15, Batches: 6, Batched: 3048}
	if c != want {
		t.Fatalf("Parse = %+v, want %+v", c, want)
	}
	if got := c.Requests(); got != 40+15+3048 {
		t.Errorf("Requests = %v, want %v", got, 40+15+3048)
	}
}

func TestParseEmptyAndDelta(t *testing.T) {
	c, err := Parse(strings.NewReader("# nothing yet\n\ngo_goroutines 7\n"))
	if err != nil || c != (Counters{}) {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
	before := Counters{RoundTrips: 10, Batches: 2, Batched: 100}
	after := Counters{RoundTrips: 15, Batches: 3, Batched: 612}
	d := after.Sub(before)
	if d != (Counters{RoundTrips: 5, Batches: 1, Batched: 512}) || d.Requests() != 516 {
		t.Fatalf("delta = %+v (requests %v)", d, d.Requests())
	}
	if s := before.Add(after); s != (Counters{RoundTrips: 25, Batches: 5, Batched: 712}) {
		t.Fatalf("sum = %+v", s)
	}
}

func TestParseSample(t *testing.T) {
	for _, c := range []struct {
		line  string
		name  string
		label string
		value float64
		ok    bool
	}{
		{`a_total 3`, "a_total", "", 3, true},
		{`a_total{method="x"} 4 1700000000000`, "a_total", "x", 4, true},
		{`a_total{method="a\"b\\c"} 1`, "a_total", `a"b\c`, 1, true},
		{`a_total{} 2`, "a_total", "", 2, true},
		{`# TYPE a_total counter`, "", "", 0, false},
		{`a_total{method="x"}`, "", "", 0, false},
		{`a_total{method=x} 1`, "", "", 0, false},
		{`a_total NaNx`, "", "", 0, false},
	} {
		name, labels, v, ok := parseSample(c.line)
		if ok != c.ok || name != c.name || v != c.value || labels["method"] != c.label {
			t.Errorf("parseSample(%q) = %q, %v, %v, %v", c.line, name, labels, v, ok)
		}
	}
}

func TestFetch(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("metrics scraped with credentials")
		}
		_, _ = w.Write([]byte(sample))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	hc := &http.Client{Timeout: 5 * time.Second}
	c, err := Fetch(context.Background(), hc, srv.URL+"/")
	if err != nil || c.RoundTrips != 61 {
		t.Fatalf("Fetch = %+v, %v", c, err)
	}
	if _, err := Fetch(context.Background(), hc, srv.URL+"/nothing"); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("Fetch of a missing page: %v", err)
	}
}

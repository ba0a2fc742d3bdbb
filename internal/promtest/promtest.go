// Package promtest runs a real Prometheus server for tests: Debian's
// `prometheus` package (2.42 in bookworm; `make prometheus` or
// scripts/install-prometheus.sh installs it) gives the prometheus and
// promtool binaries. Start runs the server on a free loopback port with its
// own configuration and storage in a temporary directory; Query and
// LabelValues call its HTTP API. Without the binaries a test skips with a
// message, or fails when CI=true.
package promtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/proc"
	"github.com/txengine/txengine/internal/toolcache"
)

// Install is how to get the binaries, for skip messages.
const Install = "make prometheus (scripts/install-prometheus.sh: apt-get install prometheus, as root)"

// Binary returns the path of name (prometheus or promtool), on PATH or in
// /usr/bin, or ends t: skipped, or failed under CI=true.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/bin", name); toolcache.IsExecutable(p) {
		return p
	}
	ci.SkipOrFail(t, "%s is not installed: %s", name, Install)
	return ""
}

// Server is a running Prometheus.
type Server struct {
	// URL is the base URL of its HTTP API.
	URL  string
	dir  string
	proc *proc.Process
}

// Start runs Prometheus with the configuration config (YAML) on a free
// loopback port, its storage under a temporary directory, and waits until
// it is ready. The server is stopped when t ends.
func Start(t testing.TB, config string) *Server {
	t.Helper()
	bin := Binary(t, "prometheus")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freeport.Get(t))
	s := &Server{URL: "http://" + addr, dir: dir}
	s.proc = proc.New(proc.Spec{
		Name: "prometheus",
		Command: func() *exec.Cmd {
			return exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
				"--web.listen-address="+addr, "--log.level=warn")
		},
		LogPath:      filepath.Join(dir, "prometheus.log"),
		Ready:        s.ready,
		ReadyTimeout: 30 * time.Second,
		StopSignal:   syscall.SIGINT,
		StopTimeout:  10 * time.Second,
	})
	t.Cleanup(func() {
		_ = s.proc.Stop()
		if t.Failed() {
			t.Logf("prometheus log (tail):\n%s", s.proc.LogTail(30))
		}
	})
	if err := s.proc.Start(); err != nil {
		t.Fatalf("promtest: %v\n%s", err, s.proc.LogTail(30))
	}
	return s
}

// ready answers nil once GET /-/ready is 200.
func (s *Server) ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+"/-/ready", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("/-/ready: %s", res.Status)
	}
	return nil
}

// Sample is one series of an instant query's result.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// apiResponse is the envelope of Prometheus' HTTP API.
type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

// get calls the API at path with params and decodes data into out.
func (s *Server) get(ctx context.Context, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("prometheus %s: status %d, %s", path, res.StatusCode, raw)
	}
	if r.Status != "success" {
		return fmt.Errorf("prometheus %s: %s: %s", path, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, out)
}

// Query evaluates expr now (an instant query) and returns its samples; a
// scalar or string result is an error (the dashboard's queries are vectors).
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s, want vector", expr, data.ResultType)
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		str, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %w", expr, r.Value[1], err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: v})
	}
	return out, nil
}

// LabelValues returns the values of label among the series match selects.
func (s *Server) LabelValues(ctx context.Context, label, match string) ([]string, error) {
	var values []string
	err := s.get(ctx, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{"match[]": {match}}, &values)
	return values, err
}

// Finite returns the samples whose value is a number (not NaN or ±Inf).
func Finite(samples []Sample) []Sample {
	var out []Sample
	for _, s := range samples {
		if !math.IsNaN(s.Value) && !math.IsInf(s.Value, 0) {
			out = append(out, s)
		}
	}
	return out
}

// ErrNoData is what WaitFor returns when expr never had a finite sample.
var ErrNoData = errors.New("no finite sample")

// WaitFor evaluates expr until ok accepts its finite samples or timeout
// passes; it returns the last samples.
func (s *Server) WaitFor(ctx context.Context, expr string, timeout time.Duration, ok func([]Sample) bool) ([]Sample, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := s.Query(ctx, expr)
		if err == nil && ok(Finite(got)) {
			return got, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("%s: %w accepted in %s (last: %v)", expr, ErrNoData, timeout, got)
			}
			return got, err
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txengine/txengine/internal/freeport"
)

// getMetrics asks url for the metrics with token (none when empty) and
// returns the status and body.
func getMetrics(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestMetricsTokenAndListener runs the binary with metrics.tokenFile, first
// with /metrics on the API listener, then on its own listen address
// (metrics.listen): in both modes /metrics answers 401 without the metrics
// token, with a wrong one and with the operator's API token, and the
// metrics with the right one; with its own address the API listener
// answers 404 there. The default (no token, API listener) is what every
// other end-to-end test scrapes.
func TestMetricsTokenAndListener(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: runs the binary and its dev chain")
	}
	dir := t.TempDir()
	const token = "metrics-e2e-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "metrics.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(s *service, url string) {
		t.Helper()
		for _, tok := range []string{"", "wrong-token-0123456789", s.Token} {
			if st, body := getMetrics(t, url, tok); st != 401 || !strings.Contains(body, `"unauthenticated"`) || strings.Contains(body, "txengine_") {
				t.Errorf("%s with token %q: %d %s", url, tok, st, body)
			}
		}
		if st, body := getMetrics(t, url, token); st != 200 || !strings.Contains(body, "txengine_http_requests_total") {
			t.Errorf("%s with the metrics token: %d %.200s", url, st, body)
		}
	}

	s := startService(t, dir, "TXENGINE_METRICS_TOKEN_FILE="+tokenFile)
	check(s, s.URL+"/metrics")
	s.stop()

	addr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	s = startService(t, dir, "TXENGINE_METRICS_TOKEN_FILE="+tokenFile, "TXENGINE_METRICS_LISTEN="+addr)
	if st, body := getMetrics(t, s.URL+"/metrics", token); st != 404 {
		t.Errorf("API listener with metrics.listen set: %d %s", st, body)
	}
	check(s, "http://"+addr+"/metrics")
	s.stop()
}

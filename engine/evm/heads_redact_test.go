package evm

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the head source's goroutine and the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHeadSourceRedactsURL: a WebSocket URL with a key in its user part,
// path and query (a provider that refuses the handshake, then one that is
// not there) never appears whole in the head source's logs or in the
// connection error it reports; the host does, so the operator knows which
// node is meant.
func TestHeadSourceRedactsURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "invalid project id", http.StatusUnauthorized)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, raw := range []string{
		"ws://USER1:PASSWORD1@" + host + "/v3/SECRETKEY1?apikey=SECRETQ1",
		"ws://127.0.0.1:1/v2/SECRETKEY2?apikey=SECRETQ2&other=SECRETQ3",
	} {
		var logs syncBuffer
		h := NewHeadSource(HeadSourceConfig{URL: raw, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
			Log: slog.New(slog.NewJSONHandler(&logs, nil))})
		h.Start(context.Background())
		deadline := time.Now().Add(10 * time.Second)
		var lastErr error
		for time.Now().Before(deadline) && (lastErr == nil || !strings.Contains(logs.String(), "reconnecting")) {
			_, lastErr = h.Connected()
			time.Sleep(10 * time.Millisecond)
		}
		h.Close()
		if lastErr == nil {
			t.Fatalf("%s: no connection error reported", raw)
		}
		out := logs.String() + "\n" + lastErr.Error()
		for _, secret := range []string{"USER1", "PASSWORD1", "SECRETKEY", "SECRETQ"} {
			if strings.Contains(out, secret) {
				t.Errorf("%q shows in the head source's output:\n%s", secret, out)
			}
		}
		if !strings.Contains(out, "/v") || !strings.Contains(out, "REDACTED") {
			t.Errorf("the redacted URL is not in the output:\n%s", out)
		}
	}
}

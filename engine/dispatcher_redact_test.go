package engine_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// lockedBuffer is a log sink shared by the dispatcher's goroutines and the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDispatcherLogsCallbackURLsWithoutQuery: callback URLs carry tokens
// in their query; the dispatcher's log lines (every level: retried,
// delivered, an unreachable receiver's transport error) name the URL
// without its query, and the recorded last error of an attempt does not
// show the query values either.
func TestDispatcherLogsCallbackURLsWithoutQuery(t *testing.T) {
	rc := newReceiver(t, func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	store := newMemOutbox()
	_, ids := store.add(engine.StatusCompleted, "the-secret", rc.URL+"/hook?token=CBSECRET1", "http://127.0.0.1:1/hook?token=CBSECRET2")
	var logs lockedBuffer
	d := engine.NewDispatcher(engine.DispatcherConfig{Store: store, Secrets: testSecrets(), AllowPrivate: true, Backoff: fastBackoff,
		Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	defer d.Close(time.Second)
	pump(t, d, 5*time.Second, func() bool {
		return store.row(ids[0]).Status == engine.CallbackDelivered && store.row(ids[1]).Attempts >= 2
	})
	out := logs.String()
	if !strings.Contains(out, `"url":"`+rc.URL+`/hook"`) || !strings.Contains(out, `"url":"http://127.0.0.1:1/hook"`) {
		t.Fatalf("the callback URLs are not in the logs without their query:\n%s", out)
	}
	if strings.Contains(out, "CBSECRET") {
		t.Errorf("a callback URL's query is in the logs:\n%s", out)
	}
	if e := store.row(ids[1]).LastError; e == "" || strings.Contains(e, "CBSECRET") {
		t.Errorf("last error of the unreachable callback = %q", e)
	}
}

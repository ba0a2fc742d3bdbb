package account

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

func TestBackoffDoublesToCap(t *testing.T) {
	storeDown := errors.New("pump: ready: dial tcp 127.0.0.1:5432: connect: connection refused")
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := backoff(2*time.Second, i+1, storeDown, 0.5); got != w {
			t.Errorf("backoff after %d failures = %s, want %s", i+1, got, w)
		}
	}
	if got := backoff(0, 1, storeDown, 0.5); got != time.Second {
		t.Errorf("backoff with no base = %s, want 1s", got)
	}
}

// TestBackoffNodeTroubleIsShort: a pump that a rate limit (HTTP 429,
// JSON-RPC -32005) or the node's silence failed is tried again within
// seconds: 0.5 s doubling to at most 5 s, with jitter; before, one 429 on a
// fee read paused the whole account like a database that is down (up to
// 30 s).
func TestBackoffNodeTroubleIsShort(t *testing.T) {
	limited := fmt.Errorf("fees: tip: %w", engine.NodeErrorSample{Status: 429}.Err())
	code := engine.NodeErrorSample{Code: -32005, Message: "limit exceeded"}.Err()
	for _, err := range []error{limited, code} {
		if got := backoff(2*time.Second, 1, err, 0); got != 500*time.Millisecond {
			t.Errorf("%v: first wait %s, want 500ms", err, got)
		}
		for n := 1; n <= 20; n++ {
			for _, r := range []float64{0, 0.5, 0.99} {
				if got := backoff(2*time.Second, n, err, r); got > 5*time.Second || got < 400*time.Millisecond {
					t.Errorf("%v: wait after %d failures (r %v) = %s, want within [0.4 s, 5 s]", err, n, r, got)
				}
			}
		}
		if a, b := backoff(2*time.Second, 10, err, 0), backoff(2*time.Second, 10, err, 0.9); a == b {
			t.Errorf("%v: no jitter: %s both", err, a)
		}
	}
}

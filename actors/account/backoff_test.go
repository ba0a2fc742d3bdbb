package account

import (
	"testing"
	"time"
)

func TestBackoffDoublesToCap(t *testing.T) {
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := backoff(2*time.Second, i+1); got != w {
			t.Errorf("backoff after %d failures = %s, want %s", i+1, got, w)
		}
	}
	if got := backoff(0, 1); got != time.Second {
		t.Errorf("backoff with no base = %s, want 1s", got)
	}
}

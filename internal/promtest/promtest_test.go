package promtest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestStartQuery: a server started by Start answers queries, and scrapes
// what its configuration names (itself here).
func TestStartQuery(t *testing.T) {
	s := Start(t, "global:\n  scrape_interval: 1s\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	samples, err := s.Query(ctx, "vector(42)")
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 || samples[0].Value != 42 {
		t.Fatalf("vector(42) = %+v", samples)
	}
	if _, err := s.Query(ctx, "up{"); err == nil || !strings.Contains(err.Error(), "parse") {
		t.Fatalf("a bad query: %v, want a parse error", err)
	}
}

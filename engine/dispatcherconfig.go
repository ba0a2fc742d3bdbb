package engine

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultDispatcherConfig returns 64 concurrent deliveries, 10 s per
// attempt, 5 s per store call, private addresses refused, User-Agent
// "txengine" and DefaultBackoff, on the system's clock. Store, Secrets
// and Log have no default (a nil Log discards).
func DefaultDispatcherConfig() DispatcherConfig {
	return DispatcherConfig{Concurrency: 64, Timeout: 10 * time.Second, StoreTimeout: 5 * time.Second,
		UserAgent: "txengine", Backoff: DefaultBackoff()}
}

// withDefaults gives the zero (or negative) fields of c the values of
// DefaultDispatcherConfig, a nil Clock the system's and a nil Log one
// that discards.
func (c DispatcherConfig) withDefaults() DispatcherConfig {
	d := DefaultDispatcherConfig()
	if c.Concurrency <= 0 {
		c.Concurrency = d.Concurrency
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = d.StoreTimeout
	}
	if c.UserAgent == "" {
		c.UserAgent = d.UserAgent
	}
	if c.Backoff == (Backoff{}) {
		c.Backoff = d.Backoff
	}
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate names the first negative field of c (zero takes the default).
func (c DispatcherConfig) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Concurrency", int64(c.Concurrency)}, {"Timeout", int64(c.Timeout)}, {"StoreTimeout", int64(c.StoreTimeout)},
	} {
		if f.v < 0 {
			return fmt.Errorf("dispatcher config: %s: must not be negative", f.name)
		}
	}
	return nil
}

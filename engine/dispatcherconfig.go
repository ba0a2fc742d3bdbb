package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/txengine/txengine/internal/settings"
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
	c.Concurrency = settings.Positive(c.Concurrency, d.Concurrency)
	c.Timeout = settings.Positive(c.Timeout, d.Timeout)
	c.StoreTimeout = settings.Positive(c.StoreTimeout, d.StoreTimeout)
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
	if err := settings.NonNegative(
		settings.F("Concurrency", c.Concurrency),
		settings.F("Timeout", c.Timeout),
		settings.F("StoreTimeout", c.StoreTimeout),
	); err != nil {
		return fmt.Errorf("dispatcher config: %w", err)
	}
	return nil
}

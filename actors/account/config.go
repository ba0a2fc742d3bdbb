package account

import (
	"fmt"
	"time"

	"github.com/txengine/txengine/internal/settings"
)

// Default returns the defaults of an account actor's settings: a failed
// pump tried again after 1 s (doubling, at most 30 s), 10 s for the
// database calls made outside a pump. Idle, MaxBatch and CheckEvery have
// none here: actors.Start passes actors.Default's (a zero Idle never
// stops the actor, a zero CheckEvery checks nothing). The collaborators
// have no default.
func Default() Config {
	return Config{RetryAfter: time.Second, StoreTimeout: 10 * time.Second}
}

// withDefaults gives the zero (or negative) RetryAfter and StoreTimeout of
// c the values of Default.
func (c Config) withDefaults() Config {
	d := Default()
	c.RetryAfter = settings.Positive(c.RetryAfter, d.RetryAfter)
	c.StoreTimeout = settings.Positive(c.StoreTimeout, d.StoreTimeout)
	return c
}

// Validate names the first setting of c out of range: negative ones (zero
// takes the default, or is off), and a MaxBatch below 1 (a group commit
// of no rows stores nothing).
func (c Config) Validate() error {
	if err := settings.NonNegative(
		settings.F("Idle", c.Idle),
		settings.F("RetryAfter", c.RetryAfter),
		settings.F("CheckEvery", c.CheckEvery),
		settings.F("StoreTimeout", c.StoreTimeout),
	); err != nil {
		return fmt.Errorf("account config: %w", err)
	}
	if c.MaxBatch < 1 {
		return fmt.Errorf("account config: MaxBatch: must be at least 1, got %d", c.MaxBatch)
	}
	return nil
}

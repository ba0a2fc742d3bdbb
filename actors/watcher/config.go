package watcher

import (
	"errors"
	"time"

	"github.com/txengine/txengine/internal/settings"
)

// Default returns the defaults of a watcher: 30 s for each of the sweep of
// waiting transactions and the resolution of dependents after a poll. The
// collaborators (Network, Store, Clock, Log, Waker, Conditions, NewHeads,
// Metrics, OnHead) have no default.
func Default() Config {
	return Config{ConditionsTimeout: 30 * time.Second}
}

// withDefaults gives the zero (or negative) settings of c the values of
// Default.
func (c Config) withDefaults() Config {
	c.ConditionsTimeout = settings.Positive(c.ConditionsTimeout, Default().ConditionsTimeout)
	return c
}

// Validate names the first setting of c out of range: a negative
// ConditionsTimeout (zero takes the default).
func (c Config) Validate() error {
	if c.ConditionsTimeout < 0 {
		return errors.New("watcher config: ConditionsTimeout: must not be negative")
	}
	return nil
}

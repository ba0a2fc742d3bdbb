package actors

import (
	"fmt"
	"time"

	"github.com/txengine/txengine/actors/callbacks"
	"github.com/txengine/txengine/internal/settings"
)

// Default returns the defaults of the actor system's settings: an idle
// account actor lives 2 minutes, a group commit holds at most 500 rows, a
// Submit waits at most 30s for its commit, an account with transactions
// in flight looks for stuck ones every 5s; callbacks.Default for the
// dispatcher. The collaborators (Store, Signer, Clock, Log, Networks) have
// no default.
func Default() Config {
	return Config{
		IdleAccount:   2 * time.Minute,
		MaxBatch:      500,
		SubmitTimeout: 30 * time.Second,
		CheckInFlight: 5 * time.Second,
		Callbacks:     callbacks.Default(),
	}
}

// withDefaults gives the zero (or negative) settings of c the values of
// Default. (The dispatcher's are filled in by callbacks.Props.)
func (c Config) withDefaults() Config {
	d := Default()
	c.IdleAccount = settings.Positive(c.IdleAccount, d.IdleAccount)
	c.MaxBatch = settings.Positive(c.MaxBatch, d.MaxBatch)
	c.SubmitTimeout = settings.Positive(c.SubmitTimeout, d.SubmitTimeout)
	c.CheckInFlight = settings.Positive(c.CheckInFlight, d.CheckInFlight)
	return c
}

// Validate names the first setting of c out of range: negative ones
// (zero takes the default), and the callback dispatcher's.
func (c Config) Validate() error {
	if err := settings.NonNegative(
		settings.F("IdleAccount", c.IdleAccount),
		settings.F("MaxBatch", c.MaxBatch),
		settings.F("SubmitTimeout", c.SubmitTimeout),
		settings.F("CheckInFlight", c.CheckInFlight),
	); err != nil {
		return fmt.Errorf("actors config: %w", err)
	}
	if err := c.Callbacks.Validate(); err != nil {
		return fmt.Errorf("actors config: Callbacks: %w", err)
	}
	return nil
}

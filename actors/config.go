package actors

import (
	"fmt"
	"time"

	"github.com/txengine/txengine/actors/callbacks"
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
	if c.IdleAccount <= 0 {
		c.IdleAccount = d.IdleAccount
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = d.MaxBatch
	}
	if c.SubmitTimeout <= 0 {
		c.SubmitTimeout = d.SubmitTimeout
	}
	if c.CheckInFlight <= 0 {
		c.CheckInFlight = d.CheckInFlight
	}
	return c
}

// Validate names the first setting of c out of range: negative ones
// (zero takes the default), and the callback dispatcher's.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"IdleAccount", int64(c.IdleAccount)}, {"MaxBatch", int64(c.MaxBatch)},
		{"SubmitTimeout", int64(c.SubmitTimeout)}, {"CheckInFlight", int64(c.CheckInFlight)},
	} {
		if f.v < 0 {
			return fmt.Errorf("actors config: %s: must not be negative", f.name)
		}
	}
	if err := c.Callbacks.Validate(); err != nil {
		return fmt.Errorf("actors config: Callbacks: %w", err)
	}
	return nil
}

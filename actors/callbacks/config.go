package callbacks

import (
	"fmt"
	"time"

	"github.com/txengine/txengine/engine"
)

// Default returns the defaults: the outbox polled every 200ms, 5s for the
// deliveries in flight at a stop, ended callbacks and stored deliveries
// kept engine.DefaultRetention (7 days) and pruned every 10 minutes, 1000
// rows a delete; the dispatcher's are engine.DefaultDispatcherConfig's,
// on the system's clock.
func Default() Config {
	d := engine.DefaultDispatcherConfig()
	d.Clock = engine.SystemClock{}
	return Config{
		Dispatcher:   d,
		PollInterval: 200 * time.Millisecond,
		CloseGrace:   5 * time.Second,
		Retention:    engine.DefaultRetention,
		PruneEvery:   10 * time.Minute,
		PruneBatch:   1000,
	}
}

// withDefaults gives the zero (or negative) fields of c the values of
// Default. Of the Dispatcher's, it fills in the Clock and the
// StoreTimeout, which the actor uses itself; engine.NewDispatcher fills
// in the others.
func (c Config) withDefaults() Config {
	d := Default()
	if c.PollInterval <= 0 {
		c.PollInterval = d.PollInterval
	}
	if c.CloseGrace <= 0 {
		c.CloseGrace = d.CloseGrace
	}
	if c.Dispatcher.Clock == nil {
		c.Dispatcher.Clock = d.Dispatcher.Clock
	}
	if c.Dispatcher.StoreTimeout <= 0 {
		c.Dispatcher.StoreTimeout = d.Dispatcher.StoreTimeout
	}
	if c.Retention <= 0 {
		c.Retention = d.Retention
	}
	if c.PruneEvery <= 0 {
		c.PruneEvery = d.PruneEvery
	}
	if c.PruneBatch <= 0 {
		c.PruneBatch = d.PruneBatch
	}
	return c
}

// Validate names the first negative field of c (zero takes the default).
// The Dispatcher's Store and Log are checked where they are filled in
// (actors.Start takes them from its own Config).
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"PollInterval", int64(c.PollInterval)}, {"CloseGrace", int64(c.CloseGrace)}, {"Retention", int64(c.Retention)},
		{"PruneEvery", int64(c.PruneEvery)}, {"PruneBatch", int64(c.PruneBatch)},
		{"Dispatcher.Concurrency", int64(c.Dispatcher.Concurrency)}, {"Dispatcher.Timeout", int64(c.Dispatcher.Timeout)},
		{"Dispatcher.StoreTimeout", int64(c.Dispatcher.StoreTimeout)},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: must not be negative", f.name)
		}
	}
	return nil
}

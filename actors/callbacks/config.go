package callbacks

import (
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/internal/settings"
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
	c.PollInterval = settings.Positive(c.PollInterval, d.PollInterval)
	c.CloseGrace = settings.Positive(c.CloseGrace, d.CloseGrace)
	if c.Dispatcher.Clock == nil {
		c.Dispatcher.Clock = d.Dispatcher.Clock
	}
	c.Dispatcher.StoreTimeout = settings.Positive(c.Dispatcher.StoreTimeout, d.Dispatcher.StoreTimeout)
	c.Retention = settings.Positive(c.Retention, d.Retention)
	c.PruneEvery = settings.Positive(c.PruneEvery, d.PruneEvery)
	c.PruneBatch = settings.Positive(c.PruneBatch, d.PruneBatch)
	return c
}

// Validate names the first negative field of c (zero takes the default).
// The Dispatcher's Store and Log are checked where they are filled in
// (actors.Start takes them from its own Config).
func (c Config) Validate() error {
	return settings.NonNegative(
		settings.F("PollInterval", c.PollInterval),
		settings.F("CloseGrace", c.CloseGrace),
		settings.F("Retention", c.Retention),
		settings.F("PruneEvery", c.PruneEvery),
		settings.F("PruneBatch", c.PruneBatch),
		settings.F("Dispatcher.Concurrency", c.Dispatcher.Concurrency),
		settings.F("Dispatcher.Timeout", c.Dispatcher.Timeout),
		settings.F("Dispatcher.StoreTimeout", c.Dispatcher.StoreTimeout),
	)
}

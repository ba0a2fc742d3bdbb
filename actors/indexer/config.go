package indexer

import (
	"errors"
	"fmt"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/internal/settings"
)

// Default returns the defaults of an indexer actor: a pause of at least
// 100 ms between polls once caught up (the network's PollInterval when
// longer), 1 minute per poll, engine.DefaultIndexerConfig for the
// indexer. The collaborators (Network, Store, Log) have no default.
func Default() Config {
	return Config{Interval: 100 * time.Millisecond, PollTimeout: time.Minute, Indexer: engine.DefaultIndexerConfig()}
}

// withDefaults gives the zero (or negative) settings of c the values of
// Default: Interval the network's PollInterval, at least Default's. (The
// indexer's are filled in by engine.NewIndexer.)
func (c Config) withDefaults() Config {
	d := Default()
	if c.Interval <= 0 {
		c.Interval = max(c.Network.PollInterval, d.Interval)
	}
	c.PollTimeout = settings.Positive(c.PollTimeout, d.PollTimeout)
	return c
}

// Validate names the first setting of c out of range: negative ones (zero
// takes the default), and the indexer's.
func (c Config) Validate() error {
	if c.Interval < 0 {
		return errors.New("indexer config: Interval: must not be negative")
	}
	if c.PollTimeout < 0 {
		return errors.New("indexer config: PollTimeout: must not be negative")
	}
	if err := c.Indexer.Validate(); err != nil {
		return fmt.Errorf("indexer config: Indexer: %w", err)
	}
	return nil
}

package subscribe

import (
	"time"

	"github.com/txengine/txengine/internal/settings"
)

// Default returns the defaults of a Processor: steps of at most 500
// blocks, at most 8 backfill steps and 2 s of backfill a Poll, a group
// within 64 blocks of its top caught up, a failed group paused from 1 s
// doubling to at most 2 min, 1,000 deliveries retracted a transaction,
// 256 block hashes kept, a subscription's next block stored at least
// every 100 blocks.
func Default() Config {
	return Config{
		Range: 500, MaxSteps: 8, BackfillBudget: 2 * time.Second, NearBlocks: 64,
		GroupBackoff: time.Second, MaxGroupBackoff: 2 * time.Minute, RetractChunk: 1000,
		KeepBlocks: 256, CheckpointBlocks: 100,
	}
}

// withDefaults gives the zero fields of c the values of Default; a
// MaxGroupBackoff below GroupBackoff is raised to Default's (or to
// GroupBackoff, when that is above).
func (c Config) withDefaults() Config {
	d := Default()
	if c.Range == 0 {
		c.Range = d.Range
	}
	c.MaxSteps = settings.Positive(c.MaxSteps, d.MaxSteps)
	if c.KeepBlocks == 0 {
		c.KeepBlocks = d.KeepBlocks
	}
	if c.CheckpointBlocks == 0 {
		c.CheckpointBlocks = d.CheckpointBlocks
	}
	if c.NearBlocks == 0 {
		c.NearBlocks = d.NearBlocks
	}
	c.BackfillBudget = settings.Positive(c.BackfillBudget, d.BackfillBudget)
	c.GroupBackoff = settings.Positive(c.GroupBackoff, d.GroupBackoff)
	if c.MaxGroupBackoff < c.GroupBackoff {
		c.MaxGroupBackoff = max(d.MaxGroupBackoff, c.GroupBackoff)
	}
	c.RetractChunk = settings.Positive(c.RetractChunk, d.RetractChunk)
	return c
}

// Validate names the first negative field of c (zero takes the default).
func (c Config) Validate() error {
	if err := settings.NonNegative(
		settings.F("MaxSteps", c.MaxSteps),
		settings.F("BackfillBudget", c.BackfillBudget),
		settings.F("GroupBackoff", c.GroupBackoff),
		settings.F("MaxGroupBackoff", c.MaxGroupBackoff),
		settings.F("RetractChunk", c.RetractChunk),
	); err != nil {
		return err
	}
	return nil
}

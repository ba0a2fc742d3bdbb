package subscribe

import (
	"fmt"
	"time"
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
	if c.MaxSteps <= 0 {
		c.MaxSteps = d.MaxSteps
	}
	if c.KeepBlocks == 0 {
		c.KeepBlocks = d.KeepBlocks
	}
	if c.CheckpointBlocks == 0 {
		c.CheckpointBlocks = d.CheckpointBlocks
	}
	if c.NearBlocks == 0 {
		c.NearBlocks = d.NearBlocks
	}
	if c.BackfillBudget <= 0 {
		c.BackfillBudget = d.BackfillBudget
	}
	if c.GroupBackoff <= 0 {
		c.GroupBackoff = d.GroupBackoff
	}
	if c.MaxGroupBackoff < c.GroupBackoff {
		c.MaxGroupBackoff = max(d.MaxGroupBackoff, c.GroupBackoff)
	}
	if c.RetractChunk <= 0 {
		c.RetractChunk = d.RetractChunk
	}
	return c
}

// Validate names the first negative field of c (zero takes the default).
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxSteps", int64(c.MaxSteps)}, {"BackfillBudget", int64(c.BackfillBudget)},
		{"GroupBackoff", int64(c.GroupBackoff)}, {"MaxGroupBackoff", int64(c.MaxGroupBackoff)},
		{"RetractChunk", int64(c.RetractChunk)},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: must not be negative", f.name)
		}
	}
	return nil
}

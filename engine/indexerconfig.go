package engine

import (
	"errors"

	"github.com/txengine/txengine/internal/settings"
)

// DefaultIndexerConfig returns 2,000 blocks per eth_getLogs call, at most
// 8 calls a Poll, 256 block hashes kept for reorg detection and at most
// 200 contracts per call.
func DefaultIndexerConfig() IndexerConfig {
	return IndexerConfig{Range: 2000, MaxCalls: 8, KeepBlocks: 256, MaxAddresses: 200}
}

// withDefaults gives the zero (or negative) fields of c the values of
// DefaultIndexerConfig.
func (c IndexerConfig) withDefaults() IndexerConfig {
	d := DefaultIndexerConfig()
	if c.Range == 0 {
		c.Range = d.Range
	}
	c.MaxCalls = settings.Positive(c.MaxCalls, d.MaxCalls)
	if c.KeepBlocks == 0 {
		c.KeepBlocks = d.KeepBlocks
	}
	c.MaxAddresses = settings.Positive(c.MaxAddresses, d.MaxAddresses)
	return c
}

// Validate names the first negative field of c (zero takes the default).
func (c IndexerConfig) Validate() error {
	if c.MaxCalls < 0 {
		return errors.New("MaxCalls: must not be negative")
	}
	if c.MaxAddresses < 0 {
		return errors.New("MaxAddresses: must not be negative")
	}
	return nil
}

package engine

import (
	"strings"
	"testing"
)

// TestDispatcherConfigDefaults: a zero DispatcherConfig takes
// DefaultDispatcherConfig's values (and a clock and a log), which
// validate; a negative field is refused with its name.
func TestDispatcherConfigDefaults(t *testing.T) {
	d, got := DefaultDispatcherConfig(), DispatcherConfig{}.withDefaults()
	if err := d.Validate(); err != nil {
		t.Fatalf("DefaultDispatcherConfig().Validate() = %v", err)
	}
	if got.Concurrency != d.Concurrency || got.Timeout != d.Timeout || got.StoreTimeout != d.StoreTimeout ||
		got.UserAgent != d.UserAgent || got.Backoff != d.Backoff || got.Clock == nil || got.Log == nil {
		t.Errorf("DispatcherConfig{}.withDefaults() = %+v, want the values of %+v", got, d)
	}
	if set := (DispatcherConfig{Concurrency: 3}).withDefaults(); set.Concurrency != 3 || set.Timeout != d.Timeout {
		t.Errorf("a set field was overwritten or a zero one left: %+v", set)
	}
	for want, mutate := range map[string]func(*DispatcherConfig){
		"dispatcher config: Concurrency: must not be negative": func(c *DispatcherConfig) { c.Concurrency = -1 },
		"dispatcher config: Timeout:":                          func(c *DispatcherConfig) { c.Timeout = -1 },
		"dispatcher config: StoreTimeout:":                     func(c *DispatcherConfig) { c.StoreTimeout = -1 },
	} {
		c := DefaultDispatcherConfig()
		mutate(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}

// TestIndexerConfigDefaults: a zero IndexerConfig takes
// DefaultIndexerConfig's values (2,000 blocks a call, 8 calls a poll,
// 256 hashes, 200 addresses), which validate; a negative field is refused
// with its name.
func TestIndexerConfigDefaults(t *testing.T) {
	d := DefaultIndexerConfig()
	if err := d.Validate(); err != nil {
		t.Fatalf("DefaultIndexerConfig().Validate() = %v", err)
	}
	if d != (IndexerConfig{Range: 2000, MaxCalls: 8, KeepBlocks: 256, MaxAddresses: 200}) {
		t.Errorf("DefaultIndexerConfig() = %+v", d)
	}
	if got := (IndexerConfig{}).withDefaults(); got != d {
		t.Errorf("IndexerConfig{}.withDefaults() = %+v, want %+v", got, d)
	}
	if got := (IndexerConfig{Range: 10}).withDefaults(); got.Range != 10 || got.MaxCalls != d.MaxCalls {
		t.Errorf("a set field was overwritten or a zero one left: %+v", got)
	}
	for want, c := range map[string]IndexerConfig{
		"MaxCalls: must not be negative":     {MaxCalls: -1},
		"MaxAddresses: must not be negative": {MaxAddresses: -1},
	} {
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}

package evm

import (
	"strings"
	"testing"
	"time"
)

// TestDevChainConfigDefaults: DefaultDevChainConfig validates once DataDir
// and FaucetKey are given; a zero GasLimit takes its value, a zero Period
// stays zero (it mines as transactions arrive); Validate names the field
// of a bad setting.
func TestDevChainConfigDefaults(t *testing.T) {
	key := mustKey(t)
	d := DefaultDevChainConfig()
	if d.Period != time.Second || d.GasLimit != DefaultDevGasLimit {
		t.Errorf("DefaultDevChainConfig() = %+v", d)
	}
	d.DataDir, d.FaucetKey = t.TempDir(), key
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if got := (DevChainConfig{}).withDefaults(); got.GasLimit != d.GasLimit || got.Period != 0 {
		t.Errorf("DevChainConfig{}.withDefaults() = %+v", got)
	}
	for want, cfg := range map[string]DevChainConfig{
		"dev chain: DataDir is required":   {FaucetKey: key},
		"dev chain: FaucetKey is required": {DataDir: "x"},
		"dev chain: Period must be zero":   {DataDir: "x", FaucetKey: key, Period: -time.Second},
	} {
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}

// TestHeadSourceConfigDefaults: zero backoffs take
// DefaultHeadSourceConfig's (100ms to 10s), a MinBackoff above the default
// most raises the most; Validate names a negative backoff.
func TestHeadSourceConfigDefaults(t *testing.T) {
	d := DefaultHeadSourceConfig()
	if d.MinBackoff != 100*time.Millisecond || d.MaxBackoff != 10*time.Second || d.Validate() != nil {
		t.Errorf("DefaultHeadSourceConfig() = %+v, Validate() = %v", d, d.Validate())
	}
	if got := (HeadSourceConfig{}).withDefaults(); got.MinBackoff != d.MinBackoff || got.MaxBackoff != d.MaxBackoff || got.Log == nil {
		t.Errorf("HeadSourceConfig{}.withDefaults() = %+v", got)
	}
	if got := (HeadSourceConfig{MinBackoff: time.Minute}).withDefaults(); got.MaxBackoff != time.Minute {
		t.Errorf("MinBackoff above the default MaxBackoff: %+v", got)
	}
	for want, cfg := range map[string]HeadSourceConfig{
		"head source config: MinBackoff: must not be negative": {MinBackoff: -1},
		"head source config: MaxBackoff: must not be negative": {MaxBackoff: -1},
	} {
		if err := cfg.Validate(); err == nil || err.Error() != want {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
}

package account

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDefault: Default (1 s before a failed pump is tried again, 10 s for
// the database calls outside a pump) is what zero settings take, and what
// the backoff of a zero RetryAfter starts from; Validate names the field
// of a bad setting.
func TestDefault(t *testing.T) {
	d := Default()
	if d.RetryAfter != time.Second || d.StoreTimeout != 10*time.Second {
		t.Errorf("Default() = %+v", d)
	}
	got := Config{}.withDefaults()
	if got.RetryAfter != d.RetryAfter || got.StoreTimeout != d.StoreTimeout {
		t.Errorf("Config{}.withDefaults() = %+v", got)
	}
	if got := (Config{RetryAfter: 2 * time.Second}).withDefaults(); got.RetryAfter != 2*time.Second || got.StoreTimeout != d.StoreTimeout {
		t.Errorf("a set field was overwritten or a zero one left: %+v", got)
	}
	if got := backoff(0, 1, errors.New("store down"), 0); got != d.RetryAfter {
		t.Errorf("backoff(0, 1) = %s, want Default's RetryAfter %s", got, d.RetryAfter)
	}
	valid := Config{MaxBatch: 500}
	if err := valid.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	for want, mutate := range map[string]func(*Config){
		"account config: Idle: must not be negative": func(c *Config) { c.Idle = -1 },
		"account config: RetryAfter:":                func(c *Config) { c.RetryAfter = -1 },
		"account config: CheckEvery:":                func(c *Config) { c.CheckEvery = -1 },
		"account config: StoreTimeout:":              func(c *Config) { c.StoreTimeout = -1 },
		"account config: MaxBatch: must be at least": func(c *Config) { c.MaxBatch = 0 },
	} {
		c := valid
		mutate(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}

package http

import (
	"strings"
	"testing"
	"time"
)

// TestDefaultIsWhatZeroFieldsTake: Default validates, and a zero Config
// (and a zero RateLimitConfig) gets exactly Default's values from the
// constructor's withDefaults.
func TestDefaultIsWhatZeroFieldsTake(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	got := Config{}.withDefaults()
	if got.MaxBodyBytes != d.MaxBodyBytes || got.Version != d.Version || got.ReadyTimeout != d.ReadyTimeout ||
		got.ChainTimeout != d.ChainTimeout || got.MaxCallbacks != d.MaxCallbacks || got.RequestTimeout != d.RequestTimeout {
		t.Errorf("Config{}.withDefaults() = %+v, want Default()'s values %+v", got, d)
	}
	rl := RateLimitConfig{}.withDefaults()
	if rl.PerSecond != 10 || rl.PerHour != 3600 || rl.AuthFailuresPerSecond != 20 || rl.AuthFailuresPerHour != 600 || rl.Limits == nil {
		t.Errorf("RateLimitConfig{}.withDefaults() = %+v, want 10/s, 3600/h, 20 and 600 failures, DefaultLimits", rl)
	}
	if d.RequestTimeout != 30*time.Second || d.MaxBodyBytes != 1<<20 {
		t.Errorf("Default() = %+v, want the documented 30 s and 1 MiB", d)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Config{}.Validate() = %v: zero fields take the defaults", err)
	}
}

// TestValidateNamesTheField: each out-of-range field is refused with its
// name (nested ones with their parent's).
func TestValidateNamesTheField(t *testing.T) {
	for want, mutate := range map[string]func(*Config){
		"http config: MaxBodyBytes: must not be negative":        func(c *Config) { c.MaxBodyBytes = -1 },
		"http config: ReadyTimeout:":                             func(c *Config) { c.ReadyTimeout = -time.Second },
		"http config: ChainTimeout:":                             func(c *Config) { c.ChainTimeout = -time.Second },
		"http config: MaxCallbacks:":                             func(c *Config) { c.MaxCallbacks = -1 },
		"http config: MaxHeadAge:":                               func(c *Config) { c.MaxHeadAge = -time.Second },
		"http config: RequestTimeout:":                           func(c *Config) { c.RequestTimeout = -time.Second },
		`http config: TrustedProxies: "10.0.0.0/33"`:             func(c *Config) { c.TrustedProxies = []string{"10.0.0.1", "10.0.0.0/33"} },
		"http config: RateLimit: PerHour: must not be negative":  func(c *Config) { c.RateLimit.PerHour = -1 },
		"http config: RateLimit: AuthFailuresPerSecond:":         func(c *Config) { c.RateLimit.AuthFailuresPerSecond = -1 },
		"http config: Quotas: MaxAccounts: must not be negative": func(c *Config) { c.Quotas.MaxAccounts = -1 },
		"http config: Quotas: FaucetPeriod: must not be negative": func(c *Config) {
			c.Quotas.FaucetPerOwner, c.Quotas.FaucetPeriod = 1, -time.Hour
		},
	} {
		c := Default()
		mutate(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q...", err, want)
		}
	}
}

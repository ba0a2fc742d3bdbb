package http

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// The configuration of this package follows the pattern of every package
// with a Config: Default returns the defaults, Validate names the first
// field out of range, and the constructor (NewServer) gives the zero
// fields Default's values (withDefaults), so that a Config{} with a few
// fields set is a valid configuration.

// Default returns the defaults: 1 MiB bodies, API version 1.2.1, 2 s
// readiness checks, 10 s node calls, 30 s per request, at most 10
// callbacks, private callback addresses refused; per user 10 requests a
// second and 3,600 an hour, per client address 20 failed authentications
// a second and 600 an hour; no quotas, no check of the head's age, no
// trusted proxy.
func Default() Config {
	return Config{
		MaxBodyBytes:   1 << 20,
		Version:        "1.2.1",
		ReadyTimeout:   2 * time.Second,
		ChainTimeout:   10 * time.Second,
		MaxCallbacks:   10,
		RequestTimeout: 30 * time.Second,
		RateLimit: RateLimitConfig{PerSecond: 10, PerHour: 3600,
			AuthFailuresPerSecond: 20, AuthFailuresPerHour: 600},
	}
}

// withDefaults gives the zero (or negative) fields of c the values of
// Default.
func (c Config) withDefaults() Config {
	d := Default()
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.Version == "" {
		c.Version = d.Version
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = d.ReadyTimeout
	}
	if c.ChainTimeout <= 0 {
		c.ChainTimeout = d.ChainTimeout
	}
	if c.MaxCallbacks <= 0 {
		c.MaxCallbacks = d.MaxCallbacks
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	return c
}

// Validate names the first field of c out of range. Zero fields are valid
// (they take Default's values); negative ones and trusted proxies that are
// neither an address nor a CIDR range are not.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxBodyBytes", c.MaxBodyBytes}, {"ReadyTimeout", int64(c.ReadyTimeout)}, {"ChainTimeout", int64(c.ChainTimeout)},
		{"MaxCallbacks", int64(c.MaxCallbacks)}, {"MaxHeadAge", int64(c.MaxHeadAge)}, {"RequestTimeout", int64(c.RequestTimeout)},
	} {
		if f.v < 0 {
			return fmt.Errorf("http config: %s: must not be negative", f.name)
		}
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				return fmt.Errorf("http config: TrustedProxies: %q is neither an IP address nor a CIDR range", p)
			}
		}
	}
	if err := c.RateLimit.Validate(); err != nil {
		return fmt.Errorf("http config: RateLimit: %w", err)
	}
	if err := c.Quotas.Validate(); err != nil {
		return fmt.Errorf("http config: Quotas: %w", err)
	}
	return nil
}

// withDefaults gives the zero (or negative) fields of c the values of
// Default().RateLimit, and Limits DefaultLimits.
func (c RateLimitConfig) withDefaults() RateLimitConfig {
	d := Default().RateLimit
	if c.PerSecond <= 0 {
		c.PerSecond = d.PerSecond
	}
	if c.PerHour <= 0 {
		c.PerHour = d.PerHour
	}
	if c.AuthFailuresPerSecond <= 0 {
		c.AuthFailuresPerSecond = d.AuthFailuresPerSecond
	}
	if c.AuthFailuresPerHour <= 0 {
		c.AuthFailuresPerHour = d.AuthFailuresPerHour
	}
	if c.Limits == nil {
		c.Limits = c.DefaultLimits
	}
	return c
}

// Validate names the first negative limit of c (zero takes the default).
func (c RateLimitConfig) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"PerSecond", c.PerSecond}, {"PerHour", c.PerHour}, {"AuthFailuresPerSecond", c.AuthFailuresPerSecond}, {"AuthFailuresPerHour", c.AuthFailuresPerHour}} {
		if f.v < 0 {
			return fmt.Errorf("%s: must not be negative", f.name)
		}
	}
	return nil
}

// Validate names the first negative cap of c (zero is unlimited) or a
// negative FaucetPeriod.
func (c QuotaConfig) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxUsers", c.MaxUsers}, {"MaxAccounts", c.MaxAccounts}, {"MaxSubscriptions", c.MaxSubscriptions}, {"FaucetPerOwner", c.FaucetPerOwner}} {
		if f.v < 0 {
			return fmt.Errorf("%s: must not be negative (0 is unlimited)", f.name)
		}
	}
	if c.FaucetPeriod < 0 {
		return errors.New("FaucetPeriod: must not be negative")
	}
	return nil
}

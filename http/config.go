package http

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/txengine/txengine/internal/settings"
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
	c.MaxBodyBytes = settings.Positive(c.MaxBodyBytes, d.MaxBodyBytes)
	if c.Version == "" {
		c.Version = d.Version
	}
	c.ReadyTimeout = settings.Positive(c.ReadyTimeout, d.ReadyTimeout)
	c.ChainTimeout = settings.Positive(c.ChainTimeout, d.ChainTimeout)
	c.MaxCallbacks = settings.Positive(c.MaxCallbacks, d.MaxCallbacks)
	c.RequestTimeout = settings.Positive(c.RequestTimeout, d.RequestTimeout)
	return c
}

// Validate names the first field of c out of range. Zero fields are valid
// (they take Default's values); negative ones and trusted proxies that are
// neither an address nor a CIDR range are not.
func (c Config) Validate() error {
	if err := settings.NonNegative(
		settings.F("MaxBodyBytes", c.MaxBodyBytes),
		settings.F("ReadyTimeout", c.ReadyTimeout),
		settings.F("ChainTimeout", c.ChainTimeout),
		settings.F("MaxCallbacks", c.MaxCallbacks),
		settings.F("MaxHeadAge", c.MaxHeadAge),
		settings.F("RequestTimeout", c.RequestTimeout),
	); err != nil {
		return fmt.Errorf("http config: %w", err)
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
	c.PerSecond = settings.Positive(c.PerSecond, d.PerSecond)
	c.PerHour = settings.Positive(c.PerHour, d.PerHour)
	c.AuthFailuresPerSecond = settings.Positive(c.AuthFailuresPerSecond, d.AuthFailuresPerSecond)
	c.AuthFailuresPerHour = settings.Positive(c.AuthFailuresPerHour, d.AuthFailuresPerHour)
	if c.Limits == nil {
		c.Limits = c.DefaultLimits
	}
	return c
}

// Validate names the first negative limit of c (zero takes the default).
func (c RateLimitConfig) Validate() error {
	if err := settings.NonNegative(
		settings.F("PerSecond", c.PerSecond),
		settings.F("PerHour", c.PerHour),
		settings.F("AuthFailuresPerSecond", c.AuthFailuresPerSecond),
		settings.F("AuthFailuresPerHour", c.AuthFailuresPerHour),
	); err != nil {
		return err
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

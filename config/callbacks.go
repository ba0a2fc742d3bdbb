package config

import (
	"fmt"
	"strconv"
	"time"
)

// Callbacks configures the delivery of transaction callbacks.
type Callbacks struct {
	// AllowPrivate accepts callback URLs aimed at addresses that are not
	// publicly routable (engine.PrivateAddr: loopback, private, link-local,
	// shared, reserved, documentation, multicast), and lets deliveries
	// connect to them (TXENGINE_CALLBACKS_ALLOW_PRIVATE=true|false). Unset,
	// it is true on the embedded default (no networks configured: a dev
	// setup whose receivers are usually on localhost) and false otherwise;
	// see Config.CallbacksAllowPrivate.
	AllowPrivate *bool `yaml:"allowPrivate"`
	// Timeout bounds one delivery attempt: connection, request and the
	// answer's headers (TXENGINE_CALLBACKS_TIMEOUT; default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// Concurrency bounds the deliveries in flight (default 64).
	Concurrency int `yaml:"concurrency"`
	// Retention is how long delivered and abandoned callbacks, and the
	// subscriptions' stored deliveries (GET /subscriptions/{id}/events),
	// are kept before they are pruned (TXENGINE_CALLBACKS_RETENTION;
	// default 168h, 7 days; at least 1h). Pending callbacks are never
	// pruned, nor a delivery whose callback is pending.
	Retention time.Duration `yaml:"retention"`
}

// defaultCallbacks returns 10 s per attempt, 64 deliveries in flight and
// 7 days of retention; AllowPrivate stays unset.
func defaultCallbacks() Callbacks {
	return Callbacks{Timeout: 10 * time.Second, Concurrency: 64, Retention: 7 * 24 * time.Hour}
}

// CallbacksAllowPrivate resolves Callbacks.AllowPrivate: the configured
// value, else true exactly when the embedded default chain runs.
func (c *Config) CallbacksAllowPrivate() bool {
	if c.Callbacks.AllowPrivate != nil {
		return *c.Callbacks.AllowPrivate
	}
	return len(c.Networks) == 0
}

// applyCallbacksEnv applies the TXENGINE_CALLBACKS_* overrides.
func (c *Config) applyCallbacksEnv(getenv func(string) string) error {
	if v := getenv("TXENGINE_CALLBACKS_ALLOW_PRIVATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_CALLBACKS_ALLOW_PRIVATE: %q is not true or false", v)
		}
		c.Callbacks.AllowPrivate = &b
	}
	if v := getenv("TXENGINE_CALLBACKS_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_CALLBACKS_TIMEOUT: %q is not a duration (e.g. 500ms, 10s)", v)
		}
		c.Callbacks.Timeout = d
	}
	if v := getenv("TXENGINE_CALLBACKS_RETENTION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_CALLBACKS_RETENTION: %q is not a duration (e.g. 72h)", v)
		}
		c.Callbacks.Retention = d
	}
	return nil
}

// validate checks the callbacks keys.
func (cb Callbacks) validate() error {
	if cb.Timeout < 100*time.Millisecond || cb.Timeout > 5*time.Minute {
		return fmt.Errorf("callbacks.timeout: must be between 100ms and 5m, got %s", cb.Timeout)
	}
	if cb.Retention < time.Hour {
		return fmt.Errorf("callbacks.retention: must be at least 1h, got %s", cb.Retention)
	}
	if cb.Concurrency < 1 || cb.Concurrency > 4096 {
		return fmt.Errorf("callbacks.concurrency: must be between 1 and 4096, got %d", cb.Concurrency)
	}
	return nil
}

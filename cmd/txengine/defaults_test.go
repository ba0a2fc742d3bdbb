package main

import (
	"testing"
	"time"

	"github.com/txengine/txengine/actors"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine/evm"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/prom"
	apihttp "github.com/txengine/txengine/http"
)

// TestConfigDefaultsAreThePackagesDefaults: where config/ sets a key that a
// package also defaults, the two defaults agree, so that a configuration
// file that leaves the key out and a package Config that leaves the field
// zero mean the same. Each package's Default validates. (kms.retries and
// kms.backoff are config/'s own: keystore's zero Retries is no retry, not
// a default, and its 50ms Backoff is never used by serve, which passes
// config/'s 100ms.)
func TestConfigDefaultsAreThePackagesDefaults(t *testing.T) {
	c := config.Default()
	api, sys := apihttp.Default(), actors.Default()
	kms, dev := keystore.DefaultKMSOptions(), evm.DefaultDevChainConfig()
	for _, err := range []error{api.Validate(), sys.Validate(), sys.Callbacks.Validate(), kms.Validate()} {
		if err != nil {
			t.Errorf("a package's Default does not validate: %v", err)
		}
	}
	for _, d := range []struct {
		key       string
		got, want any
	}{
		{"http.requestTimeout", c.HTTP.RequestTimeout, api.RequestTimeout},
		{"rateLimit.perSecond", c.RateLimit.PerSecond, api.RateLimit.PerSecond},
		{"rateLimit.perHour", c.RateLimit.PerHour, api.RateLimit.PerHour},
		{"rateLimit.authFailuresPerSecond", c.RateLimit.AuthFailuresPerSecond, api.RateLimit.AuthFailuresPerSecond},
		{"rateLimit.authFailuresPerHour", c.RateLimit.AuthFailuresPerHour, api.RateLimit.AuthFailuresPerHour},
		{"engine.idleAccount", c.Engine.IdleAccount, sys.IdleAccount},
		{"engine.maxBatch", c.Engine.MaxBatch, sys.MaxBatch},
		{"callbacks.timeout", c.Callbacks.Timeout, sys.Callbacks.Dispatcher.Timeout},
		{"callbacks.concurrency", c.Callbacks.Concurrency, sys.Callbacks.Dispatcher.Concurrency},
		{"callbacks.retention", c.Callbacks.Retention, sys.Callbacks.Retention},
		{"kms.concurrency", c.KMS.Concurrency, kms.Concurrency},
		{"kms.callTimeout", c.KMS.CallTimeout, kms.CallTimeout},
		{"dev.blockPeriod", c.Dev.BlockPeriod, dev.Period},
		{"metrics.maxAccounts", c.Metrics.MaxAccounts, prom.Default().MaxAccounts},
	} {
		if d.got != d.want {
			t.Errorf("config default %s = %v, the package's = %v", d.key, d.got, d.want)
		}
	}
}

// TestCallbacksConfigFromDefaults: the dispatcher's configuration starts
// from callbacks.Default and takes the configured keys; it validates.
func TestCallbacksConfigFromDefaults(t *testing.T) {
	c := config.Default()
	c.Callbacks.Concurrency, c.Callbacks.Retention = 7, 48*time.Hour
	got := callbacksConfig(c, nil)
	if err := got.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	if got.Dispatcher.Concurrency != 7 || got.Retention != 48*time.Hour || got.Dispatcher.Timeout != c.Callbacks.Timeout ||
		got.Dispatcher.UserAgent != "txengine/"+version() || !got.Dispatcher.AllowPrivate {
		t.Errorf("callbacksConfig = %+v", got)
	}
	if d := actors.Default().Callbacks; got.PollInterval != d.PollInterval || got.PruneBatch != d.PruneBatch || got.Dispatcher.StoreTimeout != d.Dispatcher.StoreTimeout {
		t.Errorf("callbacksConfig left callbacks.Default's settings: %+v", got)
	}
}

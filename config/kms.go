package config

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// KMS configures accounts whose key lives in AWS KMS (docs/kms.md). The
// credentials come from the AWS SDK's standard chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, web identity,
// container and instance roles): none is read from this file.
type KMS struct {
	// Enabled turns KMS custody on (TXENGINE_KMS_ENABLED=true|false;
	// default false). Off, POST /accounts refuses custody kms, and the
	// transactions of accounts whose key is in KMS wait until it is on.
	Enabled bool `yaml:"enabled"`
	// Region is the AWS region of the keys (TXENGINE_KMS_REGION); empty:
	// the SDK's (AWS_REGION, the shared config file).
	Region string `yaml:"region"`
	// Endpoint replaces KMS's endpoint (TXENGINE_KMS_ENDPOINT): local-kms
	// for local testing (http://127.0.0.1:8080), or a VPC endpoint.
	Endpoint string `yaml:"endpoint"`
	// Concurrency bounds the Sign calls in flight over every account
	// (TXENGINE_KMS_CONCURRENCY; default 32): a KMS account's batch is
	// signed that many at once.
	Concurrency int `yaml:"concurrency"`
	// CallTimeout bounds each KMS call (TXENGINE_KMS_CALL_TIMEOUT; default
	// 5s): a KMS that does not answer holds the account's transactions.
	CallTimeout time.Duration `yaml:"callTimeout"`
	// Retries is how many times a throttled Sign is tried again, with
	// exponential backoff from Backoff, before the account backs off
	// (default 4).
	Retries int `yaml:"retries"`
	// Backoff is the first pause after a throttled call (default 100ms).
	Backoff time.Duration `yaml:"backoff"`
}

// defaultKMS returns KMS off, 32 signatures in flight, 5 s per call, 4
// retries of a throttled call from 100 ms.
func defaultKMS() KMS {
	return KMS{Concurrency: 32, CallTimeout: 5 * time.Second, Retries: 4, Backoff: 100 * time.Millisecond}
}

// applyKMSEnv applies the TXENGINE_KMS_* overrides.
func (c *Config) applyKMSEnv(getenv func(string) string) error {
	if v := getenv("TXENGINE_KMS_ENABLED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_KMS_ENABLED: %q is not true or false", v)
		}
		c.KMS.Enabled = b
	}
	if v := getenv("TXENGINE_KMS_REGION"); v != "" {
		c.KMS.Region = v
	}
	if v := getenv("TXENGINE_KMS_ENDPOINT"); v != "" {
		c.KMS.Endpoint = v
	}
	if v := getenv("TXENGINE_KMS_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_KMS_CONCURRENCY: %q is not an integer", v)
		}
		c.KMS.Concurrency = n
	}
	if v := getenv("TXENGINE_KMS_CALL_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("TXENGINE_KMS_CALL_TIMEOUT: %q is not a duration (e.g. 500ms, 5s)", v)
		}
		c.KMS.CallTimeout = d
	}
	return nil
}

// validate checks the kms keys (whether enabled or not: a file is checked
// whole).
func (k KMS) validate() error {
	if k.Concurrency < 1 || k.Concurrency > 1024 {
		return fmt.Errorf("kms.concurrency: must be between 1 and 1024, got %d", k.Concurrency)
	}
	if k.CallTimeout < 100*time.Millisecond || k.CallTimeout > time.Minute {
		return fmt.Errorf("kms.callTimeout: must be between 100ms and 1m, got %s", k.CallTimeout)
	}
	if k.Retries < 0 || k.Retries > 10 {
		return fmt.Errorf("kms.retries: must be between 0 and 10, got %d", k.Retries)
	}
	if k.Backoff < time.Millisecond || k.Backoff > 10*time.Second {
		return fmt.Errorf("kms.backoff: must be between 1ms and 10s, got %s", k.Backoff)
	}
	if k.Endpoint != "" {
		u, err := url.Parse(k.Endpoint)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return fmt.Errorf("kms.endpoint: must be an http:// or https:// URL")
		case u.User != nil:
			return fmt.Errorf("kms.endpoint: must not carry credentials (they come from the AWS SDK's standard chain)")
		}
	}
	return nil
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCallbacksAllowPrivate(t *testing.T) {
	network := map[string]string{"TXENGINE_NETWORK_NAME": "geth", "TXENGINE_NETWORK_CHAIN_ID": "1337",
		"TXENGINE_NETWORK_HTTP_URL": "http://127.0.0.1:8545"}
	withEnv := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range network {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"embedded default", nil, true},
		{"embedded default, refused", map[string]string{"TXENGINE_CALLBACKS_ALLOW_PRIVATE": "false"}, false},
		{"configured network", network, false},
		{"configured network, allowed", withEnv(map[string]string{"TXENGINE_CALLBACKS_ALLOW_PRIVATE": "true"}), true},
	} {
		cfg, err := Load("", env(tt.env))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := cfg.CallbacksAllowPrivate(); got != tt.want {
			t.Errorf("%s: CallbacksAllowPrivate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCallbacksConfig(t *testing.T) {
	cfg, err := Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Callbacks.Timeout != 10*time.Second || cfg.Callbacks.Concurrency != 64 || cfg.Callbacks.AllowPrivate != nil {
		t.Fatalf("defaults: %+v", cfg.Callbacks)
	}
	cfg, err = Load("", env(map[string]string{"TXENGINE_CALLBACKS_TIMEOUT": "500ms"}))
	if err != nil || cfg.Callbacks.Timeout != 500*time.Millisecond {
		t.Fatalf("env timeout: %+v, %v", cfg.Callbacks, err)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("callbacks:\n  allowPrivate: false\n  concurrency: 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(p, env(nil))
	if err != nil || cfg.CallbacksAllowPrivate() || cfg.Callbacks.Concurrency != 8 {
		t.Fatalf("file: %+v, %v", cfg.Callbacks, err)
	}
	for k, v := range map[string]string{
		"TXENGINE_CALLBACKS_ALLOW_PRIVATE": "maybe",
		"TXENGINE_CALLBACKS_TIMEOUT":       "soon",
	} {
		if _, err := Load("", env(map[string]string{k: v})); err == nil || !strings.HasPrefix(err.Error(), k) {
			t.Errorf("%s=%s: err = %v", k, v, err)
		}
	}
	if _, err := Load("", env(map[string]string{"TXENGINE_CALLBACKS_TIMEOUT": "1ms"})); err == nil || !strings.HasPrefix(err.Error(), "callbacks.timeout") {
		t.Errorf("1ms timeout: err = %v", err)
	}
}

// TestCallbacksRetention: 7 days by default, TXENGINE_CALLBACKS_RETENTION
// or callbacks.retention sets it, less than an hour is refused.
func TestCallbacksRetention(t *testing.T) {
	cfg, err := Load("", env(nil))
	if err != nil || cfg.Callbacks.Retention != 7*24*time.Hour {
		t.Fatalf("default retention: %s, %v", cfg.Callbacks.Retention, err)
	}
	cfg, err = Load("", env(map[string]string{"TXENGINE_CALLBACKS_RETENTION": "72h"}))
	if err != nil || cfg.Callbacks.Retention != 72*time.Hour {
		t.Fatalf("env retention: %s, %v", cfg.Callbacks.Retention, err)
	}
	if _, err := Load("", env(map[string]string{"TXENGINE_CALLBACKS_RETENTION": "a week"})); err == nil ||
		!strings.HasPrefix(err.Error(), "TXENGINE_CALLBACKS_RETENTION") {
		t.Errorf("unparsable retention: err = %v", err)
	}
	if _, err := Load("", env(map[string]string{"TXENGINE_CALLBACKS_RETENTION": "30m"})); err == nil ||
		!strings.HasPrefix(err.Error(), "callbacks.retention") {
		t.Errorf("30m retention: err = %v", err)
	}
}

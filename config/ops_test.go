package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestExampleLoadsAsDefaults: the example file is valid and says exactly
// the defaults, but for its one example network (by default there is none:
// the embedded dev chain runs).
func TestExampleLoadsAsDefaults(t *testing.T) {
	cfg, err := Load("txengine.example.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	if len(cfg.Networks) != 1 {
		t.Fatalf("example has %d networks, want the one that documents the keys", len(cfg.Networks))
	}
	cfg.Networks = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("example differs from the defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

// TestExampleNamesEveryKey: every yaml key of Config appears in the example
// (set, or in a comment for list entries), with a comment above it.
func TestExampleNamesEveryKey(t *testing.T) {
	raw, err := os.ReadFile("txengine.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			if !regexp.MustCompile(`(?m)^[ #]*(- )?` + regexp.QuoteMeta(key) + `:`).MatchString(text) {
				t.Errorf("key %s%s is not in the example", path, key)
			}
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Time{}) {
				walk(ft, path+key+".")
			}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
}

func TestOpsSettings(t *testing.T) {
	cfg, err := Load("", env(map[string]string{
		"TXENGINE_METRICS_LISTEN": "127.0.0.1:9100", "TXENGINE_METRICS_MAX_ACCOUNTS": "5",
		"TXENGINE_RATE_LIMIT_PER_SECOND": "20", "TXENGINE_RATE_LIMIT_PER_HOUR": "100",
		"TXENGINE_SHUTDOWN_TIMEOUT": "3s", "TXENGINE_MAX_HEAD_AGE": "0s",
		"TXENGINE_DATABASE_URL": "postgres://u@localhost/txengine", "TXENGINE_HTTP_REQUEST_TIMEOUT": "5s",
		"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_SECOND": "4", "TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR": "40",
		"TXENGINE_HTTP_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1,",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics.Listen != "127.0.0.1:9100" || cfg.Metrics.MaxAccounts != 5 || cfg.RateLimit.PerSecond != 20 ||
		cfg.RateLimit.PerHour != 100 || cfg.ShutdownTimeout != 3*time.Second || cfg.Health.MaxHeadAge != 0 ||
		cfg.Database.URL != "postgres://u@localhost/txengine" || cfg.HTTP.RequestTimeout != 5*time.Second ||
		cfg.RateLimit.AuthFailuresPerSecond != 4 || cfg.RateLimit.AuthFailuresPerHour != 40 ||
		!slices.Equal(cfg.HTTP.TrustedProxies, []string{"10.0.0.0/8", "192.0.2.1"}) {
		t.Fatalf("env not applied: %+v", cfg)
	}
	d := Default()
	if d.RateLimit.AuthFailuresPerSecond != 20 || d.RateLimit.AuthFailuresPerHour != 600 || len(d.HTTP.TrustedProxies) != 0 {
		t.Fatalf("defaults of the failed-authentication limits and trusted proxies: %+v", d)
	}
	if d.RateLimit.PerSecond != 10 || d.RateLimit.PerHour != 3600 || d.ShutdownTimeout != 15*time.Second || d.Metrics.MaxAccounts != 1000 || d.HTTP.RequestTimeout != 30*time.Second {
		t.Fatalf("defaults: %+v", d)
	}
	for _, tt := range []struct {
		env map[string]string
		key string
	}{
		{map[string]string{"TXENGINE_METRICS_LISTEN": "nowhere"}, "metrics.listen"},
		{map[string]string{"TXENGINE_METRICS_LISTEN": "127.0.0.1:8080"}, "metrics.listen"},
		{map[string]string{"TXENGINE_METRICS_MAX_ACCOUNTS": "-1"}, "metrics.maxAccounts"},
		{map[string]string{"TXENGINE_RATE_LIMIT_PER_SECOND": "0"}, "rateLimit.perSecond"},
		{map[string]string{"TXENGINE_RATE_LIMIT_PER_HOUR": "many"}, "TXENGINE_RATE_LIMIT_PER_HOUR"},
		{map[string]string{"TXENGINE_RATE_LIMIT_PER_HOUR": "0"}, "rateLimit.perHour"},
		{map[string]string{"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_SECOND": "0"}, "rateLimit.authFailuresPerSecond"},
		{map[string]string{"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR": "-3"}, "rateLimit.authFailuresPerHour"},
		{map[string]string{"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR": "x"}, "TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR"},
		{map[string]string{"TXENGINE_HTTP_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"}, "http.trustedProxies"},
		{map[string]string{"TXENGINE_SHUTDOWN_TIMEOUT": "1h"}, "shutdownTimeout"},
		{map[string]string{"TXENGINE_SHUTDOWN_TIMEOUT": "soon"}, "TXENGINE_SHUTDOWN_TIMEOUT"},
		{map[string]string{"TXENGINE_MAX_HEAD_AGE": "-1s"}, "health.maxHeadAge"},
		{map[string]string{"TXENGINE_HTTP_REQUEST_TIMEOUT": "500ms"}, "http.requestTimeout"},
		{map[string]string{"TXENGINE_HTTP_REQUEST_TIMEOUT": "11m"}, "http.requestTimeout"},
		{map[string]string{"TXENGINE_HTTP_REQUEST_TIMEOUT": "soon"}, "TXENGINE_HTTP_REQUEST_TIMEOUT"},
		{map[string]string{"TXENGINE_DATABASE_URL": "mysql://x"}, "database.url"},
	} {
		_, err := Load("", env(tt.env))
		if err == nil || !strings.HasPrefix(err.Error(), tt.key) {
			t.Errorf("env %v: err = %v, want it to start with %q", tt.env, err, tt.key)
		}
	}
}

// TestQuotas: the quota defaults, their TXENGINE_QUOTA_* overrides (0 is
// unlimited) and the refusal of bad values naming the key.
func TestQuotas(t *testing.T) {
	if d := Default().Quotas; d != (Quotas{MaxUsers: 1000, MaxAccounts: 10_000, MaxSubscriptions: 1000, FaucetPerOwner: 100, FaucetPeriod: 24 * time.Hour}) {
		t.Fatalf("defaults: %+v", d)
	}
	cfg, err := Load("", env(map[string]string{
		"TXENGINE_QUOTA_MAX_USERS": "0", "TXENGINE_QUOTA_MAX_ACCOUNTS": "50", "TXENGINE_QUOTA_MAX_SUBSCRIPTIONS": "7",
		"TXENGINE_QUOTA_FAUCET_PER_OWNER": "3", "TXENGINE_QUOTA_FAUCET_PERIOD": "1h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quotas != (Quotas{MaxUsers: 0, MaxAccounts: 50, MaxSubscriptions: 7, FaucetPerOwner: 3, FaucetPeriod: time.Hour}) {
		t.Fatalf("env not applied: %+v", cfg.Quotas)
	}
	for _, tt := range []struct {
		env map[string]string
		key string
	}{
		{map[string]string{"TXENGINE_QUOTA_MAX_USERS": "-1"}, "quotas.maxUsers"},
		{map[string]string{"TXENGINE_QUOTA_MAX_ACCOUNTS": "-5"}, "quotas.maxAccounts"},
		{map[string]string{"TXENGINE_QUOTA_MAX_SUBSCRIPTIONS": "-1"}, "quotas.maxSubscriptions"},
		{map[string]string{"TXENGINE_QUOTA_FAUCET_PER_OWNER": "-1"}, "quotas.faucetPerOwner"},
		{map[string]string{"TXENGINE_QUOTA_FAUCET_PER_OWNER": "lots"}, "TXENGINE_QUOTA_FAUCET_PER_OWNER"},
		{map[string]string{"TXENGINE_QUOTA_FAUCET_PERIOD": "10s"}, "quotas.faucetPeriod"},
		{map[string]string{"TXENGINE_QUOTA_FAUCET_PERIOD": "daily"}, "TXENGINE_QUOTA_FAUCET_PERIOD"},
	} {
		_, err := Load("", env(tt.env))
		if err == nil || !strings.HasPrefix(err.Error(), tt.key) {
			t.Errorf("env %v: err = %v, want it to start with %q", tt.env, err, tt.key)
		}
	}
}

// TestMetricsTokenFile: metrics.tokenFile (or TXENGINE_METRICS_TOKEN_FILE)
// is read, trimmed, and refused when missing, short or not one token, with
// a message that names the key and not the file's content.
func TestMetricsTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  metrics-0123456789abcdef\n")
	cfg, err := Load(writeConfig(t, "metrics:\n  tokenFile: "+good+"\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := cfg.Metrics.Token(); err != nil || tok != "metrics-0123456789abcdef" {
		t.Fatalf("Token() = %q, %v", tok, err)
	}
	cfg, err = Load("", env(map[string]string{"TXENGINE_METRICS_TOKEN_FILE": good}))
	if err != nil || cfg.Metrics.TokenFile != good {
		t.Fatalf("from the environment: %+v, %v", cfg.Metrics, err)
	}
	if tok, err := Default().Metrics.Token(); tok != "" || err != nil {
		t.Fatalf("default Token() = %q, %v", tok, err)
	}
	for _, p := range []string{dir + "/missing", write("short", "SHORTSECRET\n"), write("two", "SECRETSECRETSECRET1 SECRETSECRET2\n")} {
		_, err := Load("", env(map[string]string{"TXENGINE_METRICS_TOKEN_FILE": p}))
		if err == nil || !strings.HasPrefix(err.Error(), "metrics.tokenFile:") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: err = %v", p, err)
		}
	}
}

package config

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// Metrics configures the Prometheus metrics.
type Metrics struct {
	// Listen is a separate listen address for GET /metrics
	// (TXENGINE_METRICS_LISTEN); empty serves /metrics on Listen.
	Listen string `yaml:"listen"`
	// TokenFile names a file holding a bearer token that GET /metrics then
	// requires, on whichever listener serves it (TXENGINE_METRICS_TOKEN_FILE;
	// Prometheus: authorization.credentials_file). Empty: no token. The
	// metrics name account ids and addresses: set it, or metrics.listen on
	// an address only the scraper reaches, when the API is exposed.
	TokenFile string `yaml:"tokenFile"`
	// MaxAccounts is how many accounts get their own series; the rest
	// share account="other" (TXENGINE_METRICS_MAX_ACCOUNTS). 0: none.
	MaxAccounts int `yaml:"maxAccounts"`
}

// minMetricsToken is the shortest metrics token accepted.
const minMetricsToken = 16

// Token returns the metrics bearer token read from TokenFile (surrounding
// white space trimmed), "" when TokenFile is empty. A file that cannot be
// read or holds fewer than 16 characters is an error that names the key and
// the file, never its content.
func (m Metrics) Token() (string, error) {
	if m.TokenFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(m.TokenFile)
	if err != nil {
		return "", fmt.Errorf("metrics.tokenFile: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minMetricsToken || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("metrics.tokenFile: %s must hold one token of at least %d characters without spaces", m.TokenFile, minMetricsToken)
	}
	return tok, nil
}

// RateLimit is the default per-user request limits; operators are exempt
// and an operator may set per-user overrides.
type RateLimit struct {
	// PerSecond is requests per second (TXENGINE_RATE_LIMIT_PER_SECOND).
	PerSecond int `yaml:"perSecond"`
	// PerHour is requests per hour (TXENGINE_RATE_LIMIT_PER_HOUR).
	PerHour int `yaml:"perHour"`
	// AuthFailuresPerSecond bounds the requests with a missing, malformed
	// or unknown token per client address and second
	// (TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_SECOND; default 20); an
	// address over it or AuthFailuresPerHour gets 429 before its token is
	// looked up. Counted per node, in memory.
	AuthFailuresPerSecond int `yaml:"authFailuresPerSecond"`
	// AuthFailuresPerHour is the same per hour
	// (TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR; default 600).
	AuthFailuresPerHour int `yaml:"authFailuresPerHour"`
}

// Quotas caps what one user tree may create: a root user (ownerless, or
// created by an operator) and the users it created, directly or not, share
// them. Operators are exempt. 0 means unlimited.
type Quotas struct {
	// MaxUsers caps the users of a tree, its root included
	// (TXENGINE_QUOTA_MAX_USERS; default 1000).
	MaxUsers int `yaml:"maxUsers"`
	// MaxAccounts caps the accounts of a tree's users
	// (TXENGINE_QUOTA_MAX_ACCOUNTS; default 10000).
	MaxAccounts int `yaml:"maxAccounts"`
	// MaxSubscriptions caps the event subscriptions (not deleted) of a
	// tree's users (TXENGINE_QUOTA_MAX_SUBSCRIPTIONS; default 1000).
	MaxSubscriptions int `yaml:"maxSubscriptions"`
	// FaucetPerOwner caps the new accounts of a tree that a network's
	// faucet funds per FaucetPeriod (TXENGINE_QUOTA_FAUCET_PER_OWNER;
	// default 100). Each account is funded at most once per network.
	FaucetPerOwner int `yaml:"faucetPerOwner"`
	// FaucetPeriod is the sliding period of FaucetPerOwner
	// (TXENGINE_QUOTA_FAUCET_PERIOD; default 24h).
	FaucetPeriod time.Duration `yaml:"faucetPeriod"`
}

// HTTP tunes the API listener.
type HTTP struct {
	// RequestTimeout bounds the handling of one request; one that exceeds
	// it gets 503 unavailable (TXENGINE_HTTP_REQUEST_TIMEOUT; default 30s).
	// The listener's read and write timeouts derive from it.
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	// TrustedProxies are the IP addresses or CIDR ranges of reverse
	// proxies whose X-Forwarded-For / X-Real-IP headers name the client
	// address (TXENGINE_HTTP_TRUSTED_PROXIES, comma-separated). Default
	// none: the client address is the connection's peer, which a client
	// cannot spoof. Set it when the service runs behind a load balancer,
	// or every client shares the balancer's address (and its limit of
	// failed authentications).
	TrustedProxies []string `yaml:"trustedProxies"`
}

// Health configures /readyz.
type Health struct {
	// MaxHeadAge makes a network whose latest block is older than this not
	// ready (TXENGINE_MAX_HEAD_AGE); 0 disables the check.
	MaxHeadAge time.Duration `yaml:"maxHeadAge"`
}

// opsDefaults sets the defaults of the operational settings.
func (c *Config) opsDefaults() {
	c.Metrics = Metrics{MaxAccounts: 1000}
	c.RateLimit = RateLimit{PerSecond: 10, PerHour: 3600, AuthFailuresPerSecond: 20, AuthFailuresPerHour: 600}
	c.Quotas = Quotas{MaxUsers: 1000, MaxAccounts: 10_000, MaxSubscriptions: 1000, FaucetPerOwner: 100, FaucetPeriod: 24 * time.Hour}
	c.Health = Health{MaxHeadAge: 2 * time.Minute}
	c.ShutdownTimeout = 15 * time.Second
	c.HTTP = HTTP{RequestTimeout: 30 * time.Second, TrustedProxies: []string{}}
}

// applyOpsEnv applies the TXENGINE_* overrides of the operational settings.
func (c *Config) applyOpsEnv(getenv func(string) string) error {
	if v := getenv("TXENGINE_METRICS_LISTEN"); v != "" {
		c.Metrics.Listen = v
	}
	if v := getenv("TXENGINE_METRICS_TOKEN_FILE"); v != "" {
		c.Metrics.TokenFile = v
	}
	ints := []struct {
		key string
		p   *int
	}{
		{"TXENGINE_METRICS_MAX_ACCOUNTS", &c.Metrics.MaxAccounts},
		{"TXENGINE_RATE_LIMIT_PER_SECOND", &c.RateLimit.PerSecond},
		{"TXENGINE_RATE_LIMIT_PER_HOUR", &c.RateLimit.PerHour},
		{"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_SECOND", &c.RateLimit.AuthFailuresPerSecond},
		{"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR", &c.RateLimit.AuthFailuresPerHour},
		{"TXENGINE_QUOTA_MAX_USERS", &c.Quotas.MaxUsers},
		{"TXENGINE_QUOTA_MAX_ACCOUNTS", &c.Quotas.MaxAccounts},
		{"TXENGINE_QUOTA_MAX_SUBSCRIPTIONS", &c.Quotas.MaxSubscriptions},
		{"TXENGINE_QUOTA_FAUCET_PER_OWNER", &c.Quotas.FaucetPerOwner},
	}
	for _, e := range ints {
		if v := getenv(e.key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not an integer", e.key, v)
			}
			*e.p = n
		}
	}
	if v := getenv("TXENGINE_HTTP_TRUSTED_PROXIES"); v != "" {
		c.HTTP.TrustedProxies = nil
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				c.HTTP.TrustedProxies = append(c.HTTP.TrustedProxies, p)
			}
		}
	}
	durations := []struct {
		key string
		p   *time.Duration
	}{
		{"TXENGINE_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout},
		{"TXENGINE_MAX_HEAD_AGE", &c.Health.MaxHeadAge},
		{"TXENGINE_HTTP_REQUEST_TIMEOUT", &c.HTTP.RequestTimeout},
		{"TXENGINE_QUOTA_FAUCET_PERIOD", &c.Quotas.FaucetPeriod},
	}
	for _, e := range durations {
		if v := getenv(e.key); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %q is not a duration (e.g. 500ms, 2s)", e.key, v)
			}
			*e.p = d
		}
	}
	return nil
}

// validateOps checks the operational settings and names the first bad key.
func (c *Config) validateOps() error {
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			return fmt.Errorf("metrics.listen: %q is not host:port: %w", c.Metrics.Listen, err)
		}
		if c.Metrics.Listen == c.Listen {
			return fmt.Errorf("metrics.listen: %q is the API's listen address; leave it empty to serve /metrics there", c.Metrics.Listen)
		}
	}
	if _, err := c.Metrics.Token(); err != nil {
		return err
	}
	if c.Metrics.MaxAccounts < 0 || c.Metrics.MaxAccounts > 100_000 {
		return fmt.Errorf("metrics.maxAccounts: must be between 0 and 100000, got %d", c.Metrics.MaxAccounts)
	}
	if c.RateLimit.PerSecond < 1 {
		return fmt.Errorf("rateLimit.perSecond: must be at least 1, got %d", c.RateLimit.PerSecond)
	}
	if c.RateLimit.PerHour < 1 {
		return fmt.Errorf("rateLimit.perHour: must be at least 1, got %d", c.RateLimit.PerHour)
	}
	if c.RateLimit.AuthFailuresPerSecond < 1 {
		return fmt.Errorf("rateLimit.authFailuresPerSecond: must be at least 1, got %d", c.RateLimit.AuthFailuresPerSecond)
	}
	if c.RateLimit.AuthFailuresPerHour < 1 {
		return fmt.Errorf("rateLimit.authFailuresPerHour: must be at least 1, got %d", c.RateLimit.AuthFailuresPerHour)
	}
	for _, p := range c.HTTP.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				return fmt.Errorf("http.trustedProxies: %q is neither an IP address nor a CIDR range", p)
			}
		}
	}
	for _, q := range []struct {
		key string
		v   int
	}{{"quotas.maxUsers", c.Quotas.MaxUsers}, {"quotas.maxAccounts", c.Quotas.MaxAccounts},
		{"quotas.maxSubscriptions", c.Quotas.MaxSubscriptions}, {"quotas.faucetPerOwner", c.Quotas.FaucetPerOwner}} {
		if q.v < 0 {
			return fmt.Errorf("%s: must not be negative (0 is unlimited), got %d", q.key, q.v)
		}
	}
	if c.Quotas.FaucetPerOwner > 0 && c.Quotas.FaucetPeriod < time.Minute {
		return fmt.Errorf("quotas.faucetPeriod: must be at least 1m, got %s", c.Quotas.FaucetPeriod)
	}
	if c.Health.MaxHeadAge < 0 {
		return fmt.Errorf("health.maxHeadAge: must not be negative")
	}
	if c.ShutdownTimeout < time.Second || c.ShutdownTimeout > 10*time.Minute {
		return fmt.Errorf("shutdownTimeout: must be between 1s and 10m, got %s", c.ShutdownTimeout)
	}
	if c.HTTP.RequestTimeout < time.Second || c.HTTP.RequestTimeout > 10*time.Minute {
		return fmt.Errorf("http.requestTimeout: must be between 1s and 10m, got %s", c.HTTP.RequestTimeout)
	}
	return nil
}

package http

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// RateLimitConfig sets the per-user request limits (API.md, "Authentication
// and users"). Zero fields take the defaults: 10 per second, 3600 per hour.
type RateLimitConfig struct {
	PerSecond int
	PerHour   int
	// Limits returns the effective limits of a non-operator user; nil uses
	// DefaultLimits (the user's override, else PerSecond and PerHour).
	Limits func(u *engine.User) (perSecond, perHour int)
	// Counter, when set, counts the requests in the store, in windows that
	// every node sharing the database counts in: the limits hold for the
	// cluster, not per node. Nil counts in this process's memory. When the
	// store fails, the request is allowed (and logged): it meets the store
	// again anyway.
	Counter engine.RateCounterStore
}

func (c RateLimitConfig) withDefaults() RateLimitConfig {
	if c.PerSecond <= 0 {
		c.PerSecond = 10
	}
	if c.PerHour <= 0 {
		c.PerHour = 3600
	}
	if c.Limits == nil {
		c.Limits = c.DefaultLimits
	}
	return c
}

// DefaultLimits returns u's override (User.Limits, set by an operator) for
// each window where it has one, and the configured default elsewhere.
func (c RateLimitConfig) DefaultLimits(u *engine.User) (perSecond, perHour int) {
	perSecond, perHour = c.PerSecond, c.PerHour
	if u != nil && u.Limits != nil {
		if u.Limits.PerSecond > 0 {
			perSecond = u.Limits.PerSecond
		}
		if u.Limits.PerHour > 0 {
			perHour = u.Limits.PerHour
		}
	}
	return perSecond, perHour
}

// Windows of the limiter, also the values of the rate-limited metric's
// window label.
const (
	windowSecond = "second"
	windowHour   = "hour"
)

// limiter counts requests per user in fixed windows aligned to the clock:
// the current second and the current hour. A refused request does not
// count. Counts are in memory unless cfg.Counter is set. Memory is bounded
// by the users active in the current hour: entries of earlier hours are
// swept out, at most once a minute; so are the store's old windows.
type limiter struct {
	cfg   RateLimitConfig
	clock engine.Clock
	log   *slog.Logger

	mu        sync.Mutex
	users     map[string]*usage
	lastSweep time.Time
	// lastPrune is when the store's old windows were last pruned.
	lastPrune time.Time
}

// usage is one user's counts in the windows starting at second and hour.
type usage struct {
	second, hour     time.Time
	inSecond, inHour int
}

// decision is the limiter's answer for one request and what the headers say.
type decision struct {
	allowed bool
	// window, limit, remaining and reset describe the binding window: the
	// exhausted one when refused, else the one with the fewest requests
	// left (the longer one on a tie).
	window           string
	limit, remaining int
	reset            time.Duration
}

func newLimiter(cfg RateLimitConfig, clock engine.Clock) *limiter {
	return &limiter{cfg: cfg.withDefaults(), clock: clock, log: slog.New(slog.DiscardHandler), users: map[string]*usage{}}
}

// allow counts a request of u if its limits allow it.
func (l *limiter) allow(ctx context.Context, u *engine.User) decision {
	now := l.clock.Now()
	sec, hour := now.Truncate(time.Second), now.Truncate(time.Hour)
	key, perSecond, perHour := budgetOf(l.cfg, u)
	secReset, hourReset := sec.Add(time.Second).Sub(now), hour.Add(time.Hour).Sub(now)
	if l.cfg.Counter != nil {
		l.prune(ctx, now)
		inSecond, inHour, allowed, err := l.cfg.Counter.CountRequest(ctx, key, sec, hour, perSecond, perHour)
		if err != nil {
			l.log.WarnContext(ctx, "rate limit: counting in the store failed; request allowed", "user", u.ID, "err", err)
			return decision{allowed: true, window: windowSecond, limit: perSecond, remaining: max(perSecond-1, 0), reset: secReset}
		}
		return decide(allowed, inSecond, inHour, perSecond, perHour, secReset, hourReset)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now, hour)
	us, ok := l.users[key]
	if !ok {
		us = &usage{}
		l.users[key] = us
	}
	if !us.second.Equal(sec) {
		us.second, us.inSecond = sec, 0
	}
	if !us.hour.Equal(hour) {
		us.hour, us.inHour = hour, 0
	}
	allowed := us.inSecond < perSecond && us.inHour < perHour
	if allowed {
		us.inSecond++
		us.inHour++
	}
	return decide(allowed, us.inSecond, us.inHour, perSecond, perHour, secReset, hourReset)
}

// decide describes the outcome of a request given the counts of its
// windows after it (counted or not).
func decide(allowed bool, inSecond, inHour, perSecond, perHour int, secReset, hourReset time.Duration) decision {
	if !allowed {
		if inHour >= perHour {
			return decision{window: windowHour, limit: perHour, remaining: 0, reset: hourReset}
		}
		return decision{window: windowSecond, limit: perSecond, remaining: 0, reset: secReset}
	}
	secLeft, hourLeft := max(perSecond-inSecond, 0), max(perHour-inHour, 0)
	if secLeft < hourLeft {
		return decision{allowed: true, window: windowSecond, limit: perSecond, remaining: secLeft, reset: secReset}
	}
	return decision{allowed: true, window: windowHour, limit: perHour, remaining: hourLeft, reset: hourReset}
}

// prune removes the store's old windows, at most once a minute.
func (l *limiter) prune(ctx context.Context, now time.Time) {
	l.mu.Lock()
	due := now.Sub(l.lastPrune) >= time.Minute
	if due {
		l.lastPrune = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	if err := l.cfg.Counter.PruneRateCounters(ctx, now); err != nil {
		l.log.WarnContext(ctx, "rate limit: pruning old windows failed", "err", err)
	}
}

// exempt describes the window an operator sees, and every response that no
// user is counted for (401s, the operational endpoints, unknown routes): the
// default per-second limit, never consumed.
func (l *limiter) exempt() decision {
	now := l.clock.Now()
	return decision{allowed: true, window: windowSecond, limit: l.cfg.PerSecond, remaining: l.cfg.PerSecond,
		reset: now.Truncate(time.Second).Add(time.Second).Sub(now)}
}

// sweep forgets users whose counts belong to an earlier hour (their state
// equals a fresh one's), at most once a minute. Called with mu held.
func (l *limiter) sweep(now, hour time.Time) {
	if now.Sub(l.lastSweep) < time.Minute {
		return
	}
	l.lastSweep = now
	for id, us := range l.users {
		if us.hour.Before(hour) {
			delete(l.users, id)
		}
	}
}

// tracked returns how many users the limiter holds.
func (l *limiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.users)
}

// ceilSeconds rounds d up to whole seconds, at least 1.
func ceilSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// setLimitHeaders writes X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (whole seconds until the described window resets) of d.
func setLimitHeaders(h http.Header, d decision) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(d.remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(d.reset)))
}

// rateLimit enforces the per-user limits after authentication. Operators
// are exempt. Every response of an authenticated request carries the
// X-RateLimit-* headers of the binding window (commonHeaders has set the
// uncounted default ones that every other response keeps); a refused
// request gets 429 rate_limited with Retry-After (seconds).
func (s *Server) rateLimit(c *gin.Context) {
	u := currentUser(c)
	if u == nil {
		c.Next()
		return
	}
	d := s.limiter.exempt()
	if !u.Operator {
		d = s.limiter.allow(c.Request.Context(), u)
	}
	h := c.Writer.Header()
	setLimitHeaders(h, d)
	if d.allowed {
		c.Next()
		return
	}
	s.metrics.RateLimited(d.window)
	h.Set("Retry-After", strconv.Itoa(ceilSeconds(d.reset)))
	s.fail(c, engine.Errorf(engine.CodeRateLimited, "", "rate limit exceeded: %d requests per %s; retry in %d s",
		d.limit, d.window, ceilSeconds(d.reset)))
}

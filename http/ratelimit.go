package http

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// RateLimitConfig sets the per-user request limits
// (docs/api-decisions.md#authentication-and-users) and the per-address limit of failed authentications. Zero
// fields take the defaults: 10 per second, 3600 per hour; 20 failed
// authentications per second and 600 per hour.
type RateLimitConfig struct {
	PerSecond int
	PerHour   int
	// Limits returns the effective limits of a non-operator user; nil uses
	// DefaultLimits (the user's override, else PerSecond and PerHour).
	Limits func(u *engine.User) (perSecond, perHour int)
	// Counter, when set, counts the requests in the store, in buckets that
	// every node sharing the database counts in: the limits hold for the
	// cluster, not per node. Nil counts in this process's memory. When the
	// store fails, the request is counted in this process's memory instead
	// (same limits, per node: never unlimited) and the failure is logged,
	// at most once a minute.
	Counter engine.RateCounterStore
	// AuthFailuresPerSecond and AuthFailuresPerHour limit the requests with
	// a missing, malformed or unknown token per client address, in this
	// process's memory. Once an address is over, its requests get 429
	// before their token is looked up.
	AuthFailuresPerSecond int
	AuthFailuresPerHour   int
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

// fallbackLogEvery bounds how often a failing counter store is logged.
const fallbackLogEvery = time.Minute

// maxFailureAddrs bounds the addresses whose failed authentications are
// counted (about 400 bytes each: 72 counters and the map entry); beyond
// it, new addresses share one budget (overflowKey) until the sweep frees
// room: under a flood from that many addresses they are limited together,
// never unlimited.
const maxFailureAddrs = 100_000

// overflowKey is the shared key of the addresses beyond maxFailureAddrs.
const overflowKey = "(overflow)"

// limiter enforces the limits in sliding windows of one second and one
// hour, each counted in buckets (engine.RateSecondBucket, RateHourBucket):
// a request is allowed when the buckets that overlap the last second (the
// last hour) hold fewer requests than the limit, all together. Chosen over the
// sliding-window estimate (previous window x remaining fraction + current)
// and over a token bucket because neither bounds every period of the
// window's length: the estimate lets almost twice the limit through when
// the previous window's requests came at its end, and a full bucket allows
// its capacity plus a window's refill. Counting whole buckets over-counts
// by at most one bucket (a window of 1.0 to 1.1 s, 60 to 61 min) and
// never under-counts, so no period of one second (hour) holds more than
// the limit; it costs 11 (61) counters per key. A refused request does not
// count.
//
// Counts are in memory unless cfg.Counter is set; then in memory only
// while the store fails. failures counts the failed authentications per
// client address, always in memory.
type limiter struct {
	cfg   RateLimitConfig
	clock engine.Clock
	log   *slog.Logger
	// fellBack counts the requests counted locally because the store failed.
	fellBack func()

	local    memCounter
	failures memCounter

	mu sync.Mutex
	// lastPrune is when the store's old buckets were last pruned.
	lastPrune time.Time
	// lastFallbackLog is when a failing store was last logged.
	lastFallbackLog time.Time
}

// decision is the limiter's answer for one request and what the headers say.
type decision struct {
	allowed bool
	// window, limit, remaining and reset describe the binding window: the
	// exhausted one when refused, else the one with the fewest requests
	// left (the longer one on a tie). reset is the time until the oldest
	// request the window holds leaves it, which frees at least one more
	// request (when no other request counts meanwhile).
	window           string
	limit, remaining int
	reset            time.Duration
}

func newLimiter(cfg RateLimitConfig, clock engine.Clock) *limiter {
	return &limiter{cfg: cfg.withDefaults(), clock: clock, log: slog.New(slog.DiscardHandler), fellBack: func() {},
		failures: memCounter{max: maxFailureAddrs}}
}

// allow counts a request of u if its limits allow it.
func (l *limiter) allow(ctx context.Context, u *engine.User) decision {
	key, perSecond, perHour := budgetOf(l.cfg, u)
	return l.allowKey(ctx, key, perSecond, perHour)
}

// allowKey counts a request of key if the limits allow it: in the store
// when there is one and it answers, else in memory.
func (l *limiter) allowKey(ctx context.Context, key string, perSecond, perHour int) decision {
	now := l.clock.Now()
	if l.cfg.Counter != nil {
		l.prune(ctx, now)
		sec, hour, allowed, err := l.cfg.Counter.CountRequest(ctx, key, now, perSecond, perHour)
		if err == nil {
			return decide(allowed, sec, hour, perSecond, perHour, now)
		}
		l.fallBack(ctx, now, err)
	}
	sec, hour, allowed := l.local.count(key, now, perSecond, perHour, true)
	return decide(allowed, sec, hour, perSecond, perHour, now)
}

// fallBack logs a failing store, at most once a minute, and counts the
// request that is counted in memory instead.
func (l *limiter) fallBack(ctx context.Context, now time.Time, err error) {
	if ctx.Err() != nil {
		return // the request ended (client gone, timed out), not the store
	}
	l.fellBack()
	l.mu.Lock()
	due := l.lastFallbackLog.IsZero() || now.Sub(l.lastFallbackLog) >= fallbackLogEvery
	if due {
		l.lastFallbackLog = now
	}
	l.mu.Unlock()
	if due {
		l.log.WarnContext(ctx, "rate limit: counting in the store failed; counting in this node's memory (logged at most once a minute)", "err", err)
	}
}

// authFailures describes the failed authentications of the client
// address addr without counting: refused once the address is at its limit.
func (l *limiter) authFailures(addr string) decision {
	now := l.clock.Now()
	perSecond, perHour := l.cfg.AuthFailuresPerSecond, l.cfg.AuthFailuresPerHour
	sec, hour, allowed := l.failures.count(addressKey(addr), now, perSecond, perHour, false)
	return decide(allowed, sec, hour, perSecond, perHour, now)
}

// authFailed counts one failed authentication of the client address addr.
func (l *limiter) authFailed(addr string) {
	l.failures.count(addressKey(addr), l.clock.Now(), l.cfg.AuthFailuresPerSecond, l.cfg.AuthFailuresPerHour, true)
}

// addressKey is the key a client address is counted under: an IPv4
// address (IPv4-mapped IPv6 unmapped) as is, an IPv6 address by its /64,
// the block a single host or subscriber usually gets (counting single
// IPv6 addresses would give one client 2^64 budgets).
func addressKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// decide describes the outcome of a request given its windows after it
// (counted or not).
func decide(allowed bool, sec, hour engine.RateWindowCount, perSecond, perHour int, now time.Time) decision {
	secReset := untilLeaves(sec, time.Second, engine.RateSecondBucket, now)
	hourReset := untilLeaves(hour, time.Hour, engine.RateHourBucket, now)
	if !allowed {
		if hour.Count >= perHour {
			return decision{window: windowHour, limit: perHour, remaining: 0, reset: hourReset}
		}
		return decision{window: windowSecond, limit: perSecond, remaining: 0, reset: secReset}
	}
	secLeft, hourLeft := max(perSecond-sec.Count, 0), max(perHour-hour.Count, 0)
	if secLeft < hourLeft {
		return decision{allowed: true, window: windowSecond, limit: perSecond, remaining: secLeft, reset: secReset}
	}
	return decision{allowed: true, window: windowHour, limit: perHour, remaining: hourLeft, reset: hourReset}
}

// untilLeaves is the time until the oldest bucket of w leaves a window of
// length span at now; 0 when w is empty.
func untilLeaves(w engine.RateWindowCount, span, bucket time.Duration, now time.Time) time.Duration {
	if w.Count == 0 {
		return 0
	}
	return max(w.Oldest.Add(span+bucket).Sub(now), 0)
}

// prune removes the store's old buckets, at most once a minute.
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
		l.log.WarnContext(ctx, "rate limit: pruning old buckets failed", "err", err)
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

// tracked returns how many users the limiter holds in memory.
func (l *limiter) tracked() int { return l.local.tracked() }

// memCounter counts requests per key in sliding windows in memory. Memory
// is bounded by the keys that counted in the last hour: the others (whose
// state equals a fresh one's) are swept out, at most once a minute, and
// by max when set: a new key beyond it is counted under overflowKey.
type memCounter struct {
	max       int
	mu        sync.Mutex
	keys      map[string]*usage
	lastSweep time.Time
}

// usage is one key's buckets of both windows.
type usage struct {
	second, hour buckets
}

// buckets are the counts of one window's buckets: counts[i] is the bucket
// starting at head - i*bucket; there are span/bucket + 1 of them, those
// that overlap (now-span, now] when head is now's bucket.
type buckets struct {
	head   time.Time
	counts []int32
}

// slide moves b to the bucket of now, dropping the buckets that left the
// window. A clock that went back keeps counting in the newest bucket.
func (b *buckets) slide(now time.Time, span, bucket time.Duration) {
	start := now.Truncate(bucket)
	if b.counts == nil {
		b.counts, b.head = make([]int32, int(span/bucket)+1), start
		return
	}
	if !start.After(b.head) {
		return
	}
	n := len(b.counts)
	shift := int(start.Sub(b.head) / bucket)
	if shift >= n {
		clear(b.counts)
	} else {
		copy(b.counts[shift:], b.counts[:n-shift])
		clear(b.counts[:shift])
	}
	b.head = start
}

// window returns the requests b holds and the start of its oldest bucket.
func (b *buckets) window(bucket time.Duration) engine.RateWindowCount {
	var w engine.RateWindowCount
	for i, c := range b.counts {
		if c > 0 {
			w.Count += int(c)
			w.Oldest = b.head.Add(-time.Duration(i) * bucket)
		}
	}
	return w
}

// count returns key's windows at now and whether both have room for one
// more request; with commit, a request that has room is counted.
func (m *memCounter) count(key string, now time.Time, perSecond, perHour int, commit bool) (sec, hour engine.RateWindowCount, allowed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	us, ok := m.keys[key]
	if !ok && m.max > 0 && len(m.keys) >= m.max {
		// Sweep now rather than within the minute, but at most once a
		// second: a flood of new keys must not sweep on every request.
		if now.Sub(m.lastSweep) >= time.Second {
			m.lastSweep = time.Time{}
			m.sweep(now)
		}
		if len(m.keys) >= m.max {
			key = overflowKey
			us, ok = m.keys[key]
		}
	}
	if !ok {
		if !commit {
			return engine.RateWindowCount{}, engine.RateWindowCount{}, perSecond > 0 && perHour > 0
		}
		if m.keys == nil {
			m.keys = map[string]*usage{}
		}
		us = &usage{}
		m.keys[key] = us
	}
	us.second.slide(now, time.Second, engine.RateSecondBucket)
	us.hour.slide(now, time.Hour, engine.RateHourBucket)
	sec, hour = us.second.window(engine.RateSecondBucket), us.hour.window(engine.RateHourBucket)
	allowed = sec.Count < perSecond && hour.Count < perHour
	if allowed && commit {
		us.second.counts[0]++
		us.hour.counts[0]++
		sec, hour = us.second.window(engine.RateSecondBucket), us.hour.window(engine.RateHourBucket)
	}
	return sec, hour, allowed
}

// sweep forgets keys that counted nothing in the last hour, at most once a
// minute. Called with mu held.
func (m *memCounter) sweep(now time.Time) {
	if now.Sub(m.lastSweep) < time.Minute {
		return
	}
	m.lastSweep = now
	for k, us := range m.keys {
		if now.Sub(us.hour.head) >= time.Hour+engine.RateHourBucket {
			delete(m.keys, k)
		}
	}
}

// tracked returns how many keys m holds.
func (m *memCounter) tracked() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// ceilSeconds rounds d up to whole seconds, at least 1.
func ceilSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// setLimitHeaders writes X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset of d. Reset is in whole seconds, rounded up: until the
// oldest request the window holds leaves it (then one more fits, unless
// others counted meanwhile); on uncounted responses, until the next second.
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
	setLimitHeaders(c.Writer.Header(), d)
	if d.allowed {
		c.Next()
		return
	}
	s.refuse(c, d, "rate limit exceeded")
}

// refuse answers 429 rate_limited for the exhausted window d, with its
// X-RateLimit-* headers and Retry-After (seconds); what says who is limited.
func (s *Server) refuse(c *gin.Context, d decision, what string) {
	h := c.Writer.Header()
	setLimitHeaders(h, d)
	s.metrics.RateLimited(d.window)
	h.Set("Retry-After", strconv.Itoa(ceilSeconds(d.reset)))
	s.fail(c, engine.Errorf(engine.CodeRateLimited, "", "%s: %d requests per %s; retry in %d s",
		what, d.limit, d.window, ceilSeconds(d.reset)))
}

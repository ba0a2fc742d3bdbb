package http

import (
	"context"
	"sync"
	"time"

	"github.com/txengine/txengine/engine"
)

// Bounds of the cache of authenticated users and of unknown tokens.
const (
	userCacheTTL  = 2 * time.Second
	userCacheSize = 10_000
	// unknownTTL keeps a token hash that matched no user. A new token is
	// random, so it cannot be among them: a token works at once.
	unknownTTL  = 30 * time.Second
	unknownSize = 10_000
)

// userCache keeps the user of a token hash for a short while, so that a
// burst of requests with one token reads the users table once per TTL
// rather than once per request. A change made through this server (limits)
// drops the user's entries at once; one made elsewhere (another instance
// on the same database) shows within the TTL. Hashes that matched no user
// are kept longer (unknownTTL), so a client repeating a bad token costs no
// database read; revocation is unaffected (it makes a known hash unknown,
// and known hashes are only kept for the TTL).
type userCache struct {
	mu      sync.Mutex
	entries map[string]userEntry
	// unknown holds when each unknown token hash expires.
	unknown map[string]time.Time
}

type userEntry struct {
	user    *engine.User
	expires time.Time
}

// get returns the user of hash, loading it when absent or expired. A hash
// that load did not find is remembered as unknown for unknownTTL; other
// errors are not cached.
func (c *userCache) get(ctx context.Context, now time.Time, hash []byte, load func(context.Context, []byte) (*engine.User, error)) (*engine.User, error) {
	key := string(hash)
	c.mu.Lock()
	e, ok := c.entries[key]
	unknownUntil, unknown := c.unknown[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.user, nil
	}
	if unknown && now.Before(unknownUntil) {
		return nil, engine.Errorf(engine.CodeNotFound, "", "unknown token")
	}
	u, err := load(ctx, hash)
	if engine.IsNotFound(err) {
		c.mu.Lock()
		if c.unknown == nil || len(c.unknown) >= unknownSize {
			c.sweepUnknown(now)
		}
		c.unknown[key] = now.Add(unknownTTL)
		c.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= userCacheSize {
		c.entries = make(map[string]userEntry)
	}
	c.entries[key] = userEntry{user: u, expires: now.Add(userCacheTTL)}
	c.mu.Unlock()
	return u, nil
}

// sweepUnknown drops the expired unknown hashes, or all of them when none
// has expired (a flood of distinct bad tokens): the map stays bounded.
// Called with mu held.
func (c *userCache) sweepUnknown(now time.Time) {
	for k, until := range c.unknown {
		if !now.Before(until) {
			delete(c.unknown, k)
		}
	}
	if c.unknown == nil || len(c.unknown) >= unknownSize {
		c.unknown = make(map[string]time.Time)
	}
}

// forget drops the entries of user id, and of the users whose budget root
// it is (they hold its limits).
func (c *userCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.user.ID == id || e.user.Root == id {
			delete(c.entries, k)
		}
	}
}

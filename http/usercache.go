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
// database read. A token revoked through any node is dropped at once
// (drop; usertokens.go tells the other nodes of a cluster), and one
// revoked otherwise (another database client) stops working within the TTL.
type userCache struct {
	mu      sync.Mutex
	entries map[string]userEntry
	// unknown holds when each unknown token hash expires.
	unknown map[string]time.Time
	// loading holds the loads in progress by token hash, so that a drop
	// that arrives while the hash is being read (the read may have seen
	// the token before its revocation committed) voids their result.
	loading map[string]*userLoad
}

// userLoad counts the loads in progress of one token hash; revoked is set
// when the hash was dropped meanwhile.
type userLoad struct {
	n       int
	revoked bool
}

type userEntry struct {
	user    *engine.User
	expires time.Time
}

// get returns the user of hash, loading it when absent or expired. A hash
// that load did not find is remembered as unknown for unknownTTL; other
// errors are not cached. With cache false the user is loaded every time
// and not kept (unknown hashes still are: a revocation cannot make a
// token valid).
func (c *userCache) get(ctx context.Context, now time.Time, hash []byte, cache bool, load func(context.Context, []byte) (*engine.User, error)) (*engine.User, error) {
	key := string(hash)
	c.mu.Lock()
	e, ok := c.entries[key]
	unknownUntil, unknown := c.unknown[key]
	c.mu.Unlock()
	if ok && cache && now.Before(e.expires) {
		return e.user, nil
	}
	if unknown && now.Before(unknownUntil) {
		return nil, engine.Errorf(engine.CodeNotFound, "", "unknown token")
	}
	c.mu.Lock()
	l := c.loading[key]
	if l == nil {
		if c.loading == nil {
			c.loading = make(map[string]*userLoad)
		}
		l = &userLoad{}
		c.loading[key] = l
	}
	l.n++
	c.mu.Unlock()

	u, err := load(ctx, hash)

	c.mu.Lock()
	defer c.mu.Unlock()
	if l.n--; l.n == 0 {
		delete(c.loading, key)
	}
	if err == nil && l.revoked {
		err = engine.Errorf(engine.CodeNotFound, "", "revoked token")
	}
	if engine.IsNotFound(err) {
		c.markUnknown(now, key)
	}
	if err != nil {
		return nil, err
	}
	if !cache {
		return u, nil
	}
	if c.entries == nil || len(c.entries) >= userCacheSize {
		c.entries = make(map[string]userEntry)
	}
	c.entries[key] = userEntry{user: u, expires: now.Add(userCacheTTL)}
	return u, nil
}

// markUnknown remembers key as a hash that authenticates nobody until
// unknownTTL from now. Called with mu held.
func (c *userCache) markUnknown(now time.Time, key string) {
	if c.unknown == nil || len(c.unknown) >= unknownSize {
		c.sweepUnknown(now)
	}
	c.unknown[key] = now.Add(unknownTTL)
}

// drop forgets the user of a revoked token hash at once: its entry goes,
// the hash is remembered as unknown (a revocation is final), and the loads
// of it in progress return not found instead of their result.
func (c *userCache) drop(now time.Time, hash []byte) {
	key := string(hash)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
	if l := c.loading[key]; l != nil {
		l.revoked = true
	}
	c.markUnknown(now, key)
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

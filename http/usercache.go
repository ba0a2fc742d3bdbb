package http

import (
	"context"
	"sync"
	"time"

	"github.com/txengine/txengine/engine"
)

// Bounds of the cache of authenticated users.
const (
	userCacheTTL  = 2 * time.Second
	userCacheSize = 10_000
)

// userCache keeps the user of a token hash for a short while, so that a
// burst of requests with one token reads the users table once per TTL
// rather than once per request. A change made through this server (limits)
// drops the user's entries at once; one made elsewhere (another instance
// on the same database) shows within the TTL.
type userCache struct {
	mu      sync.Mutex
	entries map[string]userEntry
}

type userEntry struct {
	user    *engine.User
	expires time.Time
}

// get returns the user of hash, loading it when absent or expired. Errors
// (unknown token included) are not cached.
func (c *userCache) get(ctx context.Context, now time.Time, hash []byte, load func(context.Context, []byte) (*engine.User, error)) (*engine.User, error) {
	key := string(hash)
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.user, nil
	}
	u, err := load(ctx, hash)
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

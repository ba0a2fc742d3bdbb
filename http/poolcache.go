package http

import (
	"context"
	"sync"
	"time"

	"github.com/txengine/txengine/engine"
)

// Bounds of the pool cache.
const (
	// poolCacheTTL is how long a pool read is used on the send path: a
	// resize or delete made on another node of a cluster is seen within
	// it; this node's own changes drop the pool at once (poolCache.drop).
	poolCacheTTL = 2 * time.Second
	// poolCacheSize bounds the pools kept; when full the cache starts
	// over.
	poolCacheSize = 4096
)

// poolCache keeps the pools that sends name (engine.Builder reads the
// pool of every send through one), so a burst through a pool reads it
// from the store once per poolCacheTTL, not once per send. The pools it
// returns are shared: callers only read them. Errors (not found
// included) are not cached.
type poolCache struct {
	mu sync.Mutex
	// gen counts drops: a read that started before a drop stores nothing,
	// so a pool deleted on this node is never put back by a send that
	// read it just before.
	gen   uint64
	pools map[string]poolEntry
}

// poolEntry is a cached pool and when it was read.
type poolEntry struct {
	p  *engine.Pool
	at time.Time
}

// get returns pool id, read with load when it is not cached or older than
// poolCacheTTL at now.
func (c *poolCache) get(ctx context.Context, id string, now time.Time, load func(context.Context, string) (*engine.Pool, error)) (*engine.Pool, error) {
	c.mu.Lock()
	e, ok := c.pools[id]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Sub(e.at) < poolCacheTTL && !now.Before(e.at) {
		return e.p, nil
	}
	p, err := load(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.pools == nil || len(c.pools) >= poolCacheSize {
			c.pools = make(map[string]poolEntry)
		}
		c.pools[id] = poolEntry{p: p, at: now}
	}
	c.mu.Unlock()
	return p, nil
}

// drop forgets pool id (resized or deleted on this node).
func (c *poolCache) drop(id string) {
	c.mu.Lock()
	c.gen++
	delete(c.pools, id)
	c.mu.Unlock()
}

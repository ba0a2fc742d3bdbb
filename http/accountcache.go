package http

import (
	"context"
	"sync"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// accountCacheSize bounds each generation of each map of the account
// cache (twoGen): the accounts used among the last accountCacheSize
// distinct ones stay cached. Each entry is about 200 bytes.
const accountCacheSize = 32_768

// twoGen is a map bounded by keeping two generations: when the current one
// is full it becomes the previous one (the one before is dropped), and a
// hit in the previous one moves the entry to the current. Unlike a map
// that starts over when full, a working set of up to size keys always
// stays (a burst over 10,000 accounts emptied the old cache at its size
// and read every account again: 1 SELECT per transfer).
// Its zero value is empty and ready to use.
type twoGen[K comparable, V any] struct {
	cur, prev map[K]V
}

func (g *twoGen[K, V]) get(k K) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.prev[k]
	if ok {
		g.put(k, v)
	}
	return v, ok
}

func (g *twoGen[K, V]) put(k K, v V) {
	if g.cur == nil || len(g.cur) >= accountCacheSize {
		g.prev, g.cur = g.cur, make(map[K]V)
	}
	g.cur[k] = v
}

func (g *twoGen[K, V]) delete(k K) {
	delete(g.cur, k)
	delete(g.prev, k)
}

// accountCache keeps what the sender of a transaction needs of an account
// (id, owner, address, where its key lives), which never changes once the account exists, and
// each owner's default account. It spares a transfer request its read of
// the accounts table (18 % of the service's CPU under txload, measured).
//
// Accounts are cached by id and by address for good. The default of an
// owner changes (PUT /accounts/default): this server drops the owner's
// entry when it changes it (forgetDefault), and a read that began before
// such a change is not cached (the generation check below). With
// cacheDefaults false (cluster mode, where another node may change the
// default), the default is read from the store every time.
type accountCache struct {
	cacheDefaults bool

	mu       sync.Mutex
	byID     twoGen[string, engine.Account]
	byAddr   twoGen[common.Address, engine.Account]
	defaults twoGen[string, string] // owner → id of the default account
	// gen counts forgetDefault calls: a default read from the store is
	// cached only if none happened while it was read.
	gen uint64
}

// senderFields is the cached part of a: the fields that never change. The
// result's Default is false and its key and idempotency record are absent.
func senderFields(a *engine.Account) engine.Account {
	return engine.Account{ID: a.ID, Owner: a.Owner, Address: a.Address, KMSKeyID: a.KMSKeyID, Created: a.Created}
}

// putLocked caches a by id and by address.
func (c *accountCache) putLocked(a engine.Account) {
	c.byID.put(a.ID, a)
	c.byAddr.put(a.Address, a)
}

// remember caches a, an account just created: its first transfer then
// reads nothing of it (a cold account costs its first send no round trip).
func (c *accountCache) remember(a *engine.Account) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(senderFields(a))
}

// byIDForSend returns the id, owner, address and creation time of account
// id (Default is not set: use it only to send from), loading the account
// with load on first use. Errors (not found included) are not cached.
func (c *accountCache) byIDForSend(ctx context.Context, id string, load func(context.Context, string) (*engine.Account, error)) (*engine.Account, error) {
	return c.forSend(func() (engine.Account, bool) { return c.byID.get(id) },
		func() (*engine.Account, error) { return load(ctx, id) })
}

// byAddressForSend is byIDForSend by address.
func (c *accountCache) byAddressForSend(ctx context.Context, addr common.Address, load func(context.Context, common.Address) (*engine.Account, error)) (*engine.Account, error) {
	return c.forSend(func() (engine.Account, bool) { return c.byAddr.get(addr) },
		func() (*engine.Account, error) { return load(ctx, addr) })
}

// forSend returns what cached finds (called under the lock), or else
// caches and returns the sender fields of what load returns.
func (c *accountCache) forSend(cached func() (engine.Account, bool), load func() (*engine.Account, error)) (*engine.Account, error) {
	c.mu.Lock()
	a, ok := cached()
	c.mu.Unlock()
	if ok {
		return &a, nil
	}
	loaded, err := load()
	if err != nil {
		return nil, err
	}
	a = senderFields(loaded)
	c.mu.Lock()
	c.putLocked(a)
	c.mu.Unlock()
	return &a, nil
}

// defaultOf returns the id, owner, address and creation time of owner's
// default account (Default true), loading it with load unless cached.
// Errors (no default account included) are not cached.
func (c *accountCache) defaultOf(ctx context.Context, owner string, load func(context.Context, string) (*engine.Account, error)) (*engine.Account, error) {
	c.mu.Lock()
	gen := c.gen
	if c.cacheDefaults {
		if id, ok := c.defaults.get(owner); ok {
			if a, ok := c.byID.get(id); ok {
				c.mu.Unlock()
				a.Default = true
				return &a, nil
			}
		}
	}
	c.mu.Unlock()
	loaded, err := load(ctx, owner)
	if err != nil {
		return nil, err
	}
	a := senderFields(loaded)
	c.mu.Lock()
	c.putLocked(a)
	if c.cacheDefaults && c.gen == gen {
		c.defaults.put(owner, a.ID)
	}
	c.mu.Unlock()
	a.Default = true
	return &a, nil
}

// forgetDefault drops owner's cached default account; call it after any
// attempt to change it (successful or not: an error may hide a commit).
func (c *accountCache) forgetDefault(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.defaults.delete(owner)
	c.gen++
}

// accountByIDMerged reads account id for the account cache through
// accountReads: the misses of concurrent requests (a cluster node meets
// every account another node created once) are one statement.
func (s *Server) accountByIDMerged(_ context.Context, id string) (*engine.Account, error) {
	a, found, err := readOne(s.accountReads, id)
	if err != nil {
		return nil, err // the caller names the account
	}
	if !found {
		return nil, engine.ErrNotFound
	}
	return a, nil
}

package http

import (
	"context"
	"sync"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// accountCacheSize bounds each map of the account cache; when one is full
// it starts over.
const accountCacheSize = 10_000

// accountCache keeps what the sender of a transaction needs of an account
// (id, owner, address), which never changes once the account exists, and
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
	byID     map[string]engine.Account
	byAddr   map[common.Address]engine.Account
	defaults map[string]string // owner → id of the default account
	// gen counts forgetDefault calls: a default read from the store is
	// cached only if none happened while it was read.
	gen uint64
}

// senderFields is the cached part of a: the fields that never change. The
// result's Default is false and its key and idempotency record are absent.
func senderFields(a *engine.Account) engine.Account {
	return engine.Account{ID: a.ID, Owner: a.Owner, Address: a.Address, Created: a.Created}
}

// putLocked caches a by id and by address.
func (c *accountCache) putLocked(a engine.Account) {
	if c.byID == nil || len(c.byID) >= accountCacheSize {
		c.byID = make(map[string]engine.Account)
	}
	if c.byAddr == nil || len(c.byAddr) >= accountCacheSize {
		c.byAddr = make(map[common.Address]engine.Account)
	}
	c.byID[a.ID] = a
	c.byAddr[a.Address] = a
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
	return c.forSend(func() (engine.Account, bool) { a, ok := c.byID[id]; return a, ok },
		func() (*engine.Account, error) { return load(ctx, id) })
}

// byAddressForSend is byIDForSend by address.
func (c *accountCache) byAddressForSend(ctx context.Context, addr common.Address, load func(context.Context, common.Address) (*engine.Account, error)) (*engine.Account, error) {
	return c.forSend(func() (engine.Account, bool) { a, ok := c.byAddr[addr]; return a, ok },
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
		if id, ok := c.defaults[owner]; ok {
			if a, ok := c.byID[id]; ok {
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
		if c.defaults == nil || len(c.defaults) >= accountCacheSize {
			c.defaults = make(map[string]string)
		}
		c.defaults[owner] = a.ID
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
	delete(c.defaults, owner)
	c.gen++
}

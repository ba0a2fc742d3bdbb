package http

import (
	"context"
	"sync"

	"github.com/ethereum/go-ethereum/accounts/abi"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
)

// contractCacheSize bounds the contracts and parsed ABIs kept in memory; when full the cache
// starts over (registered ABIs never change, so nothing is ever stale).
const contractCacheSize = 4096

// contractCache keeps registered contracts and their parsed ABIs: contracts
// never change once registered, and parsing a JSON ABI costs more than the
// rest of a transfer request together.
type contractCache struct {
	mu        sync.Mutex
	parsed    map[string]*abi.ABI
	contracts map[string]*engine.Contract
}

// contract returns contract id, loading it with load on first use. Errors
// (not found included) are not cached.
func (c *contractCache) contract(ctx context.Context, id string, load func(context.Context, string) (*engine.Contract, error)) (*engine.Contract, error) {
	c.mu.Lock()
	ct, ok := c.contracts[id]
	c.mu.Unlock()
	if ok {
		return ct, nil
	}
	ct, err := load(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.contracts == nil || len(c.contracts) >= contractCacheSize {
		c.contracts = make(map[string]*engine.Contract)
	}
	c.contracts[id] = ct
	c.mu.Unlock()
	return ct, nil
}

// of returns the parsed ABI of ct, parsing it on first use.
func (c *contractCache) of(ct *engine.Contract) (*abi.ABI, error) {
	c.mu.Lock()
	a, ok := c.parsed[ct.ID]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := abicodec.ParseABI(ct.ABI)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.parsed == nil || len(c.parsed) >= contractCacheSize {
		c.parsed = make(map[string]*abi.ABI)
	}
	c.parsed[ct.ID] = a
	c.mu.Unlock()
	return a, nil
}

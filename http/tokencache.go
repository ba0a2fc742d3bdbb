package http

import (
	"context"
	"sync"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// tokenStaticsSize bounds the tokens whose fixed fields are kept; past it
// the cache starts over (any address can be asked for through
// GET /tokens/{network}/{address}).
const tokenStaticsSize = 10_000

// tokenKey names a token: its network and address.
type tokenKey struct {
	network string
	address common.Address
}

// tokenStatics keeps the fields of ERC-20 tokens that cannot change (name,
// symbol, decimals) per (network, address), read once from the chain. The
// supply is never kept: every read asks the node for it. (A node that
// refuses JSON-RPC batches is the chain client's business: evm.Client
// then makes the calls one each.)
type tokenStatics struct {
	mu      sync.Mutex
	statics map[tokenKey]engine.TokenStatic
}

// readTokens reads the TokenInfo of each of addrs on nw (one round trip for
// all of them where the node batches; the fixed fields of tokens read
// before come from the cache). Per token: its info or its error, mapped by
// the caller; the error is the request's (a timeout before any answer).
func (s *Server) readTokens(ctx context.Context, nw *engine.Network, addrs []common.Address) ([]engine.TokenInfo, []error, error) {
	c := &s.tokenStatics
	reads := make([]engine.TokenRead, len(addrs))
	c.mu.Lock()
	for i, a := range addrs {
		reads[i].Address = a
		if st, ok := c.statics[tokenKey{nw.Name, a}]; ok {
			reads[i].Static = &st
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ChainTimeout)
	defer cancel()
	res, err := engine.ReadTokenInfos(ctx, nw.Chain, reads)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	for i, info := range res.Infos {
		if res.Errs[i] != nil || reads[i].Static != nil {
			continue
		}
		if c.statics == nil || len(c.statics) >= tokenStaticsSize {
			c.statics = make(map[tokenKey]engine.TokenStatic)
		}
		c.statics[tokenKey{nw.Name, addrs[i]}] = engine.TokenStatic{Name: info.Name, Symbol: info.Symbol, Decimals: info.Decimals}
	}
	c.mu.Unlock()
	return res.Infos, res.Errs, nil
}

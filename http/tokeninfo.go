package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// tokenInfoView is the body of GET /tokens/{network}/{address}.
type tokenInfoView struct {
	Network     string `json:"network"`
	Address     string `json:"address"`
	Name        string `json:"name"`
	Symbol      string `json:"symbol"`
	Decimals    int    `json:"decimals"`
	TotalSupply string `json:"totalSupply"`
}

// The routes of this file share their shape with /tokens/{contractId}/...:
// gin names the first parameter contractId; here it holds the network.

// pathNetworkToken reads the network and token address of the path and the
// token's ERC-20 information from the chain. An unknown network and an
// address with no ERC-20 token are 404 not_found; a malformed address is
// 400 on field address.
func (s *Server) pathNetworkToken(c *gin.Context) (*engine.Network, common.Address, engine.TokenInfo, error) {
	name := c.Param("contractId")
	nw, ok := s.networks[name]
	if !ok || nw.Chain == nil {
		return nil, common.Address{}, engine.TokenInfo{}, notFound("", "network %q is not configured", name)
	}
	addr, err := engine.ParseAddress("address", c.Param("address"))
	if err != nil {
		return nil, common.Address{}, engine.TokenInfo{}, err
	}
	infos, errs, err := s.readTokens(c.Request.Context(), nw, []common.Address{addr})
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return nil, common.Address{}, engine.TokenInfo{}, networkTokenFailure(nw, addr, err)
	}
	return nw, addr, infos[0], nil
}

// networkTokenFailure maps a failed read of an arbitrary token: no ERC-20
// there is not found, anything else is the node's unavailability.
func networkTokenFailure(nw *engine.Network, addr common.Address, err error) error {
	switch {
	case engine.IsNotToken(err) || engine.IsRevert(err):
		return fmt.Errorf("%w: %s", notFound("address", "no ERC-20 token at %s on network %s", addr.Hex(), nw.Name), nodeReason(err))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s", unavailable("network %s did not answer in time", nw.Name), nodeReason(err))
	default:
		return fmt.Errorf("%w: %s", unavailable("network %s is unavailable", nw.Name), nodeReason(err))
	}
}

// networkToken serves GET /tokens/{network}/{address}: any ERC-20 on a
// configured network, registered or not.
func (s *Server) networkToken(c *gin.Context) {
	nw, addr, info, err := s.pathNetworkToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, tokenInfoView{
		Network: nw.Name, Address: addr.Hex(), Name: info.Name, Symbol: info.Symbol,
		Decimals: int(info.Decimals), TotalSupply: info.TotalSupply.String(),
	})
}

// tokenSupply serves GET /tokens/{network}/{address}/supply: the total
// supply in whole tokens, as text/plain.
func (s *Server) tokenSupply(c *gin.Context) {
	_, _, info, err := s.pathNetworkToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	plainNumber(c, engine.FormatUnits(info.TotalSupply, info.Decimals))
}

// tokenCirculating serves GET /tokens/{network}/{address}/circulating: the
// supply minus the balances of every holder of one of the network's System
// NFTs, in whole tokens, as text/plain. The holders come from the service's
// transfer index of the System NFT contracts (as far as it has caught up);
// their balances are read in one JSON-RPC batch.
func (s *Server) tokenCirculating(c *gin.Context) {
	nw, addr, info, err := s.pathNetworkToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	holders, err := s.store.NFTOwners(c.Request.Context(), nw.Name, nw.SystemNFTs)
	if err != nil {
		s.fail(c, fmt.Errorf("system NFT holders on %s: %w", nw.Name, err))
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	circ, err := engine.CirculatingSupply(ctx, nw.Chain, addr, info.TotalSupply, holders)
	if err != nil {
		s.fail(c, networkTokenFailure(nw, addr, err))
		return
	}
	plainNumber(c, engine.FormatUnits(circ, info.Decimals))
}

// plainNumber answers 200 with one number as text/plain, the format that
// market-data aggregators poll.
func plainNumber(c *gin.Context, n string) {
	c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(n))
}

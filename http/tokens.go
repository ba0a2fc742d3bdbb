package http

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// listTokens serves GET /tokens?network=&name=&symbol=: the caller's token
// contracts with their parameters read from the chain. name matches the
// registered contract name and symbol the on-chain symbol, both exactly but
// case-insensitively; an unknown network matches nothing.
func (s *Server) listTokens(c *gin.Context) {
	u := currentUser(c)
	ctx := c.Request.Context()
	q, err := boundedQueries(c, "network", "name", "symbol")
	if err != nil {
		s.fail(c, err)
		return
	}
	name, symbol := q[1], q[2]
	contracts, err := s.store.ListContracts(ctx, engine.ContractFilter{
		Owner:   u.ID,
		Network: q[0],
		Types:   []string{engine.TypeERC20, engine.TypeERC20Security},
	})
	if err != nil {
		s.fail(c, fmt.Errorf("list tokens of %s: %w", u.ID, err))
		return
	}
	var kept []*engine.Contract
	for _, ct := range contracts {
		if ct.IsToken() && (name == "" || strings.EqualFold(ct.Name, name)) {
			kept = append(kept, ct)
		}
	}

	infos, errs := s.readTokenContracts(ctx, kept)
	out := make([]tokenView, 0, len(kept))
	for i, ct := range kept {
		if errs[i] != nil {
			s.fail(c, errs[i])
			return
		}
		if symbol != "" && !strings.EqualFold(infos[i].Symbol, symbol) {
			continue
		}
		out = append(out, viewToken(ct, infos[i]))
	}
	ok(c, out)
}

// getToken serves GET /tokens/{contractId}.
func (s *Server) getToken(c *gin.Context) {
	ct, err := s.pathToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	info, err := s.readToken(c.Request.Context(), ct)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, viewToken(ct, info))
}

// defaultBalance serves GET /tokens/{contractId}/balances/default: the token
// balance of the caller's default account.
func (s *Server) defaultBalance(c *gin.Context) {
	ct, err := s.pathToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	a, err := s.callerDefaultAccount(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeBalance(c, ct, a.Address)
}

// addressBalance serves GET /tokens/{contractId}/balances/{address}: the
// token balance of any address.
func (s *Server) addressBalance(c *gin.Context) {
	ct, err := s.pathToken(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	holder, err := engine.ParseAddress("address", c.Param("address"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeBalance(c, ct, holder)
}

func (s *Server) writeBalance(c *gin.Context, ct *engine.Contract, holder common.Address) {
	nw, err := s.network(ct.Network)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	bal, err := engine.BalanceOf(ctx, nw.Chain, ct.Address, holder)
	if err != nil {
		s.fail(c, chainFailure(ct, err))
		return
	}
	ok(c, bal.String())
}

// pathToken returns the caller's token contract named by the path parameter
// contractId; contracts of other users and contracts that are not tokens are
// not found.
func (s *Server) pathToken(c *gin.Context) (*engine.Contract, error) {
	id, err := pathID(c, "contractId", "token")
	if err != nil {
		return nil, err
	}
	u := currentUser(c)
	ct, err := s.contracts.contract(c.Request.Context(), id, s.store.ContractByID)
	if engine.IsNotFound(err) || (err == nil && (ct.Owner != u.ID || !ct.IsToken())) {
		return nil, notFound("", "token %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("token %s: %w", id, err)
	}
	return ct, nil
}

// readToken reads the on-chain parameters of a registered token.
func (s *Server) readToken(ctx context.Context, ct *engine.Contract) (engine.TokenInfo, error) {
	infos, errs := s.readTokenContracts(ctx, []*engine.Contract{ct})
	return infos[0], errs[0]
}

// readTokenContracts reads the on-chain parameters of registered tokens:
// per network one readTokens (the networks at once). Each token gets its
// info or its error (chainFailure).
func (s *Server) readTokenContracts(ctx context.Context, cts []*engine.Contract) ([]engine.TokenInfo, []error) {
	infos := make([]engine.TokenInfo, len(cts))
	errs := make([]error, len(cts))
	byNetwork := map[string][]int{}
	for i, ct := range cts {
		byNetwork[ct.Network] = append(byNetwork[ct.Network], i)
	}
	var wg sync.WaitGroup
	for name, idx := range byNetwork {
		nw, err := s.network(name)
		if err != nil {
			for _, i := range idx {
				errs[i] = err
			}
			continue
		}
		wg.Go(func() {
			addrs := make([]common.Address, len(idx))
			for k, i := range idx {
				addrs[k] = cts[i].Address
			}
			got, gotErrs, err := s.readTokens(ctx, nw, addrs)
			for k, i := range idx {
				switch {
				case err != nil:
					errs[i] = chainFailure(cts[i], err)
				case gotErrs[k] != nil:
					errs[i] = chainFailure(cts[i], gotErrs[k])
				default:
					infos[i] = got[k]
				}
			}
		})
	}
	wg.Wait()
	return infos, errs
}

// chainFailure turns a failed read of a registered token into 503
// unavailable. The caller sees which network failed; the log also gets the
// node's reason (without the node URL, which may carry credentials).
func chainFailure(ct *engine.Contract, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s", unavailable("network %s did not answer in time", ct.Network), nodeReason(err))
	case engine.IsNotToken(err):
		return fmt.Errorf("%w: %s", unavailable("token %s on network %s does not answer as an ERC-20 contract", ct.Address.Hex(), ct.Network), nodeReason(err))
	default:
		return fmt.Errorf("%w: %s", unavailable("network %s is unavailable", ct.Network), nodeReason(err))
	}
}

// nodeReason is the text of a node error without the URL of the node.
func nodeReason(err error) string { return unreachableReason("node", err) }

// unreachableReason is the text of an error of what ("node", "database")
// without its address.
func unreachableReason(what string, err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) {
		// "dial tcp host:port: connect: connection refused" names the host:
		// keep what happened, not where.
		return what + " unreachable: " + oe.Op + ": " + oe.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

package http

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// setDefaultRequest is the body of PUT /accounts/default.
type setDefaultRequest struct {
	Account *string `json:"account"`
}

// setDefaultAccount serves PUT /accounts/default: one of the caller's
// accounts becomes the default; another user's account is not found.
func (s *Server) setDefaultAccount(c *gin.Context) {
	var req setDefaultRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	if req.Account == nil {
		s.fail(c, engine.Invalid("account", "account is required"))
		return
	}
	u := currentUser(c)
	parsed, err := uuid.Parse(*req.Account)
	if err != nil || len(*req.Account) != 36 {
		s.fail(c, engine.Invalid("account", "account must be an account id (UUID)"))
		return
	}
	a, err := s.ownAccountByID(c.Request.Context(), u, parsed.String(), "account")
	if err != nil {
		s.fail(c, err)
		return
	}
	err = s.store.SetDefaultAccount(c.Request.Context(), u.ID, a.ID)
	s.accounts.forgetDefault(u.ID)
	if err != nil {
		s.fail(c, fmt.Errorf("set default account of %s: %w", u.ID, err))
		return
	}
	a.Default = true
	ok(c, viewAccount(a))
}

// accountBalance serves GET /accounts/{id}/balance?network=: the ETH balance
// in wei of one of the caller's accounts.
func (s *Server) accountBalance(c *gin.Context) {
	a, err := s.pathAccount(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeETHBalance(c, a)
}

// defaultAccountBalance serves GET /accounts/default/balance?network=.
func (s *Server) defaultAccountBalance(c *gin.Context) {
	a, err := s.callerDefaultAccount(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.writeETHBalance(c, a)
}

func (s *Server) writeETHBalance(c *gin.Context, a *engine.Account) {
	nw, err := s.queryNetwork(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), s.cfg.ChainTimeout)
	defer cancel()
	bal, err := chainOf(nw).BalanceAt(ctx, a.Address, nil)
	if err != nil {
		s.fail(c, fmt.Errorf("%w: %s", unavailable("network %s is unavailable", nw.Name), nodeReason(err)))
		return
	}
	ok(c, bal.String())
}

// queryNetwork returns the network of the query parameter network; it may
// be omitted when exactly one network is configured.
func (s *Server) queryNetwork(c *gin.Context) (*engine.Network, error) {
	name := c.Query("network")
	if name == "" {
		if len(s.networks) == 1 {
			for _, nw := range s.networks {
				return nw, nil
			}
		}
		return nil, engine.Invalid("network", "network is required: one of %s", strings.Join(s.networkNames(), ", "))
	}
	nw, ok := s.networks[name]
	if !ok || nw.Chain == nil {
		return nil, engine.Invalid("network", "unknown network %q: one of %s", name, strings.Join(s.networkNames(), ", "))
	}
	return nw, nil
}

func (s *Server) networkNames() []string {
	names := make([]string, 0, len(s.networks))
	for n := range s.networks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

package http

import (
	"context"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// createUserRequest is the body of POST /users. Every flag is optional and
// false when absent; the body itself may be absent.
type createUserRequest struct {
	// Auth asks for an API token for the new user (returned once).
	Auth bool `json:"auth"`
	// Account asks for a new default account for the new user.
	Account bool `json:"account"`
	// Ownerless makes the new user owned by nobody instead of the caller,
	// the root of its own budget; only an operator may ask it.
	Ownerless bool `json:"ownerless"`
}

// createUser serves POST /users. The user, its token hash and its account
// are stored in one database transaction: all or nothing.
func (s *Server) createUser(c *gin.Context) {
	var req createUserRequest
	if err := s.decodeBody(c, &req, true); err != nil {
		s.fail(c, err)
		return
	}
	caller := currentUser(c)
	if req.Ownerless && !caller.Operator {
		s.fail(c, engine.Errorf(engine.CodeForbidden, "", "only an operator may create ownerless users; "+
			"omit ownerless to create a user owned by you (it shares your limits and quotas)"))
		return
	}
	spec := engine.NewUserSpec{Token: req.Auth, Account: req.Account}
	if !req.Ownerless {
		spec.Owner = caller.ID
	}
	n, err := engine.MakeUser(s.sealer, spec, s.clock.Now())
	if err != nil {
		s.fail(c, fmt.Errorf("create user: %w", err))
		return
	}
	u, token, tokenHash, acct := n.User, n.Token, n.TokenHash, n.Account
	u.Root = rootOf(caller, u.ID, req.Ownerless)
	u.Quota = s.quotaOf(caller, u.Root)
	view := userView{ID: u.ID, Created: engine.FormatTime(u.Created), Token: token}
	if u.Owner != "" {
		view.Owner = &u.Owner
	}
	var accts []*engine.Account
	if acct != nil {
		accts = []*engine.Account{acct}
	}
	done, err := s.storeWithFaucet(c, accts, s.cfg.Quotas.FaucetNetworks, u.Quota, &u.Idempotency, func(faucet [][]faucetView) any {
		if acct != nil {
			av := viewAccount(acct)
			av.Faucet = firstFaucet(faucet)
			view.Account = &av
		}
		return view
	}, func(ctx context.Context) error { return s.store.CreateUser(ctx, u, tokenHash, acct) })
	if done {
		return
	}
	if acct != nil {
		s.accounts.forgetDefault(u.ID)
	}
	if err != nil {
		s.fail(c, fmt.Errorf("create user: %w", err))
		return
	}
	if acct != nil {
		s.accounts.remember(acct)
		s.engine.AccountCreated(context.WithoutCancel(c.Request.Context()), acct)
	}
	created(c, view)
}

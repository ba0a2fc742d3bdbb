package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
)

// listAccounts serves GET /accounts: the caller's accounts, oldest first.
func (s *Server) listAccounts(c *gin.Context) {
	u := currentUser(c)
	accts, err := s.store.ListAccounts(c.Request.Context(), u.ID)
	if err != nil {
		s.fail(c, fmt.Errorf("list accounts of %s: %w", u.ID, err))
		return
	}
	out := make([]accountView, 0, len(accts))
	for _, a := range accts {
		out = append(out, viewAccount(a))
	}
	ok(c, out)
}

// createAccountRequest is the body of POST /accounts. The body may be
// absent or {}; any other field is refused so that typos do not pass.
type createAccountRequest struct {
	// Custody says where the new account's key lives (absent: local).
	Custody *custodyRequest `json:"custody"`
}

// custodyRequest is where a new account's key lives: type "local" (the
// default: generated and sealed by the service) or "kms" (a new AWS KMS
// key, or the existing key KeyID: key id, ARN or alias).
type custodyRequest struct {
	Type  string `json:"type"`
	KeyID string `json:"keyId"`
}

// maxKMSKeyID bounds custody.keyId (an ARN with an alias is far shorter).
const maxKMSKeyID = 2048

// createAccount serves POST /accounts: a new account, not the default.
func (s *Server) createAccount(c *gin.Context) {
	var req createAccountRequest
	if err := s.decodeBody(c, &req, true); err != nil {
		s.fail(c, err)
		return
	}
	u := currentUser(c)
	a, err := s.newCustodyAccount(c.Request.Context(), u.ID, req.Custody)
	if err != nil {
		s.fail(c, err)
		return
	}
	a.Quota = s.quotaOf(u, rootOf(u, u.ID, false))
	var view accountView
	done, err := s.storeWithFaucet(c, []*engine.Account{a}, s.cfg.Quotas.FaucetNetworks, a.Quota, &a.Idempotency, func(faucet [][]faucetView) any {
		view = viewAccount(a)
		view.Faucet = firstFaucet(faucet)
		return view
	}, func(ctx context.Context) error { return s.store.CreateAccount(ctx, a) })
	if done {
		return
	}
	if a.Default {
		s.accounts.forgetDefault(u.ID)
	}
	if errors.Is(err, engine.ErrConflict) && a.KMSKeyID != "" {
		// Said so, still ErrConflict (a concurrent request with the same
		// Idempotency-Key is replayed by fail).
		err = fmt.Errorf("%w: %w", engine.Errorf(engine.CodeConflict, "custody.keyId", "KMS key %s is already attached to an account", a.KMSKeyID), err)
	}
	if err != nil {
		s.fail(c, fmt.Errorf("create account for %s: %w", u.ID, err))
		return
	}
	s.accounts.remember(a)
	s.engine.AccountCreated(context.WithoutCancel(c.Request.Context()), a)
	created(c, view)
}

// storeWithFaucet stores a creation whose 201 shows the faucet's answer
// for accts on nets (each account's views, in order): it predicts their
// grants within quota (faucetGrants), makes the response with view, keeps
// it for the Idempotency-Key (into idem) and runs store. A grant predicted
// within the faucet budget that a concurrent creation took meanwhile fails
// the transaction (engine.ErrFaucetBudget): asked once more with the
// budget read again, the faucet then refuses. done is true when the
// response was written (a replay, or a failure before store); otherwise
// err is store's.
func (s *Server) storeWithFaucet(c *gin.Context, accts []*engine.Account, nets []string, quota *engine.Quota, idem **engine.IdempotencyRecord,
	view func(faucet [][]faucetView) any, store func(context.Context) error) (done bool, err error) {
	for attempt := 1; ; attempt++ {
		grants, faucet, err := s.faucetGrants(c.Request.Context(), quota, len(accts), nets)
		if err != nil {
			s.fail(c, fmt.Errorf("faucet grants: %w", err))
			return true, err
		}
		for i, a := range accts {
			a.Faucet = grants[i]
		}
		if !s.idempotency(c, http.StatusCreated, view(faucet), idem) {
			return true, nil
		}
		err = store(c.Request.Context())
		if !errors.Is(err, engine.ErrFaucetBudget) || attempt == 2 {
			return false, err
		}
	}
}

// firstFaucet returns the faucet views of the one account of a creation.
func firstFaucet(faucet [][]faucetView) []faucetView {
	if len(faucet) == 0 {
		return nil
	}
	return faucet[0]
}

// newCustodyAccount returns a new account of owner (not yet stored, not
// the default) whose key lives where custody says: generated and sealed
// here (absent, "local"), a new KMS key, or the existing KMS key named by
// custody.keyId. Bad input and a KMS that refuses the key are
// invalid_argument, a KMS that does not answer unavailable.
func (s *Server) newCustodyAccount(ctx context.Context, owner string, custody *custodyRequest) (*engine.Account, error) {
	if custody == nil || custody.Type == custodyLocal {
		if custody != nil && custody.KeyID != "" {
			return nil, engine.Invalid("custody.keyId", "applies to custody type kms only")
		}
		return s.newAccount(owner, false)
	}
	if custody.Type != custodyKMS {
		return nil, engine.Invalid("custody.type", "must be local or kms, got %q", custody.Type)
	}
	if s.kms == nil {
		return nil, engine.Invalid("custody.type", "KMS custody is not configured on this service (kms.enabled in its configuration, see docs/kms.md)")
	}
	if len(custody.KeyID) > maxKMSKeyID {
		return nil, engine.Invalid("custody.keyId", "longer than %d characters", maxKMSKeyID)
	}
	var a *engine.Account
	var err error
	if custody.KeyID == "" {
		a, err = engine.NewKMSAccount(ctx, s.kms, "txengine account of user "+owner)
	} else {
		a, err = engine.AttachKMSKey(ctx, s.kms, custody.KeyID)
	}
	if err != nil {
		return nil, fmt.Errorf("KMS account: %w", err)
	}
	if _, err := s.store.AccountByAddress(ctx, a.Address); err == nil {
		return nil, engine.Errorf(engine.CodeConflict, "custody.keyId", "KMS key %s is already attached to an account", a.KMSKeyID)
	} else if !engine.IsNotFound(err) {
		return nil, fmt.Errorf("KMS account %s: %w", a.Address.Hex(), err)
	}
	a.ID, a.Owner, a.Created = engine.NewID(), owner, s.clock.Now()
	return a, nil
}

// newAccount generates a key pair and returns the account (not yet stored).
func (s *Server) newAccount(owner string, isDefault bool) (*engine.Account, error) {
	a, err := engine.NewLocalAccount(s.sealer)
	if err != nil {
		return nil, fmt.Errorf("new account: %w", err)
	}
	a.ID = engine.NewID()
	a.Owner = owner
	a.Default = isDefault
	a.Created = s.clock.Now()
	return a, nil
}

// defaultAccount serves GET /accounts/default.
func (s *Server) defaultAccount(c *gin.Context) {
	a, err := s.callerDefaultAccount(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, viewAccount(a))
}

// callerDefaultAccount returns the caller's default account, or not_found:
// its id, owner, address and creation time (accountCache.defaultOf), which
// is all that its views and balances use.
func (s *Server) callerDefaultAccount(c *gin.Context) (*engine.Account, error) {
	id := currentUser(c).ID
	a, err := s.accounts.defaultOf(c.Request.Context(), id, s.store.DefaultAccount)
	if engine.IsNotFound(err) {
		return nil, notFound("", "the current user has no default account")
	}
	if err != nil {
		return nil, fmt.Errorf("default account of %s: %w", id, err)
	}
	return a, nil
}

// getAccount serves GET /accounts/{id}, with the account's nonce health
// on every network. Accounts of other users are reported as not found.
func (s *Server) getAccount(c *gin.Context) {
	a, err := s.pathAccount(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	view := viewAccount(a)
	if view.Nonces, err = s.nonceViews(c.Request.Context(), a); err != nil {
		s.fail(c, err)
		return
	}
	ok(c, view)
}

// pathAccount returns the caller's account named by the path's {id}.
func (s *Server) pathAccount(c *gin.Context) (*engine.Account, error) {
	id, err := pathID(c, "id", "account")
	if err != nil {
		return nil, err
	}
	return s.ownAccountByID(c.Request.Context(), currentUser(c), id, "")
}

// ownAccountByID returns the account id of u, or not_found on field.
func (s *Server) ownAccountByID(ctx context.Context, u *engine.User, id, field string) (*engine.Account, error) {
	a, err := s.store.AccountByID(ctx, id)
	if engine.IsNotFound(err) || (err == nil && a.Owner != u.ID) {
		return nil, notFound(field, "account %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", id, err)
	}
	return a, nil
}

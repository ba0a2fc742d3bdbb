package http

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// maxRateLimit bounds each per-user limit an operator may set.
const maxRateLimit = 1_000_000_000

// meView is the JSON form of the current user (GET /users/me). Owner is
// null for ownerless users; limits is present when an operator set them.
type meView struct {
	ID             string      `json:"id"`
	Owner          *string     `json:"owner"`
	Created        string      `json:"created"`
	Operator       bool        `json:"operator"`
	CallbackSecret string      `json:"callbackSecret"`
	Limits         *limitsView `json:"limits,omitempty"`
}

// limitsView is the JSON form of per-user rate limits.
type limitsView struct {
	PerSecond int `json:"perSecond"`
	PerHour   int `json:"perHour"`
}

// tokenCreatedView is the body of POST /users/{id}/tokens.
type tokenCreatedView struct {
	Token string `json:"token"`
}

// getMe serves GET /users/me.
func (s *Server) getMe(c *gin.Context) {
	u, err := s.store.UserByID(c.Request.Context(), currentUser(c).ID)
	if err != nil {
		s.fail(c, fmt.Errorf("user %s: %w", currentUser(c).ID, err))
		return
	}
	secret, err := s.sealer.OpenCallbackSecret(u.ID, u.CallbackSecret)
	if err != nil {
		s.fail(c, fmt.Errorf("user %s: %w", u.ID, err))
		return
	}
	v := meView{ID: u.ID, Created: engine.FormatTime(u.Created), Operator: u.Operator, CallbackSecret: secret}
	if u.Owner != "" {
		v.Owner = &u.Owner
	}
	if u.Limits != nil {
		v.Limits = &limitsView{PerSecond: u.Limits.PerSecond, PerHour: u.Limits.PerHour}
	}
	ok(c, v)
}

// managedUser returns the user named by the path parameter id when it is
// the caller or a user the caller owns; any other user is not found.
func (s *Server) managedUser(c *gin.Context) (*engine.User, error) {
	id, err := pathID(c, "id", "user")
	if err != nil {
		return nil, err
	}
	caller := currentUser(c)
	if id == caller.ID {
		return caller, nil
	}
	u, err := s.store.UserByID(c.Request.Context(), id)
	if engine.IsNotFound(err) || (err == nil && u.Owner != caller.ID) {
		return nil, notFound("", "user %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// createUserToken serves POST /users/{id}/tokens: a new API token for the
// caller or a user the caller owns, shown once. The body is optional ({}).
func (s *Server) createUserToken(c *gin.Context) {
	u, err := s.managedUser(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var req struct{}
	if err := s.decodeBody(c, &req, true); err != nil {
		s.fail(c, err)
		return
	}
	token, hash, err := keystore.NewToken()
	if err != nil {
		s.fail(c, fmt.Errorf("new token for %s: %w", u.ID, err))
		return
	}
	view := tokenCreatedView{Token: token}
	var idem *engine.IdempotencyRecord
	if !s.idempotency(c, http.StatusCreated, view, &idem) {
		return
	}
	if err := s.store.AddToken(c.Request.Context(), u.ID, hash, idem); err != nil {
		s.fail(c, fmt.Errorf("add token for %s: %w", u.ID, err))
		return
	}
	created(c, view)
}

// limitsRequest is the body of PUT /users/{id}/limits.
type limitsRequest struct {
	PerSecond *int64 `json:"perSecond"`
	PerHour   *int64 `json:"perHour"`
}

// setUserLimits serves PUT /users/{id}/limits: operators only (403
// otherwise); an operator may set the limits of any user.
func (s *Server) setUserLimits(c *gin.Context) {
	if !currentUser(c).Operator {
		s.fail(c, engine.Errorf(engine.CodeForbidden, "", "only an operator may set rate limits"))
		return
	}
	id, err := pathID(c, "id", "user")
	if err != nil {
		s.fail(c, err)
		return
	}
	var req limitsRequest
	if err := s.decodeBody(c, &req, false); err != nil {
		s.fail(c, err)
		return
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"perSecond", req.PerSecond}, {"perHour", req.PerHour}} {
		if f.v == nil {
			s.fail(c, engine.Invalid(f.name, "%s is required", f.name))
			return
		}
		if *f.v < 1 || *f.v > maxRateLimit {
			s.fail(c, engine.Invalid(f.name, "%s must be an integer from 1 to %d", f.name, maxRateLimit))
			return
		}
	}
	limits := &engine.RateLimits{PerSecond: int(*req.PerSecond), PerHour: int(*req.PerHour)}
	err = s.store.SetUserLimits(c.Request.Context(), id, limits)
	s.users.forget(id)
	if engine.IsNotFound(err) {
		s.fail(c, notFound("", "user %s not found", id))
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("set limits of %s: %w", id, err))
		return
	}
	ok(c, limitsView{PerSecond: limits.PerSecond, PerHour: limits.PerHour})
}

package http

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// TokenRevocations tells the other nodes of a cluster that an API token was
// revoked, so that none of them accepts it any more. actors.System
// implements it; nil (single-node mode) tells nobody.
type TokenRevocations interface {
	// TokenRevoked asks every other member of the cluster to drop hash
	// from its cache of authenticated tokens, and returns nil once each
	// acknowledged, or an error naming those that did not before ctx
	// ended.
	TokenRevoked(ctx context.Context, hash []byte) error
	// MembershipSettled reports whether every member that TokenRevoked
	// may need to reach knows this node by now. While it does not (the
	// node joined recently, or the membership changed: perhaps a
	// partition), this node caches no token, so a revocation it is not
	// told of still reaches it through the database.
	MembershipSettled() bool
}

// currentTokenID is the tokenId of DELETE /users/{id}/tokens/{tokenId} that
// names the token of the request itself.
const currentTokenID = "current"

// apiTokenView is the JSON form of an API token: never the token or its
// hash. Current says that it is the token of this request; revoked is set
// in the answer of a revocation.
type apiTokenView struct {
	ID      string  `json:"id"`
	Created string  `json:"created"`
	Current bool    `json:"current"`
	Revoked *string `json:"revoked,omitempty"`
}

func (s *Server) viewToken(c *gin.Context, t engine.APIToken) apiTokenView {
	v := apiTokenView{ID: t.ID, Created: engine.FormatTime(t.Created), Current: bytes.Equal(t.Hash, requestTokenHash(c))}
	if !t.Revoked.IsZero() {
		r := engine.FormatTime(t.Revoked)
		v.Revoked = &r
	}
	return v
}

// requestTokenHash is the hash of the request's bearer token.
func requestTokenHash(c *gin.Context) []byte {
	h, _ := c.Get(keyTokenHash)
	b, _ := h.([]byte)
	return b
}

// tokenHolder returns the user named by the path parameter id whose tokens
// the caller may list and revoke: the caller, a user it owns (as for POST
// /users/{id}/tokens), or, for an operator, any user. Any other user is
// not found.
func (s *Server) tokenHolder(c *gin.Context) (*engine.User, error) {
	caller := currentUser(c)
	if !caller.Operator {
		return s.managedUser(c)
	}
	id, err := pathID(c, "id", "user")
	if err != nil {
		return nil, err
	}
	if id == caller.ID {
		return caller, nil
	}
	u, err := s.store.UserByID(c.Request.Context(), id)
	if engine.IsNotFound(err) {
		return nil, notFound("", "user %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", id, err)
	}
	return u, nil
}

// listUserTokens serves GET /users/{id}/tokens: the active tokens of the
// user, oldest first, all of them (a user holds few; no pagination).
func (s *Server) listUserTokens(c *gin.Context) {
	u, err := s.tokenHolder(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	toks, err := s.store.ListTokens(c.Request.Context(), u.ID)
	if err != nil {
		s.fail(c, fmt.Errorf("list tokens of %s: %w", u.ID, err))
		return
	}
	views := make([]apiTokenView, len(toks))
	for i, t := range toks {
		views[i] = s.viewToken(c, t)
	}
	ok(c, views)
}

// revokeUserToken serves DELETE /users/{id}/tokens/{tokenId}, tokenId being
// a token id or "current" (the token of this request, which must then be
// user id's). The answer is the revoked token; current: true says the
// caller just revoked the token it used. It answers only once no node
// accepts the token any more (forgetEverywhere).
func (s *Server) revokeUserToken(c *gin.Context) {
	u, err := s.tokenHolder(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	tokenID, err := s.pathTokenID(c, u)
	if err != nil {
		s.fail(c, err)
		return
	}
	tok, err := s.store.RevokeToken(c.Request.Context(), u.ID, tokenID, s.clock.Now())
	if engine.IsNotFound(err) {
		s.fail(c, notFound("", "token %s of user %s not found", tokenID, u.ID))
		return
	}
	if err != nil {
		s.fail(c, fmt.Errorf("revoke token %s of %s: %w", tokenID, u.ID, err))
		return
	}
	committed := time.Now()
	s.users.drop(s.clock.Now(), tok.Hash)
	s.forgetEverywhere(c, tok.Hash, committed)
	ok(c, s.viewToken(c, *tok))
}

// pathTokenID returns the token id named by the path parameter tokenId:
// a UUID (400 invalid_argument otherwise), or the id of the request's token
// for "current" (not found when u is not the caller).
func (s *Server) pathTokenID(c *gin.Context, u *engine.User) (string, error) {
	raw := c.Param("tokenId")
	if raw != currentTokenID {
		id, err := uuid.Parse(raw)
		if len(raw) != 36 || err != nil {
			return "", engine.Invalid("tokenId", "tokenId must be a token id (a UUID, as GET /users/{id}/tokens lists them) or %q", currentTokenID)
		}
		return id.String(), nil
	}
	if u.ID != currentUser(c).ID {
		return "", notFound("", "the token of this request is not user %s's", u.ID)
	}
	toks, err := s.store.ListTokens(c.Request.Context(), u.ID)
	if err != nil {
		return "", fmt.Errorf("tokens of %s: %w", u.ID, err)
	}
	for _, t := range toks {
		if bytes.Equal(t.Hash, requestTokenHash(c)) {
			return t.ID, nil
		}
	}
	// Revoked by another request since this one was authenticated.
	return "", notFound("", "the token of this request is already revoked")
}

// forgetEverywhere makes sure that no node of a cluster accepts the token
// of hash, revoked when committed, once the revocation answers. This node
// dropped it already (userCache.drop); every other node caches a token's
// user for at most userCacheTTL from before the read that loaded it, so an
// entry read before the revocation committed is gone by committed +
// userCacheTTL on every node, whether it hears of the revocation or not.
//
// So the revoking node asks each member to drop the hash (TokenRevoked, a
// round trip per member, in parallel) and answers as soon as all have
// acknowledged, usually within milliseconds; a member that does not answer
// (slow, partitioned, stopping) only delays the answer until committed +
// userCacheTTL, when its entry has expired anyway, and is logged. A node
// the revoking node may not list (it joined recently, or its membership
// changed) is not asked, so it caches no token meanwhile
// (TokenRevocations.MembershipSettled). The request path keeps its cost (one users-table read per token per TTL, no
// per-request check of a revocation list), and a dead member cannot block
// revocations. PostgreSQL LISTEN/NOTIFY was not chosen: delivery is
// asynchronous with no acknowledgement, so the revoking node could not know
// when every node has dropped the hash, and it would add a listening
// connection per node.
func (s *Server) forgetEverywhere(c *gin.Context, hash []byte, committed time.Time) {
	if s.revocations == nil {
		return
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(c.Request.Context()), committed.Add(userCacheTTL))
	defer cancel()
	if err := s.revocations.TokenRevoked(ctx, hash); err != nil {
		s.log.WarnContext(ctx, "token revoked: not every cluster member acknowledged; answering once the token cache's lifetime has passed",
			"err", err, "wait", time.Until(committed.Add(userCacheTTL)).Round(time.Millisecond))
		<-ctx.Done()
	}
}

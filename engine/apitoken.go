package engine

import (
	"context"
	"time"
)

// APIToken is one API token of a user as stored: its id, never the token
// itself. Hash is the stored hash (keystore.HashToken); it stays inside the service
// (the HTTP layer compares it with the request's to say which token is the
// current one) and is never shown.
type APIToken struct {
	ID      string
	UserID  string
	Hash    []byte
	Created time.Time
	// Revoked is when the token was revoked; zero while it is active.
	Revoked time.Time
}

// ErrLastOperatorToken is returned (wrapped) by RevokeToken when the token
// is the last active token held by any operator user: revoking it would
// leave nobody able to administer the service through the API.
var ErrLastOperatorToken = &Error{Code: CodeConflict, Message: "this is the last active token of any operator: " +
	"revoking it would leave nobody able to administer the service; create another operator token first " +
	"(POST /users/{id}/tokens, or `txengine users create --admin`), then revoke this one"}

// TokenStore lists and revokes the API tokens of users.
type TokenStore interface {
	// ListTokens returns the active (not revoked) tokens of user userID,
	// oldest first. A user without tokens, or that does not exist, has
	// none.
	ListTokens(ctx context.Context, userID string) ([]APIToken, error)
	// RevokeToken revokes the active token tokenID of user userID at at
	// and returns it (Revoked set). A token that does not exist, is
	// another user's or is already revoked is ErrNotFound; the last active
	// token of all operators is ErrLastOperatorToken, and nothing changes.
	RevokeToken(ctx context.Context, userID, tokenID string, at time.Time) (*APIToken, error)
}

package engine

import (
	"fmt"
	"time"

	"github.com/txengine/txengine/engine/keystore"
)

// NewUserSpec says what a new user gets besides its id, sealed callback
// secret and creation time.
type NewUserSpec struct {
	// Owner is the creating user's id; empty for an ownerless user.
	Owner    string
	Operator bool
	// Token asks for an API token (returned once, stored as its hash).
	Token bool
	// Account asks for a new default account.
	Account bool
}

// NewUser is a user ready for Store.CreateUser: the user, its token (and
// the token's hash) when asked, and its default account when asked.
type NewUser struct {
	User      *User
	Token     string
	TokenHash []byte
	Account   *Account
}

// MakeUser makes the user spec describes, created at now: a new id, a
// callback secret sealed under s, and the token and default account asked
// for. Nothing is stored. Every way of creating a user (the API, the
// operator's bootstrap, `txengine users create`) goes through it.
func MakeUser(s *keystore.KeySealer, spec NewUserSpec, now time.Time) (*NewUser, error) {
	id := NewID()
	secret, err := s.NewCallbackSecret(id)
	if err != nil {
		return nil, fmt.Errorf("new user: callback secret: %w", err)
	}
	n := &NewUser{User: &User{ID: id, Owner: spec.Owner, Operator: spec.Operator, CallbackSecret: secret, Created: now}}
	if spec.Token {
		if n.Token, n.TokenHash, err = keystore.NewToken(); err != nil {
			return nil, fmt.Errorf("new user: %w", err)
		}
	}
	if spec.Account {
		if n.Account, err = NewLocalAccount(s); err != nil {
			return nil, fmt.Errorf("new user: %w", err)
		}
		n.Account.ID, n.Account.Owner, n.Account.Default, n.Account.Created = NewID(), id, true, now
	}
	return n, nil
}

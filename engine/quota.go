package engine

import "time"

// Quota is what one creation (a user, an account) may add to the budget of
// its root user (User.Root), checked by the store in the transaction that
// creates it: under PostgreSQL with the root's row locked, so concurrent
// creations cannot pass a cap together. Zero fields are unlimited.
type Quota struct {
	// Root is the budget root the creation counts on.
	Root string
	// MaxUsers caps the users whose Root is Root (the root included).
	MaxUsers int
	// MaxAccounts caps the accounts owned by users whose Root is Root.
	MaxAccounts int
	// FaucetBudget caps the faucet grants of Root per network since
	// FaucetSince (the start of the sliding period).
	FaucetBudget int
	FaucetSince  time.Time
}

// FaucetGrant is one network's faucet funding of a new account. The caller
// of CreateAccount (or CreateUser) sets Network and Granted (its
// prediction, from FaucetGrantsSince); the store records each granted one
// once per (account, network), with its owner's root and the account's
// creation time, and fails with ErrFaucetBudget when a grant would exceed
// Quota.FaucetBudget (another creation of the root took the last one
// meanwhile): the caller then asks again.
type FaucetGrant struct {
	Network string
	Granted bool
}

// ErrFaucetBudget is returned by CreateAccount and CreateUser when a
// faucet grant predicted as within the budget is not: nothing is stored.
// The HTTP layer asks again once; a second miss reaches the caller as this
// conflict.
var ErrFaucetBudget = &Error{Code: CodeConflict, Message: "the faucet budget of this owner changed during the request; retry"}

// CapError is the refusal of a creation over a cap of Quota: forbidden,
// naming the cap and its value.
func CapError(what string, limit int) *Error {
	return Errorf(CodeForbidden, "", "quota exceeded: at most %d %s per owner (the users created by one user, "+
		"directly or not, share its quota); an operator can raise the cap in the configuration", limit, what)
}

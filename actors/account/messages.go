// Package account holds the account actor: one per (account, network), it
// owns the account's nonce and serialises acceptance and submission of its
// transactions. The logic lives in engine.Sender; this is its actor shell.
package account

import "github.com/txengine/txengine/engine"

// Submit asks the actor to accept a transaction. The actor replies with
// *Accepted once the transaction's row is committed (group commit: one
// database transaction for every Submit waiting in the mailbox).
//
// Claim (nil: none) is the waiter's stake in the commit: the commit queue
// takes it when the transaction goes into a database transaction, and the
// waiter abandons it when its deadline passes first (the transaction is then
// never written). The actor settles it with the same outcome it answers.
type Submit struct {
	Tx    *engine.Transaction
	Claim *engine.Claim
}

// Accepted answers Submit. Err is nil when the transaction is stored.
type Accepted struct {
	Tx  *engine.Transaction
	Err error
}

// Wake tells the actor that its in-flight window may have room (a
// transaction of the account was mined) or that work is waiting for it.
type Wake struct {
	// Resync asks the actor to reconcile its nonce and broadcast its
	// in-flight transactions again: blocks that held some of them left the
	// chain.
	Resync bool
	// Accepted says that the wake only announces transactions just
	// accepted (a group commit). A submitter whose window was full after
	// its last pump skips it: only a transaction that leaves the window
	// (mined, failed, re-synced) makes room, and that wakes it without
	// Accepted (the watcher, a retry, the periodic tick).
	Accepted bool
	// Check asks the submitter to look at its in-flight transactions now,
	// whatever the head (an operator abandoned one: its nonce is filled).
	Check bool
}

// tick is the actor's periodic check of its in-flight transactions (a
// transaction neither pending nor mined is broadcast again). It does not
// count as activity, so an idle actor still passivates.
type tick struct{}

// NotInfluenceReceiveTimeout implements actor.NotInfluenceReceiveTimeout.
func (tick) NotInfluenceReceiveTimeout() {}

// flush commits the Submits buffered so far.
type flush struct{}

// pump submits ready transactions while the in-flight window has room.
type pump struct{}

// passivate is the actor's own request to stop after its registration was
// removed; every message sent before the removal precedes it in the mailbox.
type passivate struct{}

// fenced is a submitter's report to its grain that another activation took
// the account's lease: the grain stops.
type fenced struct{}

package engine

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Claim decides, between a request that waits for its transaction's group
// commit and the committer, who gets the last word: an error response
// must mean that nothing was stored (docs/api-decisions.md#errors), so a waiter whose time is up
// may answer "not accepted" only if its transaction will never be written.
//
// A Claim starts queued. The committer takes it (Take) when it puts the
// transaction into a database transaction; the waiter abandons it
// (Abandon) when its deadline passes first. Exactly one of the two wins:
// an abandoned transaction is dropped before its commit, and a waiter that
// finds its claim taken waits for the commit's outcome (Done, Err) instead
// of answering. The owner of the outcome (the account actor) settles it
// once (Settle). A nil *Claim is always taken: its caller waits whatever
// happens.
type Claim struct {
	state atomic.Int32
	once  sync.Once
	done  chan struct{}
	err   error // written once before done is closed
}

// The states of a Claim.
const (
	claimQueued int32 = iota
	claimTaken
	claimAbandoned
)

// ErrAbandoned is the outcome of a transaction whose waiter gave up before
// it was taken into a commit: it was not stored, and never will be.
var ErrAbandoned = &Error{Code: CodeUnavailable, Message: "transaction not accepted in time; nothing was stored"}

// NewClaim returns a queued claim.
func NewClaim() *Claim { return &Claim{done: make(chan struct{})} }

// Take is the committer's side: it reports whether the transaction may be
// written (the claim was queued, or already taken by this committer) and,
// if so, bars the waiter from abandoning it.
func (c *Claim) Take() bool {
	if c == nil {
		return true
	}
	return c.state.CompareAndSwap(claimQueued, claimTaken) || c.state.Load() == claimTaken
}

// Abandon is the waiter's side: it reports whether the transaction is now
// certain never to be written (the claim was still queued, or abandoned
// before). False means a commit holds it: wait for Done.
func (c *Claim) Abandon() bool {
	if c == nil {
		return false
	}
	return c.state.CompareAndSwap(claimQueued, claimAbandoned) || c.state.Load() == claimAbandoned
}

// Settle records the final outcome of the transaction (nil: stored) and
// wakes whoever waits on Done. Only the first call counts.
func (c *Claim) Settle(err error) {
	if c == nil {
		return
	}
	c.once.Do(func() {
		c.err = err
		close(c.done)
	})
}

// Done is closed once the outcome is settled.
func (c *Claim) Done() <-chan struct{} { return c.done }

// Err returns the settled outcome; call it after Done is closed.
func (c *Claim) Err() error {
	<-c.done
	return c.err
}

// NotCommitted marks err, the error of a store's write, as certain to have
// committed nothing: it failed before COMMIT was sent (a refused
// connection, a statement the database refused, a deadline before the
// commit). A CommitQueue settles any other failure of an insert by reading
// the rows again. The message and code of err are unchanged.
func NotCommitted(err error) error {
	if err == nil {
		return nil
	}
	return notCommitted{err}
}

// IsNotCommitted reports whether err was marked by NotCommitted.
func IsNotCommitted(err error) bool {
	var nc notCommitted
	return errors.As(err, &nc)
}

type notCommitted struct{ error }

func (e notCommitted) Unwrap() error { return e.error }

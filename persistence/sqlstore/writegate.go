package sqlstore

import (
	"context"
	"sync"
)

// writeGate orders the write transactions of a store whose database has one
// writer at a time (SQLite: one write connection). Without it the writers
// queue in database/sql, which hands a released connection to a waiter at
// random; an accept (the commit queue's merged insert, which 64 HTTP
// clients wait for) then waits on average behind more than one of the
// submitters' commits (nonce, signed bytes, attempts). Profiled on the
// embedded default, 400 accounts × 10 transfers: the write connection was
// busy 7.7 s of 10, and each accept commit waited 29 ms for it, longer than
// it held it (12.6 ms).
//
// The gate has two classes and alternates between them: when the holder
// releases the gate and both classes wait, the class that did not go last
// goes next (FIFO within a class). An accept thus waits for at most the
// commit in progress and one other, and the others are never starved by a
// stream of accepts: they get every other turn. Their commits grow while
// they wait (the submit stage merges the pumps that queue meanwhile), so
// the database does fewer of them.
type writeGate struct {
	mu   sync.Mutex
	busy bool
	// lastFirst says the last holder was of the first class.
	lastFirst bool
	// first (accepts) and rest wait in FIFO order; a waiter's channel is
	// closed when the gate passes to it.
	first, rest []chan struct{}
}

// acquire waits for the gate (first: the accept class) or for ctx to end.
func (g *writeGate) acquire(ctx context.Context, first bool) error {
	g.mu.Lock()
	if !g.busy {
		g.busy, g.lastFirst = true, first
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	if first {
		g.first = append(g.first, ch)
	} else {
		g.rest = append(g.rest, ch)
	}
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.remove(ch, first) {
			return ctx.Err()
		}
		// The gate passed to us meanwhile: hand it on.
		g.passLocked()
		return ctx.Err()
	}
}

// remove takes ch out of its queue; false when it is in none (the gate
// passed to it).
func (g *writeGate) remove(ch chan struct{}, first bool) bool {
	q := &g.rest
	if first {
		q = &g.first
	}
	for i, c := range *q {
		if c == ch {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// release passes the gate to the next waiter, or frees it.
func (g *writeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passLocked()
}

// passLocked passes the gate on: to the class that did not go last when
// both wait, else to whichever waits; free when none does.
func (g *writeGate) passLocked() {
	takeFirst := len(g.first) > 0 && (len(g.rest) == 0 || !g.lastFirst)
	switch {
	case takeFirst:
		ch := g.first[0]
		g.first = g.first[1:]
		g.lastFirst = true
		close(ch)
	case len(g.rest) > 0:
		ch := g.rest[0]
		g.rest = g.rest[1:]
		g.lastFirst = false
		close(ch)
	default:
		g.busy = false
	}
}

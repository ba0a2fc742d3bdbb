package engine

import (
	"context"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
)

// headLog is the latest head a Network's watcher (or a sender) saw, and
// the last block the watcher of this process completed transactions of.
type headLog struct {
	mu     sync.Mutex
	number uint64
	seen   time.Time
	// processed is the watcher's cursor when it runs in this process
	// (valid: it does).
	processed uint64
	valid     bool
	// fetch is the read of the node's head in progress (nil: none). The
	// callers that find the head stale while it runs wait for its answer
	// instead of asking the node too.
	fetch *headFetch
}

// headFetch is one read of the node's head, shared by the callers that
// wait for it: done is closed once number or err is set.
type headFetch struct {
	done   chan struct{}
	number uint64
	err    error
}

// ObserveProcessed records that the network's watcher, in this process,
// handled every block up to number.
func (n *Network) ObserveProcessed(number uint64) {
	n.heads.mu.Lock()
	n.heads.processed, n.heads.valid = number, true
	n.heads.mu.Unlock()
}

// processedThrough returns the watcher's cursor, and false when the
// watcher does not run in this process (cluster mode, another node).
func (n *Network) processedThrough() (uint64, bool) {
	n.heads.mu.Lock()
	defer n.heads.mu.Unlock()
	return n.heads.processed, n.heads.valid
}

// ObserveHead records that the chain's head is at number (the watcher calls
// it on each poll). Waits of pending transactions are counted in blocks.
func (n *Network) ObserveHead(number uint64) {
	n.heads.mu.Lock()
	n.heads.number, n.heads.seen = number, time.Now()
	n.heads.mu.Unlock()
}

// LastHead returns the latest head observed and when; zero when none was.
func (n *Network) LastHead() (uint64, time.Time) {
	n.heads.mu.Lock()
	defer n.heads.mu.Unlock()
	return n.heads.number, n.heads.seen
}

// HeaderReader reads a block's header (number nil: the head).
type HeaderReader interface {
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
}

// Head returns the chain's head: the one observed within fresh, else the
// node's (which it then records). Callers that find the head stale at the
// same time share one read of the node's: its error (the node's, or the
// end of the reading caller's context) is theirs too, and their next call
// reads again. A caller whose own context ends stops waiting at once.
//
// The sharing is measured: on the nodes of a cluster that do not hold the
// network's lease, no watcher observes heads, and each account's pump
// after a block found the head of 3 s before stale at once: in `make
// bench-cluster` (3 nodes, 1,000 accounts) the two other nodes spent 16 %
// and 31 % of their CPU reading the head block, hundreds at a time.
func (n *Network) Head(ctx context.Context, fresh time.Duration) (uint64, error) {
	n.heads.mu.Lock()
	if number, seen := n.heads.number, n.heads.seen; !seen.IsZero() && time.Since(seen) < fresh {
		n.heads.mu.Unlock()
		return number, nil
	}
	f, reads := n.heads.fetch, n.heads.fetch == nil
	if reads {
		f = &headFetch{done: make(chan struct{})}
		n.heads.fetch = f
	}
	n.heads.mu.Unlock()
	if reads {
		h, err := n.Chain.HeaderByNumber(ctx, nil)
		if err != nil {
			f.err = fmt.Errorf("head: %w", err)
		} else {
			f.number = h.Number.Uint64()
			n.ObserveHead(f.number)
		}
		n.heads.mu.Lock()
		n.heads.fetch = nil
		n.heads.mu.Unlock()
		close(f.done)
	}
	select {
	case <-f.done:
		return f.number, f.err
	case <-ctx.Done():
		return 0, fmt.Errorf("head: %w", ctx.Err())
	}
}

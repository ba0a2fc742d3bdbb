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
// node's (which it then records).
func (n *Network) Head(ctx context.Context, fresh time.Duration) (uint64, error) {
	if number, seen := n.LastHead(); !seen.IsZero() && time.Since(seen) < fresh {
		return number, nil
	}
	h, err := n.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("head: %w", err)
	}
	n.ObserveHead(h.Number.Uint64())
	return h.Number.Uint64(), nil
}

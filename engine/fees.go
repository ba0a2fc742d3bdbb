package engine

import (
	"context"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// MaxFeePerGas is the EIP-1559 fee cap the service signs with and
// advertises (GET /contracts/network/{network}/gas-price): twice the base
// fee plus the tip, which keeps a transaction includable through six
// consecutive full blocks (each raises the base fee by at most 12.5%).
func MaxFeePerGas(baseFee, tip *big.Int) *big.Int {
	fee := new(big.Int).Mul(baseFee, big.NewInt(2))
	return fee.Add(fee, tip)
}

// feeQuote is the fee part of the transactions of one pump.
type feeQuote struct {
	baseFee  *big.Int // nil on legacy networks
	tip      *big.Int
	gasPrice *big.Int
}

// feeCache is a Network's last fee quote. Its lock is never held while the
// node is asked: the first caller asks, the ones that arrive meanwhile wait
// for its answer (or their own deadline), so a hung node stalls no lock.
type feeCache struct {
	mu sync.Mutex
	q  feeQuote
	at time.Time
	// asking is closed when the call in progress returns; nil when none is.
	asking chan struct{}
}

// cachedFees returns the network's quote if it is younger than
// FeeQuoteTTL, else asks quote and keeps its answer.
func (n *Network) cachedFees(ctx context.Context, quote func(context.Context) (feeQuote, error)) (feeQuote, error) {
	if n.FeeQuoteTTL <= 0 {
		return quote(ctx)
	}
	for {
		n.fees.mu.Lock()
		if !n.fees.at.IsZero() && time.Since(n.fees.at) < n.FeeQuoteTTL {
			q := n.fees.q
			n.fees.mu.Unlock()
			return q, nil
		}
		if wait := n.fees.asking; wait != nil {
			n.fees.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return feeQuote{}, fmt.Errorf("fees: %w", ctx.Err())
			}
		}
		done := make(chan struct{})
		n.fees.asking = done
		n.fees.mu.Unlock()

		q, err := quote(ctx)
		n.fees.mu.Lock()
		n.fees.asking = nil
		if err == nil {
			n.fees.q, n.fees.at = q, time.Now()
		}
		n.fees.mu.Unlock()
		close(done)
		return q, err
	}
}

// forgetFees drops the cached quote: a node called it too low.
func (n *Network) forgetFees() {
	n.fees.mu.Lock()
	n.fees.at = time.Time{}
	n.fees.mu.Unlock()
}

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

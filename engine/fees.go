package engine

import (
	"context"
	"fmt"
	"math/big"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/core/types"
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
	// blockGas is the gas limit of the head the quote was read at.
	blockGas uint64
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

// fees returns the network's fee quote (cached for FeeQuoteTTL); its
// failure is the node's (IsNodeTrouble).
func (s *Sender) fees(ctx context.Context) (feeQuote, error) {
	q, err := s.net.cachedFees(ctx, s.quoteFees)
	return q, nodeCall(err)
}

// feeSource is what a fee quote needs of the node: the head's base fee
// and the suggested tip, or the gas price on legacy networks.
type feeSource interface {
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	ethereum.GasPricer
	ethereum.GasPricer1559
}

// quoteFees asks the node for the fees of the next block.
func (s *Sender) quoteFees(ctx context.Context) (feeQuote, error) {
	return quoteFees(ctx, s.chain())
}

// quoteFees asks node for the fees of the next block.
func quoteFees(ctx context.Context, node feeSource) (feeQuote, error) {
	head, err := node.HeaderByNumber(ctx, nil)
	if err != nil {
		return feeQuote{}, fmt.Errorf("fees: head: %w", err)
	}
	if head.BaseFee == nil {
		price, err := node.SuggestGasPrice(ctx)
		if err != nil {
			return feeQuote{}, fmt.Errorf("fees: gas price: %w", err)
		}
		return feeQuote{gasPrice: price, blockGas: head.GasLimit}, nil
	}
	tip, err := node.SuggestGasTipCap(ctx)
	if err != nil {
		return feeQuote{}, fmt.Errorf("fees: tip: %w", err)
	}
	return feeQuote{baseFee: head.BaseFee, tip: tip, blockGas: head.GasLimit}, nil
}

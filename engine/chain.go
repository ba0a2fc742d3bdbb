package engine

import (
	"context"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Node is a network's JSON-RPC node as Network carries it: the union of
// what its users declare they call (senderChain, followerChain,
// faucetChain; outside the engine http's chainReader and evm.Backend,
// checked where they are declared). Each user depends on its own
// interface only, so a test double implements what its subject calls and
// embeds Node for the rest. The go-ethereum adapter is evm.Client
// (engine/evm); prom.Metrics.InstrumentChain wraps a Node to count calls.
type Node interface {
	senderChain
	followerChain
	faucetChain
	// ChainID serves evm.Transact, which provisioning calls with a
	// network's node.
	ChainID(ctx context.Context) (*big.Int, error)
}

// Network is one configured chain as the engine sees it.
type Network struct {
	Name    string
	ChainID *big.Int
	// Confirmations is how many blocks must be on top of a transaction's
	// block before it counts as completed (0: completed when mined).
	Confirmations uint64
	// InFlight is the initial window of unconfirmed transactions per
	// account; the window adapts between MinInFlight and MaxInFlight (0:
	// DefaultMinInFlight, DefaultMaxInFlight; see window).
	InFlight    int
	MinInFlight int
	MaxInFlight int
	// GasMarginPercent is added to the estimated gas limit.
	GasMarginPercent uint64
	// PollInterval is how often the watcher polls for a new head.
	PollInterval time.Duration
	// RebroadcastBlocks is how many new blocks may pass without the
	// account's chain nonce moving before its pending transactions are
	// looked at: the chain's nonce read, consumed nonces settled, and the
	// signed bytes sent again as they are (0: DefaultRebroadcastBlocks).
	RebroadcastBlocks uint64
	// ReplaceBlocks is how many blocks a pending transaction may wait, the
	// account's chain nonce not moving, before it is replaced: the same
	// nonce signed again with fees raised by at least FeeBumpPercent
	// (0: DefaultReplaceBlocks).
	ReplaceBlocks uint64
	// DoctorBlocks is how many blocks a gap below the account's lowest
	// nonce in flight (nothing of ours pending at the chain's nonce) may
	// last before the nonce doctor fills it (0: DoctorBlocksFactor times
	// RebroadcastBlocks; doctor.go).
	DoctorBlocks uint64
	// FeeBumpPercent is the fee raise of a replacement (at least 10, what
	// nodes require; 0: DefaultFeeBumpPercent).
	FeeBumpPercent uint64
	// MaxFeePerGasCap bounds the fee per gas of every transaction the
	// engine signs (maxFeePerGas, or gasPrice on legacy networks); nil: no cap.
	MaxFeePerGasCap *big.Int
	// WSURL is the node's WebSocket endpoint; when set the watcher
	// subscribes to new heads there instead of only polling.
	WSURL string
	// SystemNFTs are the network's System NFT contracts (for circulating
	// supply).
	SystemNFTs []common.Address
	// Chain is the network's node.
	Chain Node
	// FeeQuoteTTL is how long a fee quote (head base fee and tip, or gas
	// price) serves every account of the network before the node is asked
	// again; 0 asks for every pump. Many accounts that send once each
	// would otherwise ask twice per account for the same block's fees.
	FeeQuoteTTL time.Duration

	fees    feeCache
	heads   headLog
	senders senderLimit
	backlog backlog
}

// Defaults of the checks of pending transactions (reconcileInFlight), in
// blocks: on a 2 s chain a transaction is sent again after 10 s and
// replaced after 24 s; on a 12 s chain after 1 and 2.4 minutes.
const (
	DefaultRebroadcastBlocks = 5
	DefaultReplaceBlocks     = 12
	DefaultFeeBumpPercent    = 15
)

// rebroadcastBlocks returns RebroadcastBlocks or its default.
func (n *Network) rebroadcastBlocks() uint64 {
	if n.RebroadcastBlocks > 0 {
		return n.RebroadcastBlocks
	}
	return DefaultRebroadcastBlocks
}

// replaceBlocks returns ReplaceBlocks or its default.
func (n *Network) replaceBlocks() uint64 {
	if n.ReplaceBlocks > 0 {
		return n.ReplaceBlocks
	}
	return DefaultReplaceBlocks
}

// feeBump returns FeeBumpPercent or its default, never below 10.
func (n *Network) feeBump() uint64 {
	switch {
	case n.FeeBumpPercent == 0:
		return DefaultFeeBumpPercent
	case n.FeeBumpPercent < 10:
		return 10
	}
	return n.FeeBumpPercent
}

// CapFees applies the network's MaxFeePerGasCap to an EIP-1559 fee cap and
// tip (the tip never exceeds the fee cap) or, with tip nil, to a legacy gas
// price. It returns new values and leaves its arguments alone.
func (n *Network) CapFees(feeCap, tip *big.Int) (*big.Int, *big.Int) {
	feeCap = new(big.Int).Set(feeCap)
	if n.MaxFeePerGasCap != nil && feeCap.Cmp(n.MaxFeePerGasCap) > 0 {
		feeCap.Set(n.MaxFeePerGasCap)
	}
	if tip == nil {
		return feeCap, nil
	}
	tip = new(big.Int).Set(tip)
	if tip.Cmp(feeCap) > 0 {
		tip.Set(feeCap)
	}
	return feeCap, tip
}

// Clock tells the time; tests pass a fake one.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock in UTC, truncated to milliseconds (the
// precision of the API's timestamps).
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

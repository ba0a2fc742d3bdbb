package engine

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/ethereum/go-ethereum/rpc"
)

// NodeErrorKind classifies an error a node returned for a broadcast, so the
// sender can tell a certain rejection (the nonce may be reused) from an
// unknown outcome (the transaction may be in a pool: it counts as sent).
type NodeErrorKind string

// Kinds of node errors. The texts matched are those of go-ethereum's txpool
// and of the clients that copy it (Hardhat, Erigon, Nethermind wording is
// close enough to the substrings used).
const (
	NodeOK                NodeErrorKind = ""
	NodeAlreadyKnown      NodeErrorKind = "already_known"
	NodeNonceTooLow       NodeErrorKind = "nonce_too_low"
	NodeNonceTooHigh      NodeErrorKind = "nonce_too_high"
	NodeUnderpriced       NodeErrorKind = "underpriced"
	NodeInsufficientFunds NodeErrorKind = "insufficient_funds"
	NodeGasLimit          NodeErrorKind = "gas_limit"
	NodeInvalid           NodeErrorKind = "invalid"
	// NodePoolFull: the node's pool has no room now (txpool is full).
	NodePoolFull NodeErrorKind = "pool_full"
	// NodeRateLimited: the node (or its provider) limits our request rate.
	NodeRateLimited NodeErrorKind = "rate_limited"
	// NodeFundsReserved: insufficient funds while the account has other
	// transactions pending. A node reserves each pending transaction's
	// whole cost (gas limit × fee cap + value) until it is mined, and
	// after a fee spike that reservation can exceed the balance although
	// each transaction pays far less: the refusal passes as the pending
	// ones are mined. Only the sender knows the account's pending
	// transactions, so it turns NodeInsufficientFunds into this kind.
	NodeFundsReserved NodeErrorKind = "funds_reserved"
	NodeUnknown       NodeErrorKind = "unknown"
)

// ClassifyNodeError maps a broadcast error to a kind. A nil error is NodeOK.
//
// The order matters. The kinds that end a transaction for good
// (insufficient funds, a gas limit, an invalid transaction) are tested
// before the transient ones: their messages carry amounts ("balance
// 1429000000, tx cost ...") that must never be read as something else. A
// rate limit is recognised by the HTTP status of the answer (429, or 503
// saying so) or the JSON-RPC code (-32005, "limit exceeded" in EIP-1474; 429
// as some providers answer it), and by its words; never by a bare number in
// the text. NodeErrorSamples lists the messages of each client this is
// checked against.
func ClassifyNodeError(err error) NodeErrorKind {
	if err == nil {
		return NodeOK
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return NodeUnknown
	}
	msg := strings.ToLower(err.Error())
	if k := matchKind(msg, settledKinds); k != "" {
		return k
	}
	if k := matchKind(msg, finalKinds); k != "" {
		return k
	}
	if k := matchKind(msg, transientKinds); k != "" {
		return k
	}
	if rateLimitAnswer(err, msg) {
		return NodeRateLimited
	}
	return NodeUnknown
}

// kindWords is a kind and the words (lower case) that say it.
type kindWords struct {
	kind  NodeErrorKind
	words []string
}

// matchKind is the kind of the first of table whose words msg contains;
// "" when none.
func matchKind(msg string, table []kindWords) NodeErrorKind {
	for _, kw := range table {
		for _, w := range kw.words {
			if strings.Contains(msg, w) {
				return kw.kind
			}
		}
	}
	return ""
}

// settledKinds: the node has the transaction already, or its nonce is
// used. Tested first: these messages name no amount.
var settledKinds = []kindWords{
	{NodeAlreadyKnown, []string{"already known", "known transaction", "already imported", "alreadyknown", "existing txn with same hash", "existing tx with same hash"}},
	{NodeNonceTooLow, []string{"nonce too low", "nonce has already been used", "is lower than the current nonce", "nonce is too low"}},
}

// finalKinds: the node refuses the transaction for what it is. Tested
// before the transient kinds (see ClassifyNodeError).
var finalKinds = []kindWords{
	{NodeInsufficientFunds, []string{"insufficient funds", "sender doesn't have enough funds", "upfront cost exceeds account balance"}},
	{NodeGasLimit, []string{"intrinsic gas too low", "intrinsic gas too high", "intrinsicgas", "intrinsic gas exceeds gas limit",
		"exceeds block gas limit", "exceeds the block gas limit", "gas limit exceeded", "greater than the block gas limit", "gas limit reached",
		"gas limit too high", "gas limit is too high", "transaction requires at least"}},
	{NodeInvalid, []string{"invalid sender", "invalid chain id", "invalidtxchainid", "wrong chainid", "invalid signature", "invalidtxsignature",
		"failed to recover sender", "only replay-protected", "oversized data", "tip higher than fee cap",
		"priority fee per gas higher than max fee per gas", "max priority fee per gas exceeds max fee per gas",
		"invalidmaxpriorityfeepergas", "negative value", "incompatible eip-155"}},
}

// transientKinds: refusals that pass by themselves (Transient).
var transientKinds = []kindWords{
	{NodeNonceTooHigh, []string{"nonce too high", "is higher than the next one expected", "nonce too far in future", "nonce is too distant"}},
	{NodeUnderpriced, []string{"underpriced", "fee cap less than block base fee", "max fee per gas less than block base fee",
		"too low for the next block", "gas price too low", "replacement fee too low", "fee too low",
		"gas price below configured minimum", "gas price below current base fee", "insufficient gas price to replace",
		"could not replace existing tx"}},
	{NodePoolFull, []string{"txpool is full", "transaction pool is full", "too many pending", "queue is full", "sub-pool is full",
		"account limit exceeded", "spammer"}},
	{NodeRateLimited, []string{"rate limit", "too many requests", "request limit", "exceeded its compute units", "limit exceeded"}},
}

// rateLimitAnswer reports whether err is a rate limit by its HTTP status
// (429; 503 with words of a limit) or its JSON-RPC code (-32005, EIP-1474's
// "limit exceeded"; 429). msg is err's text in lower case.
func rateLimitAnswer(err error, msg string) bool {
	var he rpc.HTTPError
	if errors.As(err, &he) {
		return he.StatusCode == http.StatusTooManyRequests ||
			he.StatusCode == http.StatusServiceUnavailable && (strings.Contains(msg, "rate") || strings.Contains(msg, "limit"))
	}
	var rpcErr jsonRPCError
	if errors.As(err, &rpcErr) {
		code := rpcErr.ErrorCode()
		return code == -32005 || code == http.StatusTooManyRequests
	}
	return false
}

// nodeCallError marks the failure of a call to the node (not to the
// store) during a pump: a rate limit, a transport failure, a timeout.
type nodeCallError struct{ err error }

func (e nodeCallError) Error() string { return e.err.Error() }
func (e nodeCallError) Unwrap() error { return e.err }

// nodeCall marks err (nil stays nil) as the failure of a call to the node.
func nodeCall(err error) error {
	if err == nil {
		return nil
	}
	return nodeCallError{err}
}

// IsNodeTrouble reports whether err, a Pump's, is the node's (a call to it
// failed: a rate limit, no answer in time, a connection lost; or it
// limits our rate on broadcasts) rather than the store's: promise 13 has
// it retried within seconds, not after the long pause a store that is
// down is given.
func IsNodeTrouble(err error) bool {
	var nc nodeCallError
	return errors.As(err, &nc) || IsRateLimit(err)
}

// IsRateLimit reports whether err says the node (or its provider) limits
// our request rate: a pause of seconds, not minutes, is due.
func IsRateLimit(err error) bool {
	return err != nil && ClassifyNodeError(err) == NodeRateLimited
}

// CertainlyRejected reports whether the node certainly did not accept the
// transaction, so its nonce may be given to another one (transient and
// final refusals alike).
func (k NodeErrorKind) CertainlyRejected() bool {
	return k.Transient() || k.Final()
}

// Transient reports whether the refusal may pass by itself: the fees were
// below what the node wants now (underpriced), its pool is full, it limits
// our rate, or it expects a lower nonce first (nonce too high: an earlier
// one is not there yet). Such a transaction is sent again later with
// backoff (at a fresh fee quote when underpriced), never failed.
func (k NodeErrorKind) Transient() bool {
	switch k {
	case NodeUnderpriced, NodePoolFull, NodeRateLimited, NodeNonceTooHigh, NodeFundsReserved:
		return true
	}
	return false
}

// Final reports whether the node refuses the transaction for what it is
// (insufficient funds, a gas limit above the block's, an invalid
// transaction): sending it again as it is cannot succeed.
func (k NodeErrorKind) Final() bool {
	switch k {
	case NodeInsufficientFunds, NodeGasLimit, NodeInvalid:
		return true
	}
	return false
}

// IsRevert reports whether an eth_estimateGas or eth_call error is an EVM
// revert (as opposed to a transport or node failure).
func IsRevert(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "execution reverted") || strings.Contains(msg, "revert") ||
		strings.Contains(msg, "invalid opcode") || strings.Contains(msg, "out of gas")
}

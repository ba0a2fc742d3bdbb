package engine

import (
	"context"
	"errors"
	"strings"
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
func ClassifyNodeError(err error) NodeErrorKind {
	if err == nil {
		return NodeOK
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return NodeUnknown
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "already known"), strings.Contains(msg, "known transaction"),
		strings.Contains(msg, "already imported"), strings.Contains(msg, "alreadyknown"):
		return NodeAlreadyKnown
	case strings.Contains(msg, "nonce too low"), strings.Contains(msg, "nonce has already been used"),
		strings.Contains(msg, "is lower than the current nonce"), strings.Contains(msg, "nonce is too low"):
		return NodeNonceTooLow
	case strings.Contains(msg, "nonce too high"), strings.Contains(msg, "is higher than the next one expected"):
		return NodeNonceTooHigh
	case strings.Contains(msg, "underpriced"), strings.Contains(msg, "fee cap less than block base fee"),
		strings.Contains(msg, "max fee per gas less than block base fee"),
		strings.Contains(msg, "too low for the next block"), strings.Contains(msg, "gas price too low"),
		strings.Contains(msg, "replacement fee too low"):
		return NodeUnderpriced
	case strings.Contains(msg, "txpool is full"), strings.Contains(msg, "transaction pool is full"),
		strings.Contains(msg, "too many pending"), strings.Contains(msg, "queue is full"):
		return NodePoolFull
	case strings.Contains(msg, "rate limit"), strings.Contains(msg, "too many requests"),
		strings.Contains(msg, "429"), strings.Contains(msg, "exceeded") && strings.Contains(msg, "capacity"):
		return NodeRateLimited
	case strings.Contains(msg, "insufficient funds"), strings.Contains(msg, "sender doesn't have enough funds"):
		return NodeInsufficientFunds
	case strings.Contains(msg, "intrinsic gas too low"), strings.Contains(msg, "exceeds block gas limit"),
		strings.Contains(msg, "gas limit reached"), strings.Contains(msg, "exceeds the block gas limit"):
		return NodeGasLimit
	case strings.Contains(msg, "invalid sender"), strings.Contains(msg, "invalid chain id"),
		strings.Contains(msg, "only replay-protected"), strings.Contains(msg, "oversized data"),
		strings.Contains(msg, "tip higher than fee cap"), strings.Contains(msg, "negative value"):
		return NodeInvalid
	}
	return NodeUnknown
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

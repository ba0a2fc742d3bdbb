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
	NodeUnknown           NodeErrorKind = "unknown"
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
	case strings.Contains(msg, "nonce too low"), strings.Contains(msg, "nonce has already been used"):
		return NodeNonceTooLow
	case strings.Contains(msg, "nonce too high"):
		return NodeNonceTooHigh
	case strings.Contains(msg, "underpriced"), strings.Contains(msg, "fee cap less than block base fee"),
		strings.Contains(msg, "max fee per gas less than block base fee"):
		return NodeUnderpriced
	case strings.Contains(msg, "insufficient funds"):
		return NodeInsufficientFunds
	case strings.Contains(msg, "intrinsic gas too low"), strings.Contains(msg, "exceeds block gas limit"),
		strings.Contains(msg, "gas limit reached"):
		return NodeGasLimit
	case strings.Contains(msg, "invalid sender"), strings.Contains(msg, "invalid chain id"),
		strings.Contains(msg, "only replay-protected"), strings.Contains(msg, "oversized data"),
		strings.Contains(msg, "tip higher than fee cap"), strings.Contains(msg, "negative value"):
		return NodeInvalid
	}
	return NodeUnknown
}

// CertainlyRejected reports whether the node certainly did not accept the
// transaction, so its nonce may be given to another one.
func (k NodeErrorKind) CertainlyRejected() bool {
	switch k {
	case NodeNonceTooHigh, NodeUnderpriced, NodeInsufficientFunds, NodeGasLimit, NodeInvalid:
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

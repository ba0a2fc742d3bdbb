package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestClassifyNodeError(t *testing.T) {
	tests := []struct {
		err      error
		kind     NodeErrorKind
		rejected bool
	}{
		{nil, NodeOK, false},
		{errors.New("already known"), NodeAlreadyKnown, false},
		{errors.New("nonce too low: next nonce 5, tx nonce 3"), NodeNonceTooLow, false},
		{errors.New("nonce too high"), NodeNonceTooHigh, true},
		{errors.New("replacement transaction underpriced"), NodeUnderpriced, true},
		{errors.New("transaction underpriced: tip needed 1, tip permitted 0"), NodeUnderpriced, true},
		{errors.New("insufficient funds for gas * price + value: balance 0, tx cost 1"), NodeInsufficientFunds, true},
		{errors.New("intrinsic gas too low"), NodeGasLimit, true},
		{errors.New("invalid sender"), NodeInvalid, true},
		{fmt.Errorf("post: %w", context.DeadlineExceeded), NodeUnknown, false},
		{errors.New("connection refused"), NodeUnknown, false},
		{errors.New("txpool is full"), NodePoolFull, true},
		{errors.New("429 Too Many Requests: rate limit exceeded"), NodeRateLimited, true},
		{errors.New("Nonce too high. Expected nonce to be 3 but got 5. Note that transactions can't be queued when automining."), NodeNonceTooHigh, true},
		{errors.New("Nonce too low. Expected nonce to be 5 but got 3."), NodeNonceTooLow, false},
		{errors.New("Transaction gas limit is 40000000 and exceeds block gas limit of 30000000"), NodeGasLimit, true},
		{errors.New("Sender doesn't have enough funds to send tx. The max upfront cost is: 1 and the sender's balance is: 0."), NodeInsufficientFunds, true},
		{errors.New("Transaction maxFeePerGas (1) is too low for the next block, which has a baseFeePerGas of 2"), NodeUnderpriced, true},
	}
	for _, tt := range tests {
		k := ClassifyNodeError(tt.err)
		if k != tt.kind || k.CertainlyRejected() != tt.rejected {
			t.Errorf("ClassifyNodeError(%v) = %q (rejected %v), want %q (%v)", tt.err, k, k.CertainlyRejected(), tt.kind, tt.rejected)
		}
	}
}

// TestNodeErrorKindsSplit: every certain rejection is either transient
// (sent again later, never failed) or final (the transaction cannot pass as
// it is), never both.
func TestNodeErrorKindsSplit(t *testing.T) {
	for _, k := range []NodeErrorKind{NodeOK, NodeAlreadyKnown, NodeNonceTooLow, NodeNonceTooHigh, NodeUnderpriced,
		NodeInsufficientFunds, NodeGasLimit, NodeInvalid, NodePoolFull, NodeRateLimited, NodeUnknown} {
		if k.Transient() && k.Final() {
			t.Errorf("%s is both transient and final", k)
		}
		if k.CertainlyRejected() != (k.Transient() || k.Final()) {
			t.Errorf("%s: CertainlyRejected %v", k, k.CertainlyRejected())
		}
	}
	for _, k := range []NodeErrorKind{NodeUnderpriced, NodeNonceTooHigh, NodePoolFull, NodeRateLimited} {
		if !k.Transient() {
			t.Errorf("%s is not transient", k)
		}
	}
}

// TestFundsReserved: geth's message decides when it gives both amounts;
// otherwise whether the account has transactions pending.
func TestFundsReserved(t *testing.T) {
	for _, tt := range []struct {
		msg     string
		pending bool
		want    bool
	}{
		{"insufficient funds for gas * price + value: balance 3588509972154781432, queued cost 3584803419091365097, tx cost 4225470593866929, overshot 518917530450594", false, true},
		{"insufficient funds for gas * price + value: balance 1, tx cost 2", true, false},
		{"insufficient funds for gas * price + value", true, true},
		{"insufficient funds for gas * price + value", false, false},
		{"sender doesn't have enough funds to send tx", true, true},
	} {
		if got := fundsReserved(errors.New(tt.msg), tt.pending); got != tt.want {
			t.Errorf("%q pending %v: %v, want %v", tt.msg, tt.pending, got, tt.want)
		}
	}
}

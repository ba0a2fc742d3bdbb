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

// TestNodeErrorSamples: every message variant of the table (geth, Erigon,
// Nethermind, Besu, Hardhat, Anvil, providers; each with its source) is
// classified as its row says, as go-ethereum's client returns it (a
// JSON-RPC error object, or an HTTP error); an estimate row fails its
// transaction with its code, or not at all when it is not its fault.
func TestNodeErrorSamples(t *testing.T) {
	clients := map[string]int{}
	for _, s := range NodeErrorSamples() {
		clients[s.Client]++
		if s.Source == "" || s.Message == "" && s.Status == 0 {
			t.Errorf("%s %q: no source or no message", s.Client, s.Message)
		}
		if got := ClassifyNodeError(s.Err()); got != s.Kind {
			t.Errorf("%s %s %q (code %d, status %d) = %q, want %q", s.Client, s.Method, s.Message, s.Code, s.Status, got, s.Kind)
		}
		if s.Method != methodEstimate {
			continue
		}
		var got TxErrorCode
		if txErr := estimateFailure(s.Err(), nil); txErr != nil {
			got = txErr.Code
		}
		if got != s.TxCode {
			t.Errorf("%s estimate %q fails the transaction with %q, want %q", s.Client, s.Message, got, s.TxCode)
		}
	}
	for _, c := range []string{"geth", "erigon", "nethermind", "besu", "hardhat", "anvil", "provider"} {
		if clients[c] == 0 {
			t.Errorf("no sample of %s", c)
		}
	}
}

// TestClassifyRateLimitNotByDigits: a final refusal whose amounts contain
// 429 is final; a rate limit is known by its HTTP status or JSON-RPC code
// even when its words say nothing.
func TestClassifyRateLimitNotByDigits(t *testing.T) {
	funds := sampleRPCError{code: -32000, msg: "insufficient funds for gas * price + value: balance 4290000, tx cost 9429000, overshot 5139000"}
	if k := ClassifyNodeError(funds); k != NodeInsufficientFunds {
		t.Errorf("insufficient funds with 429 in its amounts = %q", k)
	}
	if k := ClassifyNodeError(errors.New("intrinsic gas too low: gas 21000, minimum needed 21429")); k != NodeGasLimit {
		t.Errorf("intrinsic gas with 429 in its amounts = %q", k)
	}
	if k := ClassifyNodeError(sampleRPCError{code: -32005, msg: "slow down"}); k != NodeRateLimited {
		t.Errorf("JSON-RPC -32005 = %q, want rate_limited", k)
	}
	if k := ClassifyNodeError(fmt.Errorf("estimate: %w", NodeErrorSample{Status: 429}.Err())); k != NodeRateLimited {
		t.Errorf("HTTP 429 without a body = %q, want rate_limited", k)
	}
	if IsRateLimit(errors.New("connection refused")) || !IsRateLimit(NodeErrorSample{Status: 429}.Err()) {
		t.Error("IsRateLimit")
	}
}

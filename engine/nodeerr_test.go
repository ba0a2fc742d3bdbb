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
	}
	for _, tt := range tests {
		k := ClassifyNodeError(tt.err)
		if k != tt.kind || k.CertainlyRejected() != tt.rejected {
			t.Errorf("ClassifyNodeError(%v) = %q (rejected %v), want %q (%v)", tt.err, k, k.CertainlyRejected(), tt.kind, tt.rejected)
		}
	}
}

package engine

import (
	"context"
	"errors"
	"regexp"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// FillerGas is the gas of a filler: a plain 0-value transfer.
const FillerGas = 21000

// IsFiller reports whether tx is a filler of account self: a 0-value
// transfer to itself without data. The service signs nothing else like it
// (its transactions call contracts), so a stored version of this shape is
// one it signed to take a nonce.
func IsFiller(tx *types.Transaction, self common.Address) bool {
	return tx.To() != nil && *tx.To() == self && tx.Value().Sign() == 0 && len(tx.Data()) == 0
}

// IsFillerReceipt reports whether r is the receipt of a filler: a
// successful transaction of exactly FillerGas without logs. A contract call
// always uses more (its call data alone costs gas).
func IsFillerReceipt(r *types.Receipt) bool {
	return r.Status == types.ReceiptStatusSuccessful && r.GasUsed == FillerGas && len(r.Logs) == 0
}

// urlPattern finds URLs in a message: a node's URL may carry an API key
// and never reaches a response or a log through a node error.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"']+`)

// nodeMessage is what the node said, fit for a transaction's record: the
// JSON-RPC error's message, or for a transport failure its text with URLs
// taken out.
func nodeMessage(err error) string {
	if err == nil {
		return ""
	}
	var rpcErr jsonRPCError
	if errors.As(err, &rpcErr) {
		return urlPattern.ReplaceAllString(rpcErr.Error(), "<node>")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the node did not answer in time"
	}
	return urlPattern.ReplaceAllString(err.Error(), "<node>")
}

// IsNodeRefusal reports whether err is an answer of the node (a JSON-RPC
// error object), as opposed to a transport failure or a timeout.
func IsNodeRefusal(err error) bool {
	var rpcErr jsonRPCError
	return errors.As(err, &rpcErr)
}

// jsonRPCError is an error object a node answered (go-ethereum's rpc.Error).
type jsonRPCError interface {
	error
	ErrorCode() int
}

package engine

import (
	"context"
	"errors"
	"fmt"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// ReceiptBatcher is the optional part of a Node that reads the receipts of
// many transactions in one round trip (evm.Client: one JSON-RPC batch of
// eth_getTransactionReceipt).
type ReceiptBatcher interface {
	// TransactionReceipts returns the receipts of hashes, in order, nil
	// where the node has none (unknown or not mined); the error is that of
	// the batch as a whole.
	TransactionReceipts(ctx context.Context, hashes []common.Hash) ([]*types.Receipt, error)
}

// ReceiptReader reads one transaction's receipt (ethereum.NotFound while
// the node has none).
type ReceiptReader interface {
	TransactionReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error)
}

// Receipts returns the receipts of hashes, in order, nil where the node has
// none: in one round trip when chain is a ReceiptBatcher, one call after the
// other otherwise.
func Receipts(ctx context.Context, chain ReceiptReader, hashes []common.Hash) ([]*types.Receipt, error) {
	if len(hashes) == 0 {
		return []*types.Receipt{}, nil
	}
	if b, ok := chain.(ReceiptBatcher); ok {
		return b.TransactionReceipts(ctx, hashes)
	}
	return ReceiptsEach(ctx, chain, hashes)
}

// ReceiptsEach reads the receipts of hashes one call after the other (the
// fallback of Receipts); the first error other than ethereum.NotFound ends
// it.
func ReceiptsEach(ctx context.Context, chain ReceiptReader, hashes []common.Hash) ([]*types.Receipt, error) {
	out := make([]*types.Receipt, len(hashes))
	for i, h := range hashes {
		r, err := chain.TransactionReceipt(ctx, h)
		switch {
		case errors.Is(err, ethereum.NotFound):
		case err != nil:
			return nil, fmt.Errorf("receipt of %s: %w", h.Hex(), err)
		default:
			out[i] = r
		}
	}
	return out, nil
}

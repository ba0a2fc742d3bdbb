package evm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/engine"
)

var _ engine.ReceiptBatcher = (*Client)(nil)

// ErrReceiptMissing is returned by BlockReceipts on a node without
// eth_getBlockReceipts when the node has a block but not yet the receipt of
// one of its transactions (it is still indexing them): asking again later
// helps.
var ErrReceiptMissing = errors.New("the node has the block but not yet all its receipts")

// BlockReceipts implements engine.Node: the receipts of every transaction
// of block number, in transaction order. It returns ethereum.NotFound if the
// node does not have the block.
//
// It asks eth_getBlockReceipts, one call. A node that does not serve that
// method (Hardhat's node, some node versions and providers) is remembered as
// such at its first refusal, and from then on the receipts are read as
// eth_getBlockByNumber for the transaction hashes and one JSON-RPC batch of
// eth_getTransactionReceipt (at most MaxBatch per batch).
func (c *Client) BlockReceipts(ctx context.Context, number uint64) ([]*types.Receipt, error) {
	if number > math.MaxInt64 {
		return nil, fmt.Errorf("block receipts: block number %d out of range", number)
	}
	if !c.noBlockReceipts.Load() {
		var receipts []*types.Receipt
		err := c.call(ctx, &receipts, "eth_getBlockReceipts", hexutil.EncodeUint64(number))
		switch {
		case err == nil && receipts == nil:
			return nil, fmt.Errorf("block receipts of %d: %w", number, ethereum.NotFound)
		case err == nil:
			return receipts, nil
		case !methodUnsupported(err):
			return nil, fmt.Errorf("block receipts of %d: %w", number, err)
		}
		c.noBlockReceipts.Store(true)
	}
	receipts, err := c.receiptsByTransaction(ctx, number)
	if err != nil {
		return nil, fmt.Errorf("block receipts of %d (by transaction, the node has no eth_getBlockReceipts): %w", number, err)
	}
	return receipts, nil
}

// ReadsReceiptsByTransaction reports whether the node refused
// eth_getBlockReceipts, so that BlockReceipts reads them one transaction at
// a time (in one batch).
func (c *Client) ReadsReceiptsByTransaction() bool { return c.noBlockReceipts.Load() }

// receiptsByTransaction reads the receipts of block number without
// eth_getBlockReceipts.
func (c *Client) receiptsByTransaction(ctx context.Context, number uint64) ([]*types.Receipt, error) {
	var block *struct {
		Hash         common.Hash   `json:"hash"`
		Transactions []common.Hash `json:"transactions"`
	}
	if err := c.call(ctx, &block, "eth_getBlockByNumber", hexutil.EncodeUint64(number), false); err != nil {
		return nil, fmt.Errorf("block: %w", err)
	}
	if block == nil {
		return nil, ethereum.NotFound
	}
	receipts, err := c.TransactionReceipts(ctx, block.Transactions)
	if err != nil {
		return nil, err
	}
	for i, r := range receipts {
		if r == nil {
			return nil, fmt.Errorf("transaction %s: %w", block.Transactions[i], ErrReceiptMissing)
		}
		if r.BlockHash != block.Hash {
			// The block was replaced between the two calls: the caller
			// reads the block again.
			return nil, fmt.Errorf("transaction %s: receipt of block %s, not %s (reorg while reading)", block.Transactions[i], r.BlockHash, block.Hash)
		}
	}
	return receipts, nil
}

// TransactionReceipts returns the receipts of hashes, in order, read with
// eth_getTransactionReceipt in one JSON-RPC batch (one per MaxBatch
// hashes), each batch within the call timeout. An entry is nil where the
// node has no receipt (the transaction is unknown or not mined). The error is
// that of a batch or of one lookup the node refused.
func (c *Client) TransactionReceipts(ctx context.Context, hashes []common.Hash) ([]*types.Receipt, error) {
	if len(hashes) == 0 {
		return []*types.Receipt{}, nil
	}
	receipts := make([]*types.Receipt, len(hashes))
	elems := make([]rpc.BatchElem, len(hashes))
	for i, h := range hashes {
		elems[i] = rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{h}, Result: &receipts[i]}
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, fmt.Errorf("batch of %d eth_getTransactionReceipt: %w", len(hashes), err)
	}
	for i := range elems {
		if elems[i].Error != nil {
			return nil, fmt.Errorf("receipt of %s: %w", hashes[i], elems[i].Error)
		}
	}
	return receipts, nil
}

// JSON-RPC error codes of a method a node does not have: the standard
// "method not found", and "method not supported" (EIP-1474), which
// Hardhat's node answers for eth_getBlockReceipts.
const (
	codeMethodNotFound     = -32601
	codeMethodNotSupported = -32004
)

// methodUnsupported reports whether err is the node saying it does not
// have the method called, as opposed to the call failing: by the JSON-RPC
// error code, or, from nodes and providers that use other codes or answer
// with an HTTP error status, by a message about the method.
func methodUnsupported(err error) bool {
	var msg string
	var re rpc.Error
	var he rpc.HTTPError
	switch {
	case errors.As(err, &re):
		if c := re.ErrorCode(); c == codeMethodNotFound || c == codeMethodNotSupported {
			return true
		}
		msg = re.Error()
	case errors.As(err, &he):
		msg = string(he.Body)
		if strings.Contains(msg, "-32601") || strings.Contains(msg, "-32004") {
			return true
		}
	default:
		return false // transport, timeout: the node did not say
	}
	msg = strings.ToLower(msg)
	if !strings.Contains(msg, "method") {
		return false // "block not found" and the like are about the block
	}
	for _, s := range []string{"not supported", "unsupported", "not found", "does not exist", "not available"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

package engine

import (
	"context"
	"errors"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// receiptChain knows the receipts in have and fails every lookup with err
// when it is set; it counts lookups. Other Chain methods are not used.
type receiptChain struct {
	Node
	have  map[common.Hash]*types.Receipt
	err   error
	calls int
}

func (c *receiptChain) TransactionReceipt(_ context.Context, h common.Hash) (*types.Receipt, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	if r, ok := c.have[h]; ok {
		return r, nil
	}
	return nil, ethereum.NotFound
}

// batchReceiptChain is a receiptChain that also batches.
type batchReceiptChain struct {
	*receiptChain
	batches int
}

func (c *batchReceiptChain) TransactionReceipts(ctx context.Context, hashes []common.Hash) ([]*types.Receipt, error) {
	c.batches++
	return ReceiptsEach(ctx, c.receiptChain, hashes)
}

// TestReceipts: receipts come back in order with nil for unknown hashes,
// in one batch when the chain batches; a lookup that fails otherwise than
// not found fails the whole.
func TestReceipts(t *testing.T) {
	ctx := context.Background()
	a, b, unknown := common.Hash{1}, common.Hash{2}, common.Hash{3}
	have := map[common.Hash]*types.Receipt{a: {TxHash: a}, b: {TxHash: b}}
	plain := &receiptChain{have: have}
	got, err := Receipts(ctx, plain, []common.Hash{b, unknown, a})
	if err != nil || len(got) != 3 || got[0].TxHash != b || got[1] != nil || got[2].TxHash != a || plain.calls != 3 {
		t.Fatalf("Receipts = %v, %v after %d calls", got, err, plain.calls)
	}
	batching := &batchReceiptChain{receiptChain: &receiptChain{have: have}}
	if got, err := Receipts(ctx, batching, []common.Hash{a, unknown}); err != nil || len(got) != 2 || got[0].TxHash != a || got[1] != nil || batching.batches != 1 {
		t.Fatalf("Receipts of a batching chain = %v, %v in %d batches", got, err, batching.batches)
	}
	if got, err := Receipts(ctx, batching, nil); err != nil || got == nil || len(got) != 0 || batching.batches != 1 {
		t.Fatalf("Receipts of nothing = %v, %v (batches %d)", got, err, batching.batches)
	}
	down := &receiptChain{err: errors.New("connection refused")}
	if _, err := Receipts(ctx, down, []common.Hash{a, b}); err == nil || down.calls != 1 {
		t.Fatalf("Receipts from a node that is down: %v after %d calls", err, down.calls)
	}
}

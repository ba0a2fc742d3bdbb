package evm

import (
	"context"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// laggingChain serves the receipt of a transaction mined in block 5 at
// once, while its latest header stays at block 4 for the first heads
// calls: the window in which a node has indexed a block's receipts but not
// yet made it its head.
type laggingChain struct {
	engine.Node // not called
	heads       atomic.Int32
	lagging     int32
}

func (c *laggingChain) TransactionReceipt(context.Context, common.Hash) (*types.Receipt, error) {
	return &types.Receipt{Status: types.ReceiptStatusSuccessful, BlockNumber: big.NewInt(5)}, nil
}

func (c *laggingChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	if c.heads.Add(1) <= c.lagging {
		return &types.Header{Number: big.NewInt(4)}, nil
	}
	return &types.Header{Number: big.NewInt(5)}, nil
}

// TestWaitMinedWaitsForTheHead: a receipt whose block is not yet the node's
// head is not returned until it is, so that what follows at the latest
// block (a gas estimate against the contract just deployed) sees it.
func TestWaitMinedWaitsForTheHead(t *testing.T) {
	c := &laggingChain{lagging: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := WaitMined(ctx, c, common.Hash{1})
	if err != nil {
		t.Fatal(err)
	}
	if n := c.heads.Load(); n != 4 {
		t.Fatalf("returned after %d head reads, want 4 (three behind the receipt's block, then one at it)", n)
	}
	if r.BlockNumber.Uint64() != 5 {
		t.Fatalf("receipt of block %d", r.BlockNumber)
	}
	// A head that never arrives: the wait ends with ctx, saying so.
	stuck := &laggingChain{lagging: 1 << 30}
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := WaitMined(short, stuck, common.Hash{2}); err == nil {
		t.Fatal("WaitMined returned a receipt whose block never became the head")
	}
}

// Package chaintest is a chain of headers and logs held in memory, for the
// tests of the engine's log readers (the transfer indexer, the subscription
// processor): a test sets the blocks and their logs, and reorganises it.
// It implements HeaderByNumber and FilterLogs as a node does, and imports
// nothing of the engine, so the engine's own tests can use it.
package chaintest

import (
	"context"
	"math/big"
	"slices"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// transferTopic is the id of ERC-20's Transfer(address,address,uint256).
var transferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

// Chain is a chain of blocks whose hashes and logs a test sets; a reorg
// replaces blocks from some height on. It is not safe for concurrent use.
type Chain struct {
	headers []*types.Header // headers[n] is block n
	logs    map[uint64][]types.Log
	// Calls are the eth_getLogs queries asked so far.
	Calls []ethereum.FilterQuery
}

// New returns a chain of n blocks (0 to n-1) without logs.
func New(n int) *Chain {
	c := &Chain{logs: map[uint64][]types.Log{}}
	c.Extend(n, 0)
	return c
}

// Extend appends n blocks; salt makes their hashes differ from another fork.
func (c *Chain) Extend(n int, salt int64) {
	for i := 0; i < n; i++ {
		num := int64(len(c.headers))
		parent := common.Hash{}
		if num > 0 {
			parent = c.headers[num-1].Hash()
		}
		c.headers = append(c.headers, &types.Header{Number: big.NewInt(num), ParentHash: parent, Extra: big.NewInt(salt).Bytes(), Difficulty: big.NewInt(0)})
	}
}

// Reorg drops blocks from n on and grows a different branch to length.
func (c *Chain) Reorg(n, length int) {
	c.headers = c.headers[:n]
	for b := range c.logs {
		if b >= uint64(n) {
			delete(c.logs, b)
		}
	}
	c.Extend(length-n, 99)
}

// Transfer adds an ERC-20 Transfer log of token to block.
func (c *Chain) Transfer(block uint64, token, from, to common.Address, value int64) {
	h := c.headers[block].Hash()
	var data [32]byte
	big.NewInt(value).FillBytes(data[:])
	idx := uint(len(c.logs[block]))
	c.logs[block] = append(c.logs[block], types.Log{
		Address: token, Topics: []common.Hash{transferTopic, common.BytesToHash(from.Bytes()), common.BytesToHash(to.Bytes())},
		Data: data[:], BlockNumber: block, BlockHash: h, TxHash: common.BigToHash(big.NewInt(int64(block*1000) + int64(idx) + int64(len(h)))), Index: idx,
	})
	// make tx hashes depend on the branch
	c.logs[block][idx].TxHash = common.BytesToHash(append(h[:16], byte(idx)))
}

// HeaderByNumber returns the header of block n (nil: the head);
// ethereum.NotFound beyond the head.
func (c *Chain) HeaderByNumber(_ context.Context, n *big.Int) (*types.Header, error) {
	if n == nil {
		return c.headers[len(c.headers)-1], nil
	}
	if n.Uint64() >= uint64(len(c.headers)) {
		return nil, ethereum.NotFound
	}
	return c.headers[n.Uint64()], nil
}

// FilterLogs records q in Calls and returns the logs of its blocks whose
// contract is among its addresses (its topics are not looked at).
func (c *Chain) FilterLogs(_ context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	c.Calls = append(c.Calls, q)
	var out []types.Log
	for b := q.FromBlock.Uint64(); b <= q.ToBlock.Uint64(); b++ {
		for _, l := range c.logs[b] {
			if slices.Contains(q.Addresses, l.Address) {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

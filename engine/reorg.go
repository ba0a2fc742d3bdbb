package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
)

// ReorgPoint compares blocks (hashes of processed blocks, highest first)
// with chain and returns the first block to process again, or nil when the
// highest one is still on the chain. That is the block after the highest
// stored one still on the chain (a hash commits to all its ancestors; the
// blocks after it may have left the chain, stored or not: a range read at
// once stores only its blocks with logs and its last), the lowest stored
// one when none is, and at most head+1 (a chain that got shorter). The
// transfer indexer and the subscription processor share it.
func ReorgPoint(ctx context.Context, chain IndexChain, blocks []IndexedBlock, head uint64) (*uint64, error) {
	var orphan *uint64
	for _, b := range blocks {
		h, err := chain.HeaderByNumber(ctx, newUint(b.Number))
		if err != nil && !errors.Is(err, ethereum.NotFound) {
			return nil, fmt.Errorf("header %d: %w", b.Number, err)
		}
		if err == nil && h != nil && h.Hash() == b.Hash {
			if orphan != nil {
				*orphan = b.Number + 1
			}
			break
		}
		n := b.Number
		orphan = &n
	}
	if orphan != nil && *orphan > head+1 {
		*orphan = head + 1
	}
	return orphan, nil
}

// newUint returns v as a block number of a query.
func newUint(v uint64) *big.Int { return new(big.Int).SetUint64(v) }

package subscribe

import (
	"cmp"
	"context"
	"fmt"
	"math/big"
	"slices"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Chain is what the processor needs of a node: headers and eth_getLogs
// (the methods of engine.IndexChain, which the transfer indexer declares
// for itself). evm.Client implements it, and LogBatcher too.
type Chain interface {
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error)
}

// LogBatcher is implemented by chains that read a block's header and the
// logs of several queries in one round trip (a JSON-RPC batch). It is
// optional: the subscription processor falls back to one call each.
type LogBatcher interface {
	// HeaderAndLogs returns the header of block number and the logs of
	// each query, in order. A missing block is ethereum.NotFound.
	HeaderAndLogs(ctx context.Context, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error)
}

// HeaderAndLogs reads the header of block number and the logs of qs: in
// one round trip when chain is a LogBatcher, else one call each.
func HeaderAndLogs(ctx context.Context, chain Chain, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error) {
	if b, ok := chain.(LogBatcher); ok {
		return b.HeaderAndLogs(ctx, number, qs)
	}
	return HeaderAndLogsEach(ctx, chain, number, qs)
}

// HeaderAndLogsEach is the fallback of HeaderAndLogs: one call each.
func HeaderAndLogsEach(ctx context.Context, chain Chain, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error) {
	h, err := chain.HeaderByNumber(ctx, newUint(number))
	if err != nil {
		return nil, nil, err
	}
	out := make([][]types.Log, len(qs))
	for i, q := range qs {
		if out[i], err = chain.FilterLogs(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	return h, out, nil
}

// mergeLogs returns the logs of the queries' results in chain order, each
// once (a log two queries return is one log), without removed ones. The
// logs of block to must be of the block whose header was read with them
// (hash): otherwise the chain moved between the calls, and the step is
// retried at the next poll.
func mergeLogs(results [][]types.Log, to uint64, hash common.Hash) ([]types.Log, error) {
	type key struct {
		block common.Hash
		index uint
	}
	seen := map[key]bool{}
	var out []types.Log
	for _, logs := range results {
		for _, l := range logs {
			if l.Removed || seen[key{l.BlockHash, l.Index}] {
				continue
			}
			if l.BlockNumber == to && l.BlockHash != hash {
				return nil, fmt.Errorf("logs of block %d are of block %s, its header of %s: the chain moved, retrying", to, l.BlockHash, hash)
			}
			seen[key{l.BlockHash, l.Index}] = true
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b types.Log) int {
		return cmp.Or(cmp.Compare(a.BlockNumber, b.BlockNumber), cmp.Compare(a.Index, b.Index))
	})
	return out, nil
}

// newUint returns v as a block number of a query.
func newUint(v uint64) *big.Int { return new(big.Int).SetUint64(v) }

package evm

import (
	"context"
	"fmt"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/engine/subscribe"
	"github.com/txengine/txengine/internal/redact"
)

var _ subscribe.LogBatcher = (*Client)(nil)

// HeaderAndLogs implements subscribe.LogBatcher: eth_getBlockByNumber of
// block number (without its transactions) and one eth_getLogs per query,
// in one JSON-RPC batch.
func (c *Client) HeaderAndLogs(ctx context.Context, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error) {
	var head *types.Header
	logs := make([][]types.Log, len(qs))
	elems := make([]rpc.BatchElem, 0, 1+len(qs))
	elems = append(elems, rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.EncodeUint64(number), false}, Result: &head})
	for i, q := range qs {
		if q.BlockHash != nil || q.FromBlock == nil || q.ToBlock == nil {
			return nil, nil, fmt.Errorf("logs of block %d: query %d needs a block range", number, i)
		}
		elems = append(elems, rpc.BatchElem{Method: "eth_getLogs", Args: []any{filterArg(q)}, Result: &logs[i]})
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, nil, fmt.Errorf("header and logs of block %d: %w", number, err)
	}
	for _, e := range elems {
		if e.Error != nil {
			return nil, nil, fmt.Errorf("header and logs of block %d: %s: %w", number, e.Method, redact.Error(e.Error))
		}
	}
	if head == nil {
		return nil, nil, fmt.Errorf("header of block %d: %w", number, ethereum.NotFound)
	}
	return head, logs, nil
}

// filterArg is the JSON-RPC form of q (a block range), as ethclient builds
// it: no "address" when the query has none (some nodes refuse an empty
// list), a null topic position for any value.
func filterArg(q ethereum.FilterQuery) map[string]any {
	arg := map[string]any{
		"fromBlock": hexutil.EncodeBig(q.FromBlock),
		"toBlock":   hexutil.EncodeBig(q.ToBlock),
	}
	if len(q.Addresses) > 0 {
		arg["address"] = q.Addresses
	}
	if q.Topics != nil {
		arg["topics"] = q.Topics
	}
	return arg
}

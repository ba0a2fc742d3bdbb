package evm

import (
	"context"
	"fmt"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/internal/redact"
)

// The methods below override those of the embedded *ethclient.Client that
// the engine, the indexer and the HTTP API call, so that each has the call
// timeout. Their errors are the node's as ethclient returns them, unwrapped
// (engine.ClassifyNodeError and the revert decoding read them as they are),
// but without the node URL's path, query or user (redact.Error): any of
// them may hold an API key.

// ChainID implements engine.Node (eth_chainId).
func (c *Client) ChainID(ctx context.Context) (*big.Int, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.ChainID(ctx)
	return v, redact.Error(err)
}

// HeaderByNumber implements engine.Node (eth_getBlockByNumber); nil
// number is the latest block.
func (c *Client) HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.HeaderByNumber(ctx, number)
	return v, redact.Error(err)
}

// NonceAt implements engine.Node (eth_getTransactionCount).
func (c *Client) NonceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (uint64, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.NonceAt(ctx, account, blockNumber)
	return v, redact.Error(err)
}

// PendingNonceAt implements engine.Node (eth_getTransactionCount at
// "pending").
func (c *Client) PendingNonceAt(ctx context.Context, account common.Address) (uint64, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.PendingNonceAt(ctx, account)
	return v, redact.Error(err)
}

// BalanceAt implements engine.Node (eth_getBalance).
func (c *Client) BalanceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (*big.Int, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.BalanceAt(ctx, account, blockNumber)
	return v, redact.Error(err)
}

// SuggestGasPrice implements engine.Node (eth_gasPrice).
func (c *Client) SuggestGasPrice(ctx context.Context) (*big.Int, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.SuggestGasPrice(ctx)
	return v, redact.Error(err)
}

// SuggestGasTipCap implements engine.Node (eth_maxPriorityFeePerGas).
func (c *Client) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.SuggestGasTipCap(ctx)
	return v, redact.Error(err)
}

// SendTransaction implements engine.Node (eth_sendRawTransaction). A
// timeout leaves the outcome unknown: the node may have taken it.
func (c *Client) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return redact.Error(c.Client.SendTransaction(ctx, tx))
}

// TransactionReceipt implements engine.Node (eth_getTransactionReceipt);
// ethereum.NotFound when the node has no receipt for hash.
func (c *Client) TransactionReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.TransactionReceipt(ctx, hash)
	return v, redact.Error(err)
}

// TransactionCount returns the number of transactions of the block with
// blockHash (eth_getBlockTransactionCountByHash).
func (c *Client) TransactionCount(ctx context.Context, blockHash common.Hash) (uint, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.TransactionCount(ctx, blockHash)
	return v, redact.Error(err)
}

// FilterLogs implements engine.IndexChain (eth_getLogs).
func (c *Client) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	v, err := c.Client.FilterLogs(ctx, q)
	return v, redact.Error(err)
}

// EstimateGas implements engine.Node (eth_estimateGas at the latest
// block), with the call object of callArg.
func (c *Client) EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error) {
	var gas hexutil.Uint64
	if err := c.call(ctx, &gas, "eth_estimateGas", callArg(msg), estimateAt); err != nil {
		return 0, err
	}
	return uint64(gas), nil
}

// CallContract implements engine.Node (eth_call at blockNumber, nil: the
// latest block), with the call object of callArg.
func (c *Client) CallContract(ctx context.Context, msg ethereum.CallMsg, blockNumber *big.Int) ([]byte, error) {
	var out hexutil.Bytes
	if err := c.call(ctx, &out, "eth_call", callArg(msg), blockNumberArg(blockNumber)); err != nil {
		return nil, err
	}
	return out, nil
}

// PendingCallContract is eth_call on the pending state, with the call
// object of callArg.
func (c *Client) PendingCallContract(ctx context.Context, msg ethereum.CallMsg) ([]byte, error) {
	var out hexutil.Bytes
	if err := c.call(ctx, &out, "eth_call", callArg(msg), "pending"); err != nil {
		return nil, err
	}
	return out, nil
}

// estimateAt is the block every eth_estimateGas names: the latest one.
// Without it the node picks: geth the latest block, Hardhat the pending
// one, whose state holds transactions that may be mined after ours or never
// (dropped, behind a nonce gap). A transfer estimated there to an address
// that a pending transfer funds costs less than when it is mined first (a
// storage slot written from zero costs 20,000 gas more), more than the gas
// margin covers: it runs out of gas on chain. At the latest block the
// estimate counts what is mined only.
const estimateAt = "latest"

// blockNumberArg is the JSON-RPC block parameter of number, as ethclient
// writes it: nil is "latest", a negative number one of the named blocks
// (rpc.PendingBlockNumber and the like).
func blockNumberArg(number *big.Int) string {
	switch {
	case number == nil:
		return "latest"
	case number.Sign() >= 0:
		return hexutil.EncodeBig(number)
	case number.IsInt64():
		return rpc.BlockNumber(number.Int64()).String()
	}
	return fmt.Sprintf("<invalid %d>", number) // the node refuses it, as with ethclient
}

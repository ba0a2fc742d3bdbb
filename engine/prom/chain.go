package prom

import (
	"context"
	"errors"
	"math/big"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/subscribe"
)

// chain is an engine.Node that counts and times the calls of the wrapped
// one, labelled with the JSON-RPC method each call makes.
type chain struct {
	next    engine.Node
	network string
	m       *Metrics
}

var _ engine.Node = (*chain)(nil)

// InstrumentChain returns c with every call counted in rpc_requests_total
// and timed in rpc_request_duration_seconds under network.
func (m *Metrics) InstrumentChain(network string, c engine.Node) engine.Node {
	return &chain{next: c, network: network, m: m}
}

// Unwrap returns the wrapped chain.
func (c *chain) Unwrap() engine.Node { return c.next }

// observe records one call of method that started at start and ended with err.
func (c *chain) observe(method string, start time.Time, err error) {
	outcome := "ok"
	switch {
	case err == nil:
	case errors.Is(err, ethereum.NotFound):
		outcome = "not_found"
	case errors.Is(err, context.DeadlineExceeded):
		outcome = "timeout"
	default:
		outcome = "error"
	}
	c.m.rpcRequests.WithLabelValues(c.network, method, outcome).Inc()
	c.m.rpcDuration.WithLabelValues(c.network, method, outcome).Observe(time.Since(start).Seconds())
}

// ChainID implements engine.Node (eth_chainId).
func (c *chain) ChainID(ctx context.Context) (*big.Int, error) {
	start := time.Now()
	v, err := c.next.ChainID(ctx)
	c.observe("eth_chainId", start, err)
	return v, err
}

// HeaderByNumber implements engine.Node (eth_getBlockByNumber).
func (c *chain) HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error) {
	start := time.Now()
	v, err := c.next.HeaderByNumber(ctx, number)
	c.observe("eth_getBlockByNumber", start, err)
	return v, err
}

// NonceAt implements engine.Node (eth_getTransactionCount).
func (c *chain) NonceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (uint64, error) {
	start := time.Now()
	v, err := c.next.NonceAt(ctx, account, blockNumber)
	c.observe("eth_getTransactionCount", start, err)
	return v, err
}

// PendingNonceAt implements engine.Node (eth_getTransactionCount).
func (c *chain) PendingNonceAt(ctx context.Context, account common.Address) (uint64, error) {
	start := time.Now()
	v, err := c.next.PendingNonceAt(ctx, account)
	c.observe("eth_getTransactionCount", start, err)
	return v, err
}

// BalanceAt implements engine.Node (eth_getBalance).
func (c *chain) BalanceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (*big.Int, error) {
	start := time.Now()
	v, err := c.next.BalanceAt(ctx, account, blockNumber)
	c.observe("eth_getBalance", start, err)
	return v, err
}

// EstimateGas implements engine.Node (eth_estimateGas).
func (c *chain) EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error) {
	start := time.Now()
	v, err := c.next.EstimateGas(ctx, msg)
	c.observe("eth_estimateGas", start, err)
	return v, err
}

// SuggestGasPrice implements engine.Node (eth_gasPrice).
func (c *chain) SuggestGasPrice(ctx context.Context) (*big.Int, error) {
	start := time.Now()
	v, err := c.next.SuggestGasPrice(ctx)
	c.observe("eth_gasPrice", start, err)
	return v, err
}

// SuggestGasTipCap implements engine.Node (eth_maxPriorityFeePerGas).
func (c *chain) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	start := time.Now()
	v, err := c.next.SuggestGasTipCap(ctx)
	c.observe("eth_maxPriorityFeePerGas", start, err)
	return v, err
}

// CallContract implements engine.Node (eth_call).
func (c *chain) CallContract(ctx context.Context, msg ethereum.CallMsg, blockNumber *big.Int) ([]byte, error) {
	start := time.Now()
	v, err := c.next.CallContract(ctx, msg, blockNumber)
	c.observe("eth_call", start, err)
	return v, err
}

// BlockReceipts implements engine.Node (eth_getBlockReceipts).
func (c *chain) BlockReceipts(ctx context.Context, number uint64) ([]*types.Receipt, error) {
	start := time.Now()
	v, err := c.next.BlockReceipts(ctx, number)
	c.observe("eth_getBlockReceipts", start, err)
	return v, err
}

// TransactionReceipt implements engine.Node (eth_getTransactionReceipt).
func (c *chain) TransactionReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	start := time.Now()
	v, err := c.next.TransactionReceipt(ctx, hash)
	c.observe("eth_getTransactionReceipt", start, err)
	return v, err
}

// SendTransaction implements engine.Node (eth_sendRawTransaction).
func (c *chain) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	start := time.Now()
	err := c.next.SendTransaction(ctx, tx)
	c.observe("eth_sendRawTransaction", start, err)
	return err
}

// The optional capabilities of a chain (eth_getLogs, block transaction
// counts, JSON-RPC batches) are forwarded, and counted, so that wrapping a
// chain never hides them from the code that looks for them.

// FilterLogs implements engine.IndexChain (eth_getLogs) when the wrapped
// chain does.
func (c *chain) FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	f, ok := c.next.(interface {
		FilterLogs(context.Context, ethereum.FilterQuery) ([]types.Log, error)
	})
	if !ok {
		return nil, errors.New("the chain client cannot read logs")
	}
	start := time.Now()
	v, err := f.FilterLogs(ctx, q)
	c.observe("eth_getLogs", start, err)
	return v, err
}

// HeaderAndLogs implements subscribe.LogBatcher (one round trip when the
// wrapped chain batches, one call after the other otherwise).
func (c *chain) HeaderAndLogs(ctx context.Context, number uint64, qs []ethereum.FilterQuery) (*types.Header, [][]types.Log, error) {
	b, ok := c.next.(subscribe.LogBatcher)
	if !ok {
		return subscribe.HeaderAndLogsEach(ctx, c, number, qs) // each call counted
	}
	start := time.Now()
	h, logs, err := b.HeaderAndLogs(ctx, number, qs)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "eth_getBlockByNumber").Inc()
	c.m.rpcBatched.WithLabelValues(c.network, "eth_getLogs").Add(float64(len(qs)))
	return h, logs, err
}

// TransactionCount forwards eth_getBlockTransactionCountByHash when the
// wrapped chain has it.
func (c *chain) TransactionCount(ctx context.Context, blockHash common.Hash) (uint, error) {
	f, ok := c.next.(interface {
		TransactionCount(context.Context, common.Hash) (uint, error)
	})
	if !ok {
		return 0, errors.New("the chain client cannot count block transactions")
	}
	start := time.Now()
	v, err := f.TransactionCount(ctx, blockHash)
	c.observe("eth_getBlockTransactionCountByHash", start, err)
	return v, err
}

// BatchCall implements engine.BatchCaller: one JSON-RPC batch when the
// wrapped chain batches, one call after the other otherwise.
func (c *chain) BatchCall(ctx context.Context, reqs []engine.CallRequest) ([]engine.CallResult, error) {
	if _, ok := c.next.(engine.BatchCaller); !ok {
		return engine.CallEach(ctx, c, reqs) // each call counted by CallContract
	}
	start := time.Now()
	v, err := engine.BatchCall(ctx, c.next, reqs)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "eth_call").Add(float64(len(reqs)))
	return v, err
}

// BatchBalances implements engine.BalanceBatcher in the same way.
func (c *chain) BatchBalances(ctx context.Context, qs []engine.BalanceQuery) ([]*big.Int, []error, error) {
	if _, ok := c.next.(engine.BalanceBatcher); !ok {
		return engine.BalancesEach(ctx, c, qs)
	}
	start := time.Now()
	v, errs, err := engine.Balances(ctx, c.next, qs)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "balance").Add(float64(len(qs)))
	return v, errs, err
}

// BatchEstimateGas implements engine.TxBatcher (one round trip when the
// wrapped chain batches).
func (c *chain) BatchEstimateGas(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	b, ok := c.next.(engine.TxBatcher)
	if !ok {
		return engine.EstimateEach(ctx, c, msgs)
	}
	start := time.Now()
	gas, errs, err := b.BatchEstimateGas(ctx, msgs)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "eth_estimateGas").Add(float64(len(msgs)))
	return gas, errs, err
}

// BatchNonces implements engine.NonceBatcher (one round trip when the
// wrapped chain batches).
func (c *chain) BatchNonces(ctx context.Context, addrs []common.Address) ([]uint64, []error, error) {
	b, ok := c.next.(engine.NonceBatcher)
	if !ok {
		return engine.NoncesEach(ctx, c, addrs) // each call counted by NonceAt
	}
	start := time.Now()
	nonces, errs, err := b.BatchNonces(ctx, addrs)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "eth_getTransactionCount").Add(float64(len(addrs)))
	return nonces, errs, err
}

// BatchSendTransactions implements engine.TxBatcher.
func (c *chain) BatchSendTransactions(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	b, ok := c.next.(engine.TxBatcher)
	if !ok {
		return engine.SendEach(ctx, c, txs)
	}
	start := time.Now()
	errs, err := b.BatchSendTransactions(ctx, txs)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "eth_sendRawTransaction").Add(float64(len(txs)))
	return errs, err
}

// TransactionReceipts implements engine.ReceiptBatcher: one JSON-RPC batch
// when the wrapped chain batches, one call after the other otherwise.
func (c *chain) TransactionReceipts(ctx context.Context, hashes []common.Hash) ([]*types.Receipt, error) {
	b, ok := c.next.(engine.ReceiptBatcher)
	if !ok {
		return engine.ReceiptsEach(ctx, c, hashes) // each call counted by TransactionReceipt
	}
	start := time.Now()
	v, err := b.TransactionReceipts(ctx, hashes)
	c.observe("batch", start, err)
	c.m.rpcBatched.WithLabelValues(c.network, "eth_getTransactionReceipt").Add(float64(len(hashes)))
	return v, err
}

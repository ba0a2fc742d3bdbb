// Package evm adapts go-ethereum to the engine: a JSON-RPC client that
// implements engine.Node, helpers to send and await transactions, and an
// in-process dev chain that keeps its state in a data directory.
package evm

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/internal/redact"
)

var _ engine.Node = (*Client)(nil)

// Client is a go-ethereum JSON-RPC client that implements engine.Node for
// any node that speaks standard JSON-RPC (geth, Hardhat's node, hosted
// providers). The embedded *ethclient.Client provides the methods the Client
// does not override; the engine's methods are overridden so that every call
// has a timeout (WithCallTimeout), call objects carry their data once, and
// receipts fall back to one lookup per transaction on nodes without
// eth_getBlockReceipts, and the Batch* methods to one call per element on
// nodes that refuse JSON-RPC batches (batch.go). Use RPC for raw calls.
type Client struct {
	*ethclient.Client
	rpc *rpc.Client
	// transport is the HTTP transport of an http(s) connection, nil
	// otherwise; Close drops its idle connections.
	transport *http.Transport
	// timeout bounds every call to the node whose context has no sooner
	// deadline.
	timeout time.Duration
	// noBlockReceipts is set once the node refused eth_getBlockReceipts as
	// a method it does not have; BlockReceipts then reads receipts by
	// transaction hash.
	noBlockReceipts atomic.Bool
	// sendInOrder is set once the node answered a batch of transactions
	// out of order (it refused a nonce whose predecessor in the same batch
	// it took): transactions then go one request each, in order.
	sendInOrder atomic.Bool
	// batches remembers whether the node refuses JSON-RPC batches (see
	// batch.go).
	batches batchState
	// log gets one warning each time the Client stops batching; endpoint
	// names the node in it (redacted: the URL may hold an API key).
	log      *slog.Logger
	endpoint string
}

// DefaultRPCTimeout bounds a call to the node (one request or one JSON-RPC
// batch) when WithCallTimeout does not say otherwise.
const DefaultRPCTimeout = 10 * time.Second

// WithLogger sets where the Client reports a change in how it talks to the
// node (batches refused); the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) {
		if l != nil {
			c.log = l
		}
	}
}

// Option configures a Client.
type Option func(*Client)

// WithCallTimeout bounds every call to the node (one request, or one
// JSON-RPC batch of at most MaxBatch requests) to d, unless the caller's
// context ends sooner; d <= 0 keeps DefaultRPCTimeout.
func WithCallTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// maxIdleRPCConns is how many idle keep-alive connections an http(s)
// client keeps to its node. go-ethereum's default client uses
// http.DefaultTransport, which keeps 2 per host: with many account actors
// calling at once, every other call dialled a new connection (6 % of the
// service's CPU in a profile of 8,000 accounts sending once, and a pile of
// sockets in TIME_WAIT).
const maxIdleRPCConns = 64

// Dial connects to the node at url (http, ws or ipc). Errors do not repeat
// url: it may hold an API key.
func Dial(ctx context.Context, url string, opts ...Option) (*Client, error) {
	var rpcOpts []rpc.ClientOption
	var tr *http.Transport
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		tr = http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = maxIdleRPCConns, maxIdleRPCConns
		rpcOpts = append(rpcOpts, rpc.WithHTTPClient(&http.Client{Transport: tr}))
	}
	c, err := rpc.DialOptions(ctx, url, rpcOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial node: %w", redact.Error(err))
	}
	cl := NewClient(c, opts...)
	cl.transport, cl.endpoint = tr, redact.URL(url)
	return cl, nil
}

// DialNetwork connects to a node for calls: over httpURL when it is set,
// otherwise over the WebSocket wsURL (a lost WebSocket connection is dialled
// again on the next call). Subscriptions are HeadSource's business.
func DialNetwork(ctx context.Context, httpURL, wsURL string, opts ...Option) (*Client, error) {
	switch {
	case httpURL != "":
		return Dial(ctx, httpURL, opts...)
	case wsURL != "":
		c, err := rpc.DialWebsocket(ctx, wsURL, "")
		if err != nil {
			return nil, fmt.Errorf("dial node over websocket: %w", redact.Error(err))
		}
		cl := NewClient(c, opts...)
		cl.endpoint = redact.URL(wsURL)
		return cl, nil
	}
	return nil, fmt.Errorf("dial: no http or ws URL")
}

// NewClient wraps an RPC connection; closing the Client closes it.
func NewClient(c *rpc.Client, opts ...Option) *Client {
	cl := &Client{
		Client: ethclient.NewClient(c), rpc: c, timeout: DefaultRPCTimeout,
		log: slog.New(slog.DiscardHandler), batches: batchState{now: time.Now},
	}
	for _, o := range opts {
		o(cl)
	}
	return cl
}

// RPC returns the underlying RPC connection, for batch calls. Calls made on
// it directly get no timeout from the Client.
func (c *Client) RPC() *rpc.Client { return c.rpc }

// CallTimeout returns the bound of one call to the node.
func (c *Client) CallTimeout() time.Duration { return c.timeout }

// Close closes the connection.
func (c *Client) Close() {
	c.rpc.Close()
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// withTimeout returns ctx bounded by the call timeout; a sooner deadline
// of ctx stays.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// call is one JSON-RPC request within the call timeout.
func (c *Client) call(ctx context.Context, result any, method string, args ...any) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	return redact.Error(c.rpc.CallContext(ctx, result, method, args...))
}

var _ engine.BatchCaller = (*Client)(nil)

var _ engine.NonceBatcher = (*Client)(nil)

// BatchCall sends every request as an eth_call at the latest block in one
// JSON-RPC batch (one call each where the node refuses batches). A failed call (a revert) is reported in its result; the
// error is that of the batch as a whole.
func (c *Client) BatchCall(ctx context.Context, reqs []engine.CallRequest) ([]engine.CallResult, error) {
	elems := make([]rpc.BatchElem, len(reqs))
	outs := make([]hexutil.Bytes, len(reqs))
	for i, r := range reqs {
		elems[i] = rpc.BatchElem{
			Method: "eth_call",
			Args:   []any{callArg(ethereum.CallMsg{From: r.From, To: &r.To, Data: r.Data}), "latest"},
			Result: &outs[i],
		}
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, fmt.Errorf("batch of %d eth_call: %w", len(reqs), err)
	}
	res := make([]engine.CallResult, len(reqs))
	for i := range elems {
		res[i] = engine.CallResult{Data: outs[i], Err: elems[i].Error}
	}
	return res, nil
}

// BatchBalances implements engine.BalanceBatcher: the ETH balances
// (eth_getBalance) and ERC-20 balances (eth_call of balanceOf) of qs, all in
// one JSON-RPC batch at the latest block.
func (c *Client) BatchBalances(ctx context.Context, qs []engine.BalanceQuery) ([]*big.Int, []error, error) {
	elems := make([]rpc.BatchElem, len(qs))
	eths := make([]hexutil.Big, len(qs))
	calls := make([]hexutil.Bytes, len(qs))
	for i, q := range qs {
		if q.ETH {
			elems[i] = rpc.BatchElem{Method: "eth_getBalance", Args: []any{q.Holder, "latest"}, Result: &eths[i]}
			continue
		}
		data := engine.BalanceOfCall(q.Holder)
		elems[i] = rpc.BatchElem{
			Method: "eth_call",
			Args:   []any{callArg(ethereum.CallMsg{To: &q.Token, Data: data}), "latest"},
			Result: &calls[i],
		}
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, nil, fmt.Errorf("batch of %d balances: %w", len(qs), err)
	}
	out := make([]*big.Int, len(qs))
	errs := make([]error, len(qs))
	for i, q := range qs {
		switch {
		case elems[i].Error != nil:
			errs[i] = elems[i].Error
		case q.ETH:
			out[i] = eths[i].ToInt()
		default:
			out[i], errs[i] = engine.DecodeBalance(calls[i])
		}
	}
	return out, errs, nil
}

// callArg is the JSON-RPC form of a call message, as ethclient builds it
// but for the call data, which goes once, as "data".
//
// Nodes disagree on the name: go-ethereum's ethclient sends "input" (the
// current name); Hardhat's node reads "input" as another name of "data" and
// refuses an object holding both ("duplicate field data"), which is what
// this client sent before; older nodes and some providers read only "data"
// and would silently run the call without its data if sent "input" alone.
// Every node we know accepts "data" alone: geth 1.17 reads "input", else
// "data" (TransactionArgs), and refuses only both with different values.
// So "data" it is, with no detection and no second attempt.
func callArg(msg ethereum.CallMsg) map[string]any {
	arg := map[string]any{"from": msg.From, "to": msg.To}
	if len(msg.Data) > 0 {
		arg["data"] = hexutil.Bytes(msg.Data)
	}
	if msg.Value != nil {
		arg["value"] = (*hexutil.Big)(msg.Value)
	}
	if msg.Gas != 0 {
		arg["gas"] = hexutil.Uint64(msg.Gas)
	}
	if msg.GasPrice != nil {
		arg["gasPrice"] = (*hexutil.Big)(msg.GasPrice)
	}
	if msg.GasFeeCap != nil {
		arg["maxFeePerGas"] = (*hexutil.Big)(msg.GasFeeCap)
	}
	if msg.GasTipCap != nil {
		arg["maxPriorityFeePerGas"] = (*hexutil.Big)(msg.GasTipCap)
	}
	if msg.AccessList != nil {
		arg["accessList"] = msg.AccessList
	}
	return arg
}

// BatchEstimateGas implements engine.TxBatcher: every eth_estimateGas of
// msgs in one JSON-RPC batch.
func (c *Client) BatchEstimateGas(ctx context.Context, msgs []ethereum.CallMsg) ([]uint64, []error, error) {
	if len(msgs) == 0 {
		return nil, nil, nil
	}
	elems := make([]rpc.BatchElem, len(msgs))
	outs := make([]hexutil.Uint64, len(msgs))
	for i, m := range msgs {
		elems[i] = rpc.BatchElem{Method: "eth_estimateGas", Args: []any{callArg(m), estimateAt}, Result: &outs[i]}
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, nil, fmt.Errorf("batch of %d eth_estimateGas: %w", len(msgs), err)
	}
	gas := make([]uint64, len(msgs))
	errs := make([]error, len(msgs))
	for i := range elems {
		gas[i], errs[i] = uint64(outs[i]), elems[i].Error
	}
	return gas, errs, nil
}

// BatchNonces implements engine.NonceBatcher: the nonce of every address
// at the latest block (eth_getTransactionCount), in one JSON-RPC batch.
func (c *Client) BatchNonces(ctx context.Context, addrs []common.Address) ([]uint64, []error, error) {
	elems := make([]rpc.BatchElem, len(addrs))
	outs := make([]hexutil.Uint64, len(addrs))
	for i, a := range addrs {
		elems[i] = rpc.BatchElem{Method: "eth_getTransactionCount", Args: []any{a, "latest"}, Result: &outs[i]}
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, nil, fmt.Errorf("batch of %d eth_getTransactionCount: %w", len(addrs), err)
	}
	nonces := make([]uint64, len(addrs))
	errs := make([]error, len(addrs))
	for i := range elems {
		nonces[i], errs[i] = uint64(outs[i]), elems[i].Error
	}
	return nonces, errs, nil
}

// BatchSendTransactions implements engine.TxBatcher: every
// eth_sendRawTransaction of txs, in order, in one JSON-RPC batch.
func (c *Client) BatchSendTransactions(ctx context.Context, txs []*types.Transaction) ([]error, error) {
	if len(txs) == 0 {
		return nil, nil
	}
	if c.sendInOrder.Load() {
		return c.sendEach(ctx, txs, nil), nil
	}
	elems := make([]rpc.BatchElem, len(txs))
	for i, tx := range txs {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("encode transaction %d: %w", i, err)
		}
		elems[i] = rpc.BatchElem{Method: "eth_sendRawTransaction", Args: []any{hexutil.Bytes(raw)}, Result: new(common.Hash)}
	}
	if err := c.batch(ctx, elems); err != nil {
		return nil, fmt.Errorf("batch of %d eth_sendRawTransaction: %w", len(txs), err)
	}
	errs := make([]error, len(txs))
	for i := range elems {
		errs[i] = elems[i].Error
	}
	// A node that handles the requests of a batch concurrently (Hardhat's
	// automine mines each transaction as it arrives and refuses a nonce
	// ahead of the next one) refuses a nonce whose predecessor in the same
	// batch it took. Those go again one by one, in order, and so does every
	// later batch of transactions to this node.
	var again []int
	accepted := false
	for i, err := range errs {
		switch {
		case err == nil:
			accepted = true
		case accepted && engine.ClassifyNodeError(err) == engine.NodeNonceTooHigh:
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		c.sendInOrder.Store(true)
		retried := c.sendEach(ctx, txs, again)
		for _, i := range again {
			errs[i] = retried[i]
		}
	}
	return errs, nil
}

// sendEach sends txs (those of only, when not nil) one request each, in
// order, and returns each one's error.
func (c *Client) sendEach(ctx context.Context, txs []*types.Transaction, only []int) []error {
	errs := make([]error, len(txs))
	if only == nil {
		only = make([]int, len(txs))
		for i := range only {
			only[i] = i
		}
	}
	for _, i := range only {
		errs[i] = c.SendTransaction(ctx, txs[i])
	}
	return errs
}

// Package evm adapts go-ethereum to the engine: a JSON-RPC client that
// implements engine.Chain, helpers to send and await transactions, and an
// in-process dev chain that keeps its state in a data directory.
package evm

import (
	"context"
	"fmt"
	"math"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/engine"
)

var _ engine.Chain = (*Client)(nil)

// Client is a go-ethereum JSON-RPC client that implements engine.Chain. The
// embedded *ethclient.Client provides every method but BlockReceipts by
// number; use RPC for raw and batch calls.
type Client struct {
	*ethclient.Client
	rpc *rpc.Client
}

// Dial connects to the node at url (http, ws or ipc).
func Dial(ctx context.Context, url string) (*Client, error) {
	c, err := rpc.DialContext(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return NewClient(c), nil
}

// DialNetwork connects to a node for calls: over httpURL when it is set,
// otherwise over the WebSocket wsURL (a lost WebSocket connection is dialled
// again on the next call). Subscriptions are HeadSource's business.
func DialNetwork(ctx context.Context, httpURL, wsURL string) (*Client, error) {
	switch {
	case httpURL != "":
		return Dial(ctx, httpURL)
	case wsURL != "":
		c, err := rpc.DialWebsocket(ctx, wsURL, "")
		if err != nil {
			return nil, fmt.Errorf("dial %s: %w", wsURL, err)
		}
		return NewClient(c), nil
	}
	return nil, fmt.Errorf("dial: no http or ws URL")
}

// NewClient wraps an RPC connection; closing the Client closes it.
func NewClient(c *rpc.Client) *Client {
	return &Client{Client: ethclient.NewClient(c), rpc: c}
}

// RPC returns the underlying RPC connection, for batch calls.
func (c *Client) RPC() *rpc.Client { return c.rpc }

// Close closes the connection.
func (c *Client) Close() { c.rpc.Close() }

// BlockReceipts returns the receipts of every transaction of block number,
// in transaction order, with one eth_getBlockReceipts call. It returns
// ethereum.NotFound if the node does not have the block.
func (c *Client) BlockReceipts(ctx context.Context, number uint64) ([]*types.Receipt, error) {
	if number > math.MaxInt64 {
		return nil, fmt.Errorf("block receipts: block number %d out of range", number)
	}
	receipts, err := c.Client.BlockReceipts(ctx, rpc.BlockNumberOrHashWithNumber(rpc.BlockNumber(number)))
	if err != nil {
		return nil, fmt.Errorf("block receipts of %d: %w", number, err)
	}
	return receipts, nil
}

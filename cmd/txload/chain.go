package main

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/txengine/txengine/cmd/txload/internal/check"
)

// chainBatch is the number of JSON-RPC requests per batch (two per
// transaction: itself and its receipt); geth refuses batches of more than
// 1,000 by default.
const chainBatch = 500

// chainReader reads transactions and their receipts from a node in JSON-RPC
// batches.
type chainReader struct {
	ec      *ethclient.Client
	chainID *big.Int
	signer  types.Signer
	// roundTrips counts the batches sent.
	roundTrips int
}

// dialChain connects to the node at url (http(s) or ws(s)) and reads its
// chain id.
func dialChain(ctx context.Context, url string) (*chainReader, error) {
	ec, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("dial node %s: %w", url, err)
	}
	id, err := ec.ChainID(ctx)
	if err != nil {
		ec.Close()
		return nil, fmt.Errorf("chain id of node %s: %w", url, err)
	}
	return &chainReader{ec: ec, chainID: id, signer: types.LatestSignerForChainID(id)}, nil
}

// Close closes the connection to the node.
func (c *chainReader) Close() { c.ec.Close() }

// read returns, by hash as given, what the node says about each hash: the
// transaction (with its sender recovered from the signature) and its
// receipt. An error of a whole batch (transport) is returned; an error
// answer for one request is recorded in its OnChain.Err. done is called
// with the number of hashes of each batch read.
func (c *chainReader) read(ctx context.Context, hashes []string, done func(int)) (map[string]check.OnChain, error) {
	out := make(map[string]check.OnChain, len(hashes))
	per := chainBatch / 2
	for start := 0; start < len(hashes); start += per {
		chunk := hashes[start:min(start+per, len(hashes))]
		txs := make([]*types.Transaction, len(chunk))
		rcs := make([]*types.Receipt, len(chunk))
		elems := make([]rpc.BatchElem, 0, 2*len(chunk))
		for i, h := range chunk {
			elems = append(elems,
				rpc.BatchElem{Method: "eth_getTransactionByHash", Args: []any{common.HexToHash(h)}, Result: &txs[i]},
				rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{common.HexToHash(h)}, Result: &rcs[i]})
		}
		c.roundTrips++
		if err := c.ec.Client().BatchCallContext(ctx, elems); err != nil {
			return nil, fmt.Errorf("read %d transactions from the node: %w", len(chunk), err)
		}
		for i, h := range chunk {
			out[h] = c.onChain(h, txs[i], elems[2*i].Error, rcs[i], elems[2*i+1].Error)
		}
		done(len(chunk))
	}
	return out, nil
}

// onChain converts what the node answered for hash.
func (c *chainReader) onChain(hash string, tx *types.Transaction, txErr error, rc *types.Receipt, rcErr error) check.OnChain {
	var o check.OnChain
	var errs []string
	switch {
	case txErr != nil:
		errs = append(errs, "transaction: "+txErr.Error())
	case tx != nil:
		if got := tx.Hash(); got != common.HexToHash(hash) {
			errs = append(errs, fmt.Sprintf("the node answered transaction %s", got.Hex()))
			break
		}
		from, err := types.Sender(c.signer, tx)
		if err != nil {
			errs = append(errs, "recover sender: "+err.Error())
			break
		}
		o.Tx, o.Sender, o.Nonce = true, from.Hex(), tx.Nonce()
	}
	switch {
	case rcErr != nil:
		errs = append(errs, "receipt: "+rcErr.Error())
	case rc != nil:
		o.Receipt, o.Status = true, rc.Status
		o.BlockHash = rc.BlockHash.Hex()
		if rc.BlockNumber != nil {
			o.BlockNumber = rc.BlockNumber.Uint64()
		}
	}
	o.Err = strings.Join(errs, "; ")
	return o
}

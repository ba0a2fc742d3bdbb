package evm

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine"
)

// These helpers serve set-up work (deploying contracts, funding accounts) and
// tests. The engine's own submission path, with persisted nonces and
// replacement, does not use them.

// ErrTxFailed is returned if a transaction was mined with status 0 (reverted).
var ErrTxFailed = errors.New("transaction failed")

// GasMarginPercent is added to estimated gas limits by Transact and Deploy.
const GasMarginPercent = 25

// receiptPollInterval is how often WaitMined asks for a receipt.
const receiptPollInterval = 50 * time.Millisecond

// Backend is what Transact and Deploy call on a node: its chain id, the
// sender's pending nonce, an estimate, fees, a broadcast, and the receipt
// and head that WaitMined reads. A network's engine.Node is one.
type Backend interface {
	ChainID(ctx context.Context) (*big.Int, error)
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	ethereum.GasEstimator
	ethereum.GasPricer
	ethereum.GasPricer1559
	ethereum.TransactionSender
	minedReader
}

var _ Backend = engine.Node(nil)

// minedReader is what WaitMined calls on a node: receipts and the head.
type minedReader interface {
	engine.ReceiptReader
	engine.HeaderReader
}

// Transact sends value and data from key's account to to (nil: contract
// creation) and waits until it is mined. The gas limit is estimated with a
// margin; fees are EIP-1559 (fee cap twice the latest base fee plus the
// suggested tip) where the chain has a base fee, legacy otherwise. It
// returns the receipt, and ErrTxFailed with it if the transaction reverted.
func Transact(ctx context.Context, chain Backend, key *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte) (*types.Receipt, error) {
	if value == nil {
		value = new(big.Int)
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	chainID, err := chain.ChainID(ctx)
	if err != nil {
		return nil, fmt.Errorf("transact: chain id: %w", err)
	}
	nonce, err := chain.PendingNonceAt(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("transact: nonce of %s: %w", from, err)
	}
	gas, err := chain.EstimateGas(ctx, ethereum.CallMsg{From: from, To: to, Value: value, Data: data})
	if err != nil {
		return nil, fmt.Errorf("transact: estimate gas: %w", err)
	}
	gas += gas * GasMarginPercent / 100
	head, err := chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("transact: latest header: %w", err)
	}
	var txData types.TxData
	if head.BaseFee != nil {
		tip, err := chain.SuggestGasTipCap(ctx)
		if err != nil {
			return nil, fmt.Errorf("transact: suggest tip: %w", err)
		}
		feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
		txData = &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: gas, To: to, Value: value, Data: data}
	} else {
		price, err := chain.SuggestGasPrice(ctx)
		if err != nil {
			return nil, fmt.Errorf("transact: suggest gas price: %w", err)
		}
		txData = &types.LegacyTx{Nonce: nonce, GasPrice: price, Gas: gas, To: to, Value: value, Data: data}
	}
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), txData)
	if err != nil {
		return nil, fmt.Errorf("transact: sign: %w", err)
	}
	if err := chain.SendTransaction(ctx, tx); err != nil {
		return nil, fmt.Errorf("transact: send %s: %w", tx.Hash(), err)
	}
	receipt, err := WaitMined(ctx, chain, tx.Hash())
	if err != nil {
		return nil, err
	}
	if receipt.Status != types.ReceiptStatusSuccessful {
		return receipt, fmt.Errorf("%w: %s in block %d (gas used %d of %d)",
			ErrTxFailed, tx.Hash(), receipt.BlockNumber, receipt.GasUsed, gas)
	}
	return receipt, nil
}

// Deploy creates a contract from data (creation bytecode followed by the
// packed constructor arguments, see contracts.Artifact.DeployData), waits
// until it is mined and returns its address and receipt.
func Deploy(ctx context.Context, chain Backend, key *ecdsa.PrivateKey, data []byte) (common.Address, *types.Receipt, error) {
	receipt, err := Transact(ctx, chain, key, nil, nil, data)
	if err != nil {
		return common.Address{}, receipt, fmt.Errorf("deploy: %w", err)
	}
	return receipt.ContractAddress, receipt, nil
}

// WaitMined polls for the receipt of the transaction hash until it is mined
// and the node's latest block has reached the receipt's block, or ctx ends.
// A node may serve the receipt of a block it is still making its head
// (geth writes the receipts and their index before it moves the head), and
// a call at the latest block meanwhile still sees the state before it: a
// mint estimated right after its contract's deployment then runs out of
// gas. Errors other than "not found" are retried too (a node may be
// indexing or briefly unreachable) and reported if ctx ends.
func WaitMined(ctx context.Context, chain minedReader, hash common.Hash) (*types.Receipt, error) {
	ticker := time.NewTicker(receiptPollInterval)
	defer ticker.Stop()
	var lastErr error
	for {
		receipt, err := chain.TransactionReceipt(ctx, hash)
		if err == nil {
			head, herr := chain.HeaderByNumber(ctx, nil)
			if herr == nil && receipt.BlockNumber != nil && head.Number.Cmp(receipt.BlockNumber) >= 0 {
				return receipt, nil
			}
			err = herr // nil while the head catches up
		}
		if err != nil && !errors.Is(err, ethereum.NotFound) {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("wait for %s: %w (last error: %v)", hash, ctx.Err(), lastErr)
			}
			return nil, fmt.Errorf("wait for %s: %w", hash, ctx.Err())
		case <-ticker.C:
		}
	}
}

package engine

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Faucet gives new accounts ETH for gas from a funded key of the network.
// It is not safe for concurrent use; the faucet actor owns it.
type Faucet struct {
	net    *Network
	key    *ecdsa.PrivateKey
	from   common.Address
	amount *big.Int

	// next is the nonce after the faucet's last send, at sentAt. A node's
	// pending nonce can lag a send just accepted (geth updates its pool's
	// nonces asynchronously): funding two accounts in quick succession
	// then reused a nonce ("replacement transaction underpriced") and left
	// the second account without gas. next is trusted only for
	// nonceMemory after a send, so a send the node dropped cannot hold the
	// faucet ahead of the chain for long.
	next   uint64
	sentAt time.Time
}

// nonceMemory is how long the faucet prefers its own count of sent
// transactions to a lower pending nonce of the node.
const nonceMemory = 10 * time.Second

// NewFaucet returns the faucet of net paying amount wei per account.
func NewFaucet(net *Network, key *ecdsa.PrivateKey, amount *big.Int) *Faucet {
	return &Faucet{net: net, key: key, from: crypto.PubkeyToAddress(key.PublicKey), amount: amount}
}

// Address is the faucet's address.
func (f *Faucet) Address() common.Address { return f.from }

// Fund tops up every address whose balance is below half the faucet amount
// to at least the amount. It returns the hashes of the transactions sent.
func (f *Faucet) Fund(ctx context.Context, to []common.Address) ([]common.Hash, error) {
	half := new(big.Int).Rsh(f.amount, 1)
	var hashes []common.Hash
	nonce, err := f.net.Chain.PendingNonceAt(ctx, f.from)
	if err != nil {
		return nil, fmt.Errorf("faucet nonce: %w", err)
	}
	if f.next > nonce && time.Since(f.sentAt) < nonceMemory {
		nonce = f.next
	}
	head, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("faucet head: %w", err)
	}
	tip, err := f.net.Chain.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, fmt.Errorf("faucet tip: %w", err)
	}
	for _, addr := range to {
		bal, err := f.net.Chain.BalanceAt(ctx, addr, nil)
		if err != nil {
			return hashes, fmt.Errorf("faucet balance of %s: %w", addr.Hex(), err)
		}
		if bal.Cmp(half) >= 0 {
			continue
		}
		gas, err := f.net.Chain.EstimateGas(ctx, ethereum.CallMsg{From: f.from, To: &addr, Value: f.amount})
		if err != nil {
			return hashes, fmt.Errorf("faucet estimate: %w", err)
		}
		var unsigned *types.Transaction
		if head.BaseFee != nil {
			feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
			unsigned = types.NewTx(&types.DynamicFeeTx{ChainID: f.net.ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: &addr, Value: f.amount})
		} else {
			price, err := f.net.Chain.SuggestGasPrice(ctx)
			if err != nil {
				return hashes, fmt.Errorf("faucet gas price: %w", err)
			}
			unsigned = types.NewTx(&types.LegacyTx{Nonce: nonce, GasPrice: price, Gas: gas, To: &addr, Value: f.amount})
		}
		signed, err := types.SignTx(unsigned, types.LatestSignerForChainID(f.net.ChainID), f.key)
		if err != nil {
			return hashes, fmt.Errorf("faucet sign: %w", err)
		}
		if err := f.net.Chain.SendTransaction(ctx, signed); err != nil {
			return hashes, fmt.Errorf("faucet send to %s: %w", addr.Hex(), err)
		}
		hashes = append(hashes, signed.Hash())
		nonce++
		f.next, f.sentAt = nonce, time.Now()
	}
	return hashes, nil
}

// Key is the faucet's private key (used at start-up to deploy the demo token).
func (f *Faucet) Key() *ecdsa.PrivateKey { return f.key }

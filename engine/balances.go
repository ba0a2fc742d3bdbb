package engine

import (
	"context"
	"fmt"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// BalanceQuery asks for the balance of Holder: in ETH when ETH is set,
// otherwise in the ERC-20 at Token.
type BalanceQuery struct {
	ETH    bool
	Token  common.Address
	Holder common.Address
}

// BalanceBatcher is implemented by chains that read many balances in one
// round trip (a JSON-RPC batch). Balances falls back to one call each.
type BalanceBatcher interface {
	// BatchBalances returns one balance or one error per query, in order;
	// the error is that of the batch as a whole.
	BatchBalances(ctx context.Context, qs []BalanceQuery) ([]*big.Int, []error, error)
}

// BalanceReader reads ETH balances and, through eth_call, ERC-20 ones.
type BalanceReader interface {
	BalanceAt(ctx context.Context, account common.Address, blockNumber *big.Int) (*big.Int, error)
	ethereum.ContractCaller
}

// Balances reads the balances of qs at the latest block, in one round trip
// when chain is a BalanceBatcher.
func Balances(ctx context.Context, chain BalanceReader, qs []BalanceQuery) ([]*big.Int, []error, error) {
	if len(qs) == 0 {
		return nil, nil, nil
	}
	if bb, ok := chain.(BalanceBatcher); ok {
		return bb.BatchBalances(ctx, qs)
	}
	return BalancesEach(ctx, chain, qs)
}

// BalancesEach reads the balances of qs one call after the other (the
// fallback of Balances).
func BalancesEach(ctx context.Context, chain BalanceReader, qs []BalanceQuery) ([]*big.Int, []error, error) {
	out := make([]*big.Int, len(qs))
	errs := make([]error, len(qs))
	for i, q := range qs {
		if q.ETH {
			out[i], errs[i] = chain.BalanceAt(ctx, q.Holder, nil)
		} else {
			out[i], errs[i] = BalanceOf(ctx, chain, q.Token, q.Holder)
		}
		if errs[i] != nil && !IsRevert(errs[i]) {
			return nil, nil, fmt.Errorf("balance of %s: %w", q.Holder.Hex(), errs[i])
		}
	}
	return out, errs, nil
}

// BalanceOfCall returns the call data of ERC-20 balanceOf(holder).
func BalanceOfCall(holder common.Address) []byte {
	data, err := erc20Reader.Pack("balanceOf", holder)
	if err != nil {
		// The ABI is a constant and holder an address: this cannot fail.
		panic(fmt.Sprintf("pack balanceOf: %v", err))
	}
	return data
}

// DecodeBalance decodes the return data of balanceOf.
func DecodeBalance(out []byte) (*big.Int, error) {
	vals, err := erc20Reader.Unpack("balanceOf", out)
	if err != nil || len(vals) != 1 {
		return nil, fmt.Errorf("decode balanceOf: %w", ErrNotToken)
	}
	v, ok := vals[0].(*big.Int)
	if !ok {
		return nil, fmt.Errorf("decode balanceOf: %w", ErrNotToken)
	}
	return v, nil
}

// assetQuery returns the balance query of a transaction's waitForAsset.
func assetQuery(tx *Transaction) BalanceQuery {
	if tx.WaitForAsset == AssetETH {
		return BalanceQuery{ETH: true, Holder: tx.From}
	}
	return BalanceQuery{Token: common.HexToAddress(tx.WaitForAsset), Holder: tx.From}
}

// AssetETH is the waitForAsset value that waits for the sender's ETH.
const AssetETH = "ETH"

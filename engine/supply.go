package engine

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
)

// FormatUnits writes v (smallest units) in whole tokens of the given
// decimals, exactly: "1000000", "1234.5", "0.000000000000000001". Trailing
// zeros of the fraction and a bare decimal point are left out; a negative v
// gets a leading minus sign.
func FormatUnits(v *big.Int, decimals uint8) string {
	if v == nil {
		return "0"
	}
	sign := ""
	abs := new(big.Int).Set(v)
	if abs.Sign() < 0 {
		sign, abs = "-", abs.Neg(abs)
	}
	digits := abs.String()
	d := int(decimals)
	if d == 0 {
		return sign + digits
	}
	if len(digits) <= d {
		digits = strings.Repeat("0", d-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-d], strings.TrimRight(digits[len(digits)-d:], "0")
	if frac == "" {
		return sign + whole
	}
	return sign + whole + "." + frac
}

// BalancesOf returns balanceOf(holder) of the ERC-20 at token for every
// holder, in order, in one JSON-RPC batch when the chain supports it.
func BalancesOf(ctx context.Context, chain ethereum.ContractCaller, token common.Address, holders []common.Address) ([]*big.Int, error) {
	reqs := make([]CallRequest, len(holders))
	for i, h := range holders {
		data, err := erc20Reader.Pack("balanceOf", h)
		if err != nil {
			return nil, fmt.Errorf("token %s: pack balanceOf: %w", token.Hex(), err)
		}
		reqs[i] = CallRequest{To: token, Data: data}
	}
	res, err := BatchCall(ctx, chain, reqs)
	if err != nil {
		return nil, fmt.Errorf("token %s: balances: %w", token.Hex(), err)
	}
	out := make([]*big.Int, len(holders))
	for i, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("token %s: balanceOf(%s): %w", token.Hex(), holders[i].Hex(), r.Err)
		}
		vals, err := erc20Reader.Unpack("balanceOf", r.Data)
		if err != nil || len(vals) != 1 {
			return nil, fmt.Errorf("token %s: balanceOf(%s): %w", token.Hex(), holders[i].Hex(), ErrNotToken)
		}
		v, ok := vals[0].(*big.Int)
		if !ok {
			return nil, fmt.Errorf("token %s: balanceOf(%s): %w", token.Hex(), holders[i].Hex(), ErrNotToken)
		}
		out[i] = v
	}
	return out, nil
}

// CirculatingSupply is total minus the balances of holders (the wallets
// that hold a System NFT), never below zero.
func CirculatingSupply(ctx context.Context, chain ethereum.ContractCaller, token common.Address, total *big.Int, holders []common.Address) (*big.Int, error) {
	out := new(big.Int).Set(total)
	if len(holders) == 0 {
		return out, nil
	}
	bals, err := BalancesOf(ctx, chain, token, holders)
	if err != nil {
		return nil, err
	}
	for _, b := range bals {
		out.Sub(out, b)
	}
	if out.Sign() < 0 {
		out.SetInt64(0)
	}
	return out, nil
}

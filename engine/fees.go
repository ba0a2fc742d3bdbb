package engine

import "math/big"

// MaxFeePerGas is the EIP-1559 fee cap the service signs with and
// advertises (GET /contracts/network/{network}/gas-price): twice the base
// fee plus the tip, which keeps a transaction includable through six
// consecutive full blocks (each raises the base fee by at most 12.5%).
func MaxFeePerGas(baseFee, tip *big.Int) *big.Int {
	fee := new(big.Int).Mul(baseFee, big.NewInt(2))
	return fee.Add(fee, tip)
}

package engine

import (
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/txengine/txengine/engine/abicodec"
)

// ParseAmount parses a non-negative decimal digit string of at most 2^256-1.
// Anything else (sign, decimal point, exponent, hex, empty) is invalid_argument
// on field.
func ParseAmount(field, s string) (*big.Int, error) {
	if s == "" {
		return nil, Invalid(field, "%s must be a non-empty string of decimal digits", field)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return nil, Invalid(field, "%s must contain only decimal digits (no sign, decimal point, exponent or hex)", field)
		}
	}
	// Leading zeros do not count: "000…01" is 1, however many zeros.
	if len(strings.TrimLeft(s, "0")) > 78 {
		return nil, Invalid(field, "%s exceeds 2^256-1", field)
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, Invalid(field, "%s is not a decimal number", field)
	}
	if v.Cmp(math.MaxBig256) > 0 {
		return nil, Invalid(field, "%s exceeds 2^256-1", field)
	}
	return v, nil
}

// ParseAddress parses a 0x-prefixed 20-byte hex address. All-lower and
// all-upper case are accepted; mixed case must pass the EIP-55 checksum.
// Anything else is invalid_argument on field.
func ParseAddress(field, s string) (common.Address, error) {
	a, err := abicodec.ParseAddress(field, s)
	return a, CodecError(err)
}

// IsAddressLike reports whether s looks like an address (0x + 40 hex digits),
// as opposed to an id.
func IsAddressLike(s string) bool {
	return len(s) == 42 && (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"))
}

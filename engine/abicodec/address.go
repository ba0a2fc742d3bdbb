package abicodec

import (
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// ParseAddress parses a 0x-prefixed 20-byte hex address given in field.
// All-lower and all-upper case are accepted; mixed case must pass the
// EIP-55 checksum. Anything else is an Invalid *FieldError.
func ParseAddress(field, s string) (common.Address, error) {
	if !common.IsHexAddress(s) || !(strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")) {
		return common.Address{}, invalid(field, "%s must be a 0x-prefixed 20-byte hex address", field)
	}
	a := common.HexToAddress(s)
	body := s[2:]
	if body != strings.ToLower(body) && body != strings.ToUpper(body) && a.Hex() != "0x"+body {
		return common.Address{}, invalid(field, "%s fails the EIP-55 checksum (mixed case must match %s)", field, a.Hex())
	}
	return a, nil
}

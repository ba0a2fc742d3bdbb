package config

import (
	"encoding/hex"
	"math/big"
	"strings"
)

func decodeHex(s string) ([]byte, error) {
	return hex.DecodeString(strings.TrimPrefix(s, "0x"))
}

// FaucetAmount returns dev.faucetWei as a number.
func (d DevChain) FaucetAmount() *big.Int {
	v, _ := parseWei(d.FaucetWei)
	return v
}

func parseWei(s string) (*big.Int, bool) {
	if s == "" {
		return nil, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return nil, false
		}
	}
	return new(big.Int).SetString(s, 10)
}

// PreviousMasterKeyBytes returns the configured previous master keys.
func (c Config) PreviousMasterKeyBytes() [][]byte {
	var keys [][]byte
	for _, k := range c.PreviousMasterKeys {
		if b, err := decodeHex(strings.TrimSpace(k)); err == nil {
			keys = append(keys, b)
		}
	}
	return keys
}

// MasterKeyBytes returns the configured master key, or nil when unset.
func (c Config) MasterKeyBytes() []byte {
	if c.MasterKey == "" {
		return nil
	}
	b, _ := decodeHex(c.MasterKey)
	return b
}

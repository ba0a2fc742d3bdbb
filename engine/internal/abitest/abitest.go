// Package abitest holds the fixtures that the ABI codec's tests
// (engine/abicodec) and the engine's codec tests share: addresses, integer
// bounds, an ERC-20 Transfer log and a JSON helper.
package abitest

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// Addresses and integer bounds of the codec and validation tests.
const (
	AddrLower = "0x52908400098527886e0f7030069857d2e4169ee7"
	AddrCheck = "0x52908400098527886E0F7030069857D2E4169EE7"
	AddrBad   = "0x52908400098527886E0F7030069857D2E4169Ee7" // one letter's case flipped
	Addr2     = "0x8617E340B3D01FA5F11F306F4090FD50E238070D"
	MaxU256   = "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	TwoTo256  = "115792089237316195423570985008687907853269984665640564039457584007913129639936"
	MinI256   = "-57896044618658097711785492504343953926634992332820282019728792003956564819968" // -2^255
)

// TransferLog is an ERC-20 Transfer log of value from from to to, emitted
// by Addr2 at log index 7 of block 1234.
func TransferLog(from, to string, value *big.Int) *types.Log {
	return &types.Log{
		Address: common.HexToAddress(Addr2),
		Topics: []common.Hash{
			crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)")),
			common.BytesToHash(common.FromHex(from)),
			common.BytesToHash(common.FromHex(to)),
		},
		Data:        common.LeftPadBytes(value.Bytes(), 32),
		BlockNumber: 1234,
		BlockHash:   common.HexToHash("0xb10c"),
		TxHash:      common.HexToHash("0x7a"),
		Index:       7,
	}
}

// Marshal is v as JSON, failing t when it cannot be encoded.
func Marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return string(b)
}

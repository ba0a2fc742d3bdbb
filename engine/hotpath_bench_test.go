package engine_test

import (
	"context"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/abicodec"
	"github.com/txengine/txengine/engine/keystore"
)

// Benchmarks of the accept and send hot paths; compare runs with benchstat:
//
//	go test -run '^$' -bench . -count 10 ./engine/ > new.txt && benchstat old.txt new.txt

const transferABI = `[{"type":"function","name":"transfer","stateMutability":"nonpayable",
	"inputs":[{"name":"to","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]}]`

func BenchmarkParseAmount(b *testing.B) {
	for b.Loop() {
		if _, err := engine.ParseAmount("value", "1500000000000000000"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAddress(b *testing.B) {
	for _, c := range []struct{ name, addr string }{
		{"lower", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"},
		{"checksummed", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := engine.ParseAddress("to", c.addr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPackCallTransfer(b *testing.B) {
	a, err := abicodec.ParseABI([]byte(transferABI))
	if err != nil {
		b.Fatal(err)
	}
	m, err := abicodec.FindMethod(a, "transfer")
	if err != nil {
		b.Fatal(err)
	}
	args := []json.RawMessage{json.RawMessage(`"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"`), json.RawMessage(`"1500000000000000000"`)}
	for b.Loop() {
		if _, _, err := abicodec.PackCall(m, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKeySealerSignTx(b *testing.B) {
	s, err := keystore.NewKeySealer(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	acct, err := engine.NewLocalAccount(s)
	if err != nil {
		b.Fatal(err)
	}
	to := common.HexToAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
	chainID := big.NewInt(1337)
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: chainID, Nonce: 7, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(3e9),
		Gas: 60000, To: &to, Data: make([]byte, 68)})
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.SignTx(ctx, acct.Key(), tx, chainID); err != nil {
			b.Fatal(err)
		}
	}
}

package keystore

import (
	"bytes"
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// sealedTestKey returns a sealer, a fresh account key sealed by it and the
// key itself.
func sealedTestKey(t testing.TB) (*KeySealer, Key, []byte) {
	t.Helper()
	s, err := NewKeySealer(testMaster(7))
	if err != nil {
		t.Fatal(err)
	}
	priv, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	plain := crypto.FromECDSA(priv)
	addr := crypto.PubkeyToAddress(priv.PublicKey)
	sealed, err := s.SealAccountKey(addr, plain)
	if err != nil {
		t.Fatal(err)
	}
	return s, Key{AccountID: "a1", Address: addr, Sealed: sealed}, plain
}

func testTx() *types.Transaction {
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	return types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(1337), Nonce: 7, GasTipCap: big.NewInt(1e9),
		GasFeeCap: big.NewInt(3e9), Gas: 50_000, To: &to, Value: big.NewInt(1), Data: []byte{0xa9, 0x05}})
}

// TestSignTxSameAsWithFullKey: a transaction signed by the sealer (the
// scalar only) is byte for byte the one signed with crypto.ToECDSA's key
// (signatures are deterministic), and its sender is the account.
func TestSignTxSameAsWithFullKey(t *testing.T) {
	s, key, plain := sealedTestKey(t)
	chainID := big.NewInt(1337)
	got, err := s.SignTx(context.Background(), key, testTx(), chainID)
	if err != nil {
		t.Fatal(err)
	}
	full, err := crypto.ToECDSA(plain)
	if err != nil {
		t.Fatal(err)
	}
	want, err := types.SignTx(testTx(), types.LatestSignerForChainID(chainID), full)
	if err != nil {
		t.Fatal(err)
	}
	gotRaw, _ := got.MarshalBinary()
	wantRaw, _ := want.MarshalBinary()
	if !bytes.Equal(gotRaw, wantRaw) {
		t.Fatalf("signed\n%x\nwant\n%x", gotRaw, wantRaw)
	}
	from, err := types.Sender(types.LatestSignerForChainID(chainID), got)
	if err != nil || from != key.Address {
		t.Fatalf("sender %s (%v), want %s", from, err, key.Address)
	}
}

// TestSigningKeyRefusesWhatToECDSARefuses: zero, the curve's order and
// above, and a key that is not 32 bytes are refused.
func TestSigningKeyRefusesWhatToECDSARefuses(t *testing.T) {
	n := crypto.S256().Params().N
	for name, plain := range map[string][]byte{
		"zero":  make([]byte, 32),
		"order": n.FillBytes(make([]byte, 32)),
		"above": new(big.Int).Add(n, big.NewInt(5)).FillBytes(make([]byte, 32)),
		"short": bytes.Repeat([]byte{1}, 31),
		"long":  bytes.Repeat([]byte{1}, 33),
	} {
		if _, err := signingKey(plain); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := crypto.ToECDSA(plain); err == nil {
			t.Errorf("%s: crypto.ToECDSA accepts it: the test's premise is wrong", name)
		}
	}
	one := big.NewInt(1).FillBytes(make([]byte, 32))
	if _, err := signingKey(one); err != nil {
		t.Errorf("1: %v", err)
	}
}

// BenchmarkSignTx measures KeySealer.SignTx: open the sealed key, sign.
func BenchmarkSignTx(b *testing.B) {
	s, key, _ := sealedTestKey(b)
	chainID := big.NewInt(1337)
	tx := testTx()
	for b.Loop() {
		if _, err := s.SignTx(context.Background(), key, tx, chainID); err != nil {
			b.Fatal(err)
		}
	}
}

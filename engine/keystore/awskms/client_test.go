package awskms_test

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/internal/kmstest"
)

// TestLocalKMS signs transactions with a secp256k1 key created in
// local-kms: each recovers the account's address (derived from the key's
// public key) with a valid low-s signature; the key attaches by alias too;
// keys of the wrong spec or usage, unknown keys and a disabled key are
// refused with the fault the engine acts on.
func TestLocalKMS(t *testing.T) {
	srv := kmstest.Start(t)
	client := srv.Client(t)
	k := keystore.NewKMSSigner(client, keystore.KMSOptions{Concurrency: 4})
	ctx := context.Background()
	acct, err := engine.NewKMSAccount(ctx, k, "txengine test")
	if err != nil {
		t.Fatal(err)
	}
	acct.ID = "acct"
	chainID := big.NewInt(1337)
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	for n := range uint64(20) {
		tx := types.NewTx(&types.DynamicFeeTx{ChainID: chainID, Nonce: n, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(1e9), Gas: 21000, To: &to, Value: big.NewInt(1)})
		signed, err := k.SignTx(ctx, acct.Key(), tx, chainID)
		if err != nil {
			t.Fatal(err)
		}
		from, err := types.Sender(types.LatestSignerForChainID(chainID), signed)
		if err != nil || from != acct.Address {
			t.Fatalf("nonce %d: sender %s, %v; want %s", n, from.Hex(), err, acct.Address.Hex())
		}
		v, r, s := signed.RawSignatureValues()
		if !crypto.ValidateSignatureValues(byte(v.Uint64()), r, s, true) {
			t.Fatalf("nonce %d: not a valid low-s signature", n)
		}
	}

	if err := client.CreateAlias(ctx, "alias/txengine-test", acct.KMSKeyID); err != nil {
		t.Fatal(err)
	}
	byAlias, err := engine.AttachKMSKey(ctx, k, "alias/txengine-test")
	if err != nil || byAlias.KMSKeyID != acct.KMSKeyID || byAlias.Address != acct.Address {
		t.Fatalf("attach by alias: %+v, %v; want key %s address %s", byAlias, err, acct.KMSKeyID, acct.Address.Hex())
	}

	for _, bad := range []struct{ name, spec, usage string }{
		{"P-256", "ECC_NIST_P256", "SIGN_VERIFY"},
		{"symmetric", "SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"},
	} {
		arn := srv.CreateKey(t, bad.spec, bad.usage)
		if _, err := engine.AttachKMSKey(ctx, k, arn); engine.ErrorCode(err) != engine.CodeInvalidArgument {
			t.Errorf("%s key: %v, want invalid_argument", bad.name, err)
		}
	}
	if _, err := engine.AttachKMSKey(ctx, k, "alias/none"); engine.ErrorCode(err) != engine.CodeInvalidArgument {
		t.Errorf("unknown alias: %v, want invalid_argument", err)
	}
	if _, err := engine.AttachKMSKey(ctx, k, "0b1c4a9e-0000-4000-8000-000000000000"); engine.ErrorCode(err) != engine.CodeInvalidArgument {
		t.Errorf("unknown key id: %v, want invalid_argument", err)
	}

	if err := client.DisableKey(ctx, acct.KMSKeyID); err != nil {
		t.Fatal(err)
	}
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: chainID, Nonce: 99, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(1e9), Gas: 21000, To: &to})
	if _, err := k.SignTx(ctx, acct.Key(), tx, chainID); keystore.KMSFaultOf(err) != keystore.KMSDenied {
		t.Errorf("disabled key: %v, want access denied", err)
	}
	if _, err := engine.AttachKMSKey(ctx, k, acct.KMSKeyID); engine.ErrorCode(err) != engine.CodeInvalidArgument {
		t.Errorf("attach a disabled key: %v, want invalid_argument", err)
	}

	srv.Stop()
	if _, err := k.SignTx(ctx, acct.Key(), tx, chainID); keystore.KMSFaultOf(err) != keystore.KMSUnavailable || !keystore.IsKMSError(err) {
		t.Errorf("local-kms stopped: %v, want unavailable", err)
	}
}

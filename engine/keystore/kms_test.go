package keystore_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/keystore/kmsfake"
)

// kmsAccount returns the key of an account whose key is a new key of k.
func kmsAccount(t *testing.T, k *keystore.KMSSigner) keystore.Key {
	t.Helper()
	a, err := k.NewKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	a.AccountID = "acct"
	return a
}

func testTx(nonce uint64) *types.Transaction {
	to := common.Address{1}
	return types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2), Gas: 21000, To: &to, Value: big.NewInt(5)})
}

func TestKMSSignerSignsTx(t *testing.T) {
	k := keystore.NewKMSSigner(kmsfake.New(), keystore.KMSOptions{Concurrency: 2})
	acct := kmsAccount(t, k)
	for n := range uint64(6) { // both forms of s
		signed, err := k.SignTx(context.Background(), acct, testTx(n), big.NewInt(1337))
		if err != nil {
			t.Fatal(err)
		}
		from, err := types.Sender(types.LatestSignerForChainID(big.NewInt(1337)), signed)
		if err != nil || from != acct.Address {
			t.Fatalf("sender %s, %v; want %s", from.Hex(), err, acct.Address.Hex())
		}
		v, r, s := signed.RawSignatureValues()
		if !crypto.ValidateSignatureValues(byte(v.Uint64()), r, s, true) {
			t.Fatalf("nonce %d: not a valid low-s signature", n)
		}
	}
}

func TestKMSSignerRetriesThrottling(t *testing.T) {
	f := kmsfake.New()
	k := keystore.NewKMSSigner(f, keystore.KMSOptions{Retries: 3, Backoff: time.Millisecond})
	acct := kmsAccount(t, k)
	throttled := &keystore.KMSError{Fault: keystore.KMSThrottled, Op: "Sign", Err: errors.New("ThrottlingException")}
	f.SetFault(func(n int) error {
		if n <= 2 {
			return throttled
		}
		return nil
	})
	if _, err := k.SignTx(context.Background(), acct, testTx(0), big.NewInt(1337)); err != nil {
		t.Fatalf("after 2 throttled calls and 3 retries: %v", err)
	}
	if calls, _ := f.Stats(); calls != 3 {
		t.Fatalf("%d Sign calls, want 3", calls)
	}
	f.SetFault(func(int) error { return throttled })
	_, err := k.SignTx(context.Background(), acct, testTx(0), big.NewInt(1337))
	if keystore.KMSFaultOf(err) != keystore.KMSThrottled {
		t.Fatalf("always throttled: %v", err)
	}
	if calls, _ := f.Stats(); calls != 3+4 {
		t.Fatalf("%d Sign calls, want 3 then 4 (1 + 3 retries)", calls)
	}
}

func TestKMSSignerCallTimeout(t *testing.T) {
	f := kmsfake.New()
	k := keystore.NewKMSSigner(f, keystore.KMSOptions{CallTimeout: 50 * time.Millisecond})
	acct := kmsAccount(t, k)
	f.Delay = time.Hour // a KMS that does not answer
	began := time.Now()
	_, err := k.SignTx(context.Background(), acct, testTx(0), big.NewInt(1337))
	if keystore.KMSFaultOf(err) != keystore.KMSUnavailable || !keystore.IsKMSError(err) {
		t.Fatalf("err %v, want a keystore.KMSUnavailable keystore.KMSError", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("took %s with a 50ms call timeout", took)
	}
}

func TestKMSSignerBoundsConcurrency(t *testing.T) {
	f := kmsfake.New()
	k := keystore.NewKMSSigner(f, keystore.KMSOptions{Concurrency: 4})
	acct := kmsAccount(t, k)
	f.Delay = 5 * time.Millisecond
	var wg sync.WaitGroup
	for n := range uint64(40) {
		wg.Go(func() {
			if _, err := k.SignTx(context.Background(), acct, testTx(n), big.NewInt(1337)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, m := f.Stats(); m != 4 {
		t.Fatalf("%d Sign calls in flight at most, want 4 (the bound, reached)", m)
	}
}

// TestAttachKMSKeyRefusals: an unknown key and a key of the wrong spec or
// usage are invalid_argument on custody.keyId; a KMS that does not answer
// is unavailable.
func TestAttachKMSKeyRefusals(t *testing.T) {
	f := kmsfake.New()
	k := keystore.NewKMSSigner(f, keystore.KMSOptions{})
	if _, err := k.AttachKey(context.Background(), "alias/none"); !invalidKey(err) {
		t.Errorf("unknown key: %v", err)
	}
	arn, _ := f.CreateKey(context.Background(), "")
	f.Spec = "ECC_NIST_P256"
	if _, err := k.AttachKey(context.Background(), arn); !invalidKey(err) || !strings.Contains(err.Error(), "ECC_SECG_P256K1") {
		t.Errorf("wrong spec: %v", err)
	}
	f.Spec, f.Usage = keystore.KMSKeySpec, "ENCRYPT_DECRYPT"
	if _, err := k.AttachKey(context.Background(), arn); !invalidKey(err) {
		t.Errorf("wrong usage: %v", err)
	}
	f.Usage = keystore.KMSKeyUsage
	a, err := k.AttachKey(context.Background(), arn)
	if err != nil || a.KMSKeyID != arn {
		t.Fatalf("attach: %+v, %v", a, err)
	}
	down := keystore.NewKMSSigner(downKMS{f}, keystore.KMSOptions{})
	if _, err := down.AttachKey(context.Background(), arn); !unavailableKey(err) {
		t.Errorf("KMS down: %v", err)
	}
}

// downKMS is a KMS whose calls all fail for want of an answer.
type downKMS struct{ *kmsfake.KMS }

func (downKMS) DescribeKey(context.Context, string) (keystore.KMSKey, error) {
	return keystore.KMSKey{}, &keystore.KMSError{Fault: keystore.KMSUnavailable, Op: "DescribeKey", Err: errors.New("connection refused")}
}

// invalidKey reports whether err is a KMS key refused as invalid (the
// API's invalid_argument on custody.keyId).
func invalidKey(err error) bool {
	var e *keystore.KeyError
	return errors.As(err, &e) && e.Invalid
}

// unavailableKey reports whether err is KMS not answering while a key is
// attached (the API's unavailable).
func unavailableKey(err error) bool {
	var e *keystore.KeyError
	return errors.As(err, &e) && !e.Invalid && keystore.IsKMSError(err)
}

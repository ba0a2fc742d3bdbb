package engine

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// fakeKMS is a KMSClient in memory that signs as KMS does (DER, s high
// half of the time) and fails on purpose: fault, when set, is asked before
// each Sign (n counts the Sign calls from 1) and its error is returned.
type fakeKMS struct {
	mu          sync.Mutex
	keys        map[string]*ecdsa.PrivateKey
	spec, usage string
	delay       time.Duration
	fault       func(n int) error
	calls       int
	inFlight    int
	maxInFlight int
}

func newFakeKMS() *fakeKMS {
	return &fakeKMS{keys: map[string]*ecdsa.PrivateKey{}, spec: KMSKeySpec, usage: KMSKeyUsage}
}

func (f *fakeKMS) CreateKey(_ context.Context, _ string) (string, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	arn := fmt.Sprintf("arn:aws:kms:eu-west-2:111122223333:key/fake-%d", len(f.keys)+1)
	f.keys[arn] = key
	return arn, nil
}

func (f *fakeKMS) key(id string) (*ecdsa.PrivateKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[id]
	if !ok {
		return nil, &KMSError{Fault: KMSNotFound, Op: "DescribeKey", Err: errors.New("no such key")}
	}
	return k, nil
}

func (f *fakeKMS) DescribeKey(_ context.Context, id string) (KMSKey, error) {
	if _, err := f.key(id); err != nil {
		return KMSKey{}, err
	}
	return KMSKey{ARN: id, Spec: f.spec, Usage: f.usage, Enabled: true}, nil
}

func (f *fakeKMS) PublicKey(_ context.Context, id string) ([]byte, error) {
	k, err := f.key(id)
	if err != nil {
		return nil, err
	}
	return MarshalSPKI(&k.PublicKey)
}

func (f *fakeKMS) Sign(ctx context.Context, id string, digest []byte) ([]byte, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	fault, delay := f.fault, f.delay
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if fault != nil {
		if err := fault(n); err != nil {
			return nil, err
		}
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	k, err := f.key(id)
	if err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(digest, k)
	if err != nil {
		return nil, err
	}
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:64])
	if n%2 == 0 {
		s.Sub(secp256k1N, s) // KMS does not normalise s
	}
	return MarshalDERSignature(r, s)
}

func (f *fakeKMS) stats() (calls, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.maxInFlight
}

func (f *fakeKMS) setFault(fault func(n int) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

// kmsAccount returns an account whose key a new key of f holds.
func kmsAccount(t *testing.T, k *KMSSigner) *Account {
	t.Helper()
	a, err := k.NewKMSAccount(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	a.ID = "acct"
	return a
}

func testTx(nonce uint64) *types.Transaction {
	to := common.Address{1}
	return types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2), Gas: 21000, To: &to, Value: big.NewInt(5)})
}

func TestKMSSignerSignsTx(t *testing.T) {
	k := NewKMSSigner(newFakeKMS(), KMSOptions{Concurrency: 2})
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
	f := newFakeKMS()
	k := NewKMSSigner(f, KMSOptions{Retries: 3, Backoff: time.Millisecond})
	acct := kmsAccount(t, k)
	throttled := &KMSError{Fault: KMSThrottled, Op: "Sign", Err: errors.New("ThrottlingException")}
	f.setFault(func(n int) error {
		if n <= 2 {
			return throttled
		}
		return nil
	})
	if _, err := k.SignTx(context.Background(), acct, testTx(0), big.NewInt(1337)); err != nil {
		t.Fatalf("after 2 throttled calls and 3 retries: %v", err)
	}
	if calls, _ := f.stats(); calls != 3 {
		t.Fatalf("%d Sign calls, want 3", calls)
	}
	f.setFault(func(int) error { return throttled })
	_, err := k.SignTx(context.Background(), acct, testTx(0), big.NewInt(1337))
	if KMSFaultOf(err) != KMSThrottled {
		t.Fatalf("always throttled: %v", err)
	}
	if calls, _ := f.stats(); calls != 3+4 {
		t.Fatalf("%d Sign calls, want 3 then 4 (1 + 3 retries)", calls)
	}
}

func TestKMSSignerCallTimeout(t *testing.T) {
	f := newFakeKMS()
	k := NewKMSSigner(f, KMSOptions{CallTimeout: 50 * time.Millisecond})
	acct := kmsAccount(t, k)
	f.delay = time.Hour // a KMS that does not answer
	began := time.Now()
	_, err := k.SignTx(context.Background(), acct, testTx(0), big.NewInt(1337))
	if KMSFaultOf(err) != KMSUnavailable || !IsKMSError(err) {
		t.Fatalf("err %v, want a KMSUnavailable KMSError", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Fatalf("took %s with a 50ms call timeout", took)
	}
}

func TestKMSSignerBoundsConcurrency(t *testing.T) {
	f := newFakeKMS()
	k := NewKMSSigner(f, KMSOptions{Concurrency: 4})
	acct := kmsAccount(t, k)
	f.delay = 5 * time.Millisecond
	var wg sync.WaitGroup
	for n := range uint64(40) {
		wg.Go(func() {
			if _, err := k.SignTx(context.Background(), acct, testTx(n), big.NewInt(1337)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, m := f.stats(); m != 4 {
		t.Fatalf("%d Sign calls in flight at most, want 4 (the bound, reached)", m)
	}
}

// TestAttachKMSKeyRefusals: an unknown key and a key of the wrong spec or
// usage are invalid_argument on custody.keyId; a KMS that does not answer
// is unavailable.
func TestAttachKMSKeyRefusals(t *testing.T) {
	f := newFakeKMS()
	k := NewKMSSigner(f, KMSOptions{})
	if _, err := k.AttachKMSKey(context.Background(), "alias/none"); ErrorCode(err) != CodeInvalidArgument {
		t.Errorf("unknown key: %v", err)
	}
	arn, _ := f.CreateKey(context.Background(), "")
	f.spec = "ECC_NIST_P256"
	if _, err := k.AttachKMSKey(context.Background(), arn); ErrorCode(err) != CodeInvalidArgument || !strings.Contains(err.Error(), "ECC_SECG_P256K1") {
		t.Errorf("wrong spec: %v", err)
	}
	f.spec, f.usage = KMSKeySpec, "ENCRYPT_DECRYPT"
	if _, err := k.AttachKMSKey(context.Background(), arn); ErrorCode(err) != CodeInvalidArgument {
		t.Errorf("wrong usage: %v", err)
	}
	f.usage = KMSKeyUsage
	a, err := k.AttachKMSKey(context.Background(), arn)
	if err != nil || a.KMSKeyID != arn {
		t.Fatalf("attach: %+v, %v", a, err)
	}
	down := NewKMSSigner(downKMS{f}, KMSOptions{})
	if _, err := down.AttachKMSKey(context.Background(), arn); ErrorCode(err) != CodeUnavailable {
		t.Errorf("KMS down: %v", err)
	}
}

// downKMS is a KMS whose calls all fail for want of an answer.
type downKMS struct{ *fakeKMS }

func (downKMS) DescribeKey(context.Context, string) (KMSKey, error) {
	return KMSKey{}, &KMSError{Fault: KMSUnavailable, Op: "DescribeKey", Err: errors.New("connection refused")}
}

var discardLog = slog.New(slog.NewTextHandler(io.Discard, nil))

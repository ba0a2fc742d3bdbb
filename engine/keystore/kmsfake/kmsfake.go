// Package kmsfake is an AWS KMS in memory for tests: a keystore.KMSClient
// that signs as KMS does (DER, s high half of the time) and fails on
// purpose.
package kmsfake

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/txengine/txengine/engine/keystore"
)

// KMS is a KMSClient in memory. Its fault, when set (SetFault), is asked
// before each Sign (n counts the Sign calls from 1) and its error is
// returned.
type KMS struct {
	// Spec and Usage are what DescribeKey says of every key
	// (keystore.KMSKeySpec and KMSKeyUsage from New).
	Spec, Usage string
	// Delay is how long each Sign takes (or until its context ends).
	Delay time.Duration

	mu          sync.Mutex
	keys        map[string]*ecdsa.PrivateKey
	fault       func(n int) error
	calls       int
	inFlight    int
	maxInFlight int
}

// New returns a KMS without keys whose keys are Ethereum signing keys.
func New() *KMS {
	return &KMS{keys: map[string]*ecdsa.PrivateKey{}, Spec: keystore.KMSKeySpec, Usage: keystore.KMSKeyUsage}
}

// CreateKey implements keystore.KMSClient.
func (f *KMS) CreateKey(_ context.Context, _ string) (string, error) {
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

func (f *KMS) key(id string) (*ecdsa.PrivateKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[id]
	if !ok {
		return nil, &keystore.KMSError{Fault: keystore.KMSNotFound, Op: "DescribeKey", Err: errors.New("no such key")}
	}
	return k, nil
}

// DescribeKey implements keystore.KMSClient.
func (f *KMS) DescribeKey(_ context.Context, id string) (keystore.KMSKey, error) {
	if _, err := f.key(id); err != nil {
		return keystore.KMSKey{}, err
	}
	return keystore.KMSKey{ARN: id, Spec: f.Spec, Usage: f.Usage, Enabled: true}, nil
}

// PublicKey implements keystore.KMSClient.
func (f *KMS) PublicKey(_ context.Context, id string) ([]byte, error) {
	k, err := f.key(id)
	if err != nil {
		return nil, err
	}
	return keystore.MarshalSPKI(&k.PublicKey)
}

// secp256k1N is the order of secp256k1.
var secp256k1N = crypto.S256().Params().N

// Sign implements keystore.KMSClient.
func (f *KMS) Sign(ctx context.Context, id string, digest []byte) ([]byte, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	fault, delay := f.fault, f.Delay
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
	return keystore.MarshalDERSignature(r, s)
}

// Stats returns the number of Sign calls and the most in flight at once.
func (f *KMS) Stats() (calls, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.maxInFlight
}

// SetFault sets the fault asked before each Sign (nil: none).
func (f *KMS) SetFault(fault func(n int) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

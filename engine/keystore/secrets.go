package keystore

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// The values the KeySealer seals (account keys, idempotency records,
// callback secrets), each bound to what it belongs to, and the secrets the
// service makes (API tokens).

// SealAccountKey seals an account's private key, bound to its address.
func (s *KeySealer) SealAccountKey(addr common.Address, key []byte) ([]byte, error) {
	return s.Seal(PurposeAccountKey, key, addr.Bytes())
}

// OpenAccountKey opens what SealAccountKey returned.
func (s *KeySealer) OpenAccountKey(addr common.Address, sealed []byte) ([]byte, error) {
	return s.Open(PurposeAccountKey, sealed, addr.Bytes())
}

// IdempotencyAdditional binds a sealed idempotency response to its user and
// key.
func IdempotencyAdditional(userID, key string) []byte {
	return []byte("idempotency\x00" + userID + "\x00" + key)
}

// SealIdempotency seals the stored response of (userID, key).
func (s *KeySealer) SealIdempotency(userID, key string, body []byte) ([]byte, error) {
	return s.Seal(PurposeIdempotency, body, IdempotencyAdditional(userID, key))
}

// OpenIdempotency opens what SealIdempotency returned.
func (s *KeySealer) OpenIdempotency(userID, key string, sealed []byte) ([]byte, error) {
	return s.Open(PurposeIdempotency, sealed, IdempotencyAdditional(userID, key))
}

// callbackAdditional binds a sealed callback secret to its user.
func callbackAdditional(userID string) []byte {
	return []byte("callback secret\x00" + userID)
}

// NewCallbackSecret returns a new random callback secret of user userID,
// sealed.
func (s *KeySealer) NewCallbackSecret(userID string) ([]byte, error) {
	secret, err := NewSecret(32)
	if err != nil {
		return nil, err
	}
	return s.SealCallbackSecret(userID, secret)
}

// SealCallbackSecret seals the callback secret of user userID.
func (s *KeySealer) SealCallbackSecret(userID, secret string) ([]byte, error) {
	return s.Seal(PurposeCallbackSecret, []byte(secret), callbackAdditional(userID))
}

// OpenCallbackSecret opens what SealCallbackSecret returned (or a secret
// stored in plain text before, see PlainVersion).
func (s *KeySealer) OpenCallbackSecret(userID string, sealed []byte) (string, error) {
	plain, err := s.Open(PurposeCallbackSecret, sealed, callbackAdditional(userID))
	if err != nil {
		return "", fmt.Errorf("user %s: %w", userID, err)
	}
	return string(plain), nil
}

// NewKey generates a key pair and returns its Key (without account id)
// holding the sealed private key.
func (s *KeySealer) NewKey() (Key, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return Key{}, fmt.Errorf("generate key: %w", err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	sealed, err := s.SealAccountKey(addr, crypto.FromECDSA(key))
	if err != nil {
		return Key{}, err
	}
	return Key{Address: addr, Sealed: sealed}, nil
}

// SignTx signs tx with the account key sealed in key: it opens the key,
// signs, and drops the key.
func (s *KeySealer) SignTx(_ context.Context, key Key, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	plain, err := s.OpenAccountKey(key.Address, key.Sealed)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", key.AccountID, err)
	}
	priv, err := signingKey(plain)
	clear(plain)
	if err != nil {
		return nil, fmt.Errorf("account %s: bad key: %w", key.AccountID, err)
	}
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(chainID), priv)
	if err != nil {
		return nil, fmt.Errorf("account %s: sign: %w", key.AccountID, err)
	}
	return signed, nil
}

// signingKey is the secp256k1 private key of the 32 bytes plain, as far as
// signing uses it: its scalar. crypto.ToECDSA also derives the public key,
// a scalar multiplication that took 60 % of each signature's CPU
// (profile of 1,000 accounts × 10 transfers on the embedded default;
// BenchmarkSignTx), and signing never reads it. The scalar is checked as
// ToECDSA checks it: 1 ≤ d < the curve's order.
func signingKey(plain []byte) (*ecdsa.PrivateKey, error) {
	if len(plain) != 32 {
		return nil, fmt.Errorf("invalid length %d, need 256 bits", len(plain))
	}
	curve := crypto.S256()
	d := new(big.Int).SetBytes(plain)
	if d.Sign() <= 0 || d.Cmp(curve.Params().N) >= 0 {
		return nil, errors.New("invalid private key: not in [1, N)")
	}
	return &ecdsa.PrivateKey{PublicKey: ecdsa.PublicKey{Curve: curve}, D: d}, nil
}

// NewToken returns a random API token (32 bytes of entropy) and its hash.
func NewToken() (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token = "txe_" + hex.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken returns the stored form of an API token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// NewSecret returns a random hex secret of n bytes (callback secrets).
func NewSecret(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

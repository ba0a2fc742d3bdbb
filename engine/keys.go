package engine

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// MasterKeySize is the size of the key that encrypts account keys at rest.
const MasterKeySize = 32

// KeySealer encrypts account private keys with AES-256-GCM under the master
// key. The account address is bound as additional data, so a sealed key
// cannot be moved to another account row.
type KeySealer struct {
	aead cipher.AEAD
}

// NewKeySealer returns a sealer for a 32-byte master key.
func NewKeySealer(masterKey []byte) (*KeySealer, error) {
	if len(masterKey) != MasterKeySize {
		return nil, fmt.Errorf("master key must be %d bytes, got %d", MasterKeySize, len(masterKey))
	}
	block, err := aes.NewCipher(masterKey)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return &KeySealer{aead: aead}, nil
}

// Seal encrypts plain; the result is nonce || ciphertext.
func (s *KeySealer) Seal(plain, additional []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return s.aead.Seal(nonce, nonce, plain, additional), nil
}

// Open decrypts what Seal returned.
func (s *KeySealer) Open(sealed, additional []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("open: sealed key too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, fmt.Errorf("open: wrong master key or corrupted key: %w", err)
	}
	return plain, nil
}

// NewAccount generates a key pair and returns an Account (without id, owner
// or timestamps) holding the sealed private key.
func (s *KeySealer) NewAccount() (*Account, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	sealed, err := s.Seal(crypto.FromECDSA(key), addr.Bytes())
	if err != nil {
		return nil, err
	}
	return &Account{Address: addr, EncryptedKey: sealed}, nil
}

// Signer signs transactions for custodial accounts.
type Signer interface {
	SignTx(ctx context.Context, acct *Account, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error)
}

// SignTx implements Signer: it opens the account key, signs, and drops the key.
func (s *KeySealer) SignTx(_ context.Context, acct *Account, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	plain, err := s.Open(acct.EncryptedKey, acct.Address.Bytes())
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", acct.ID, err)
	}
	key, err := crypto.ToECDSA(plain)
	clear(plain)
	if err != nil {
		return nil, fmt.Errorf("account %s: bad key: %w", acct.ID, err)
	}
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(chainID), key)
	if err != nil {
		return nil, fmt.Errorf("account %s: sign: %w", acct.ID, err)
	}
	return signed, nil
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

package evm

import (
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/crypto"
)

// LoadOrCreateKey reads the hex-encoded secp256k1 private key at path, or, if
// the file does not exist, generates one and writes it there (mode 0600,
// parent directories 0700). It is how the dev chain's faucet key survives
// restarts.
func LoadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, err := crypto.HexToECDSA(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("key file %s: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key file: %w", err)
	}
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("key file %s: generate: %w", path, err)
	}
	if err := writeKey(path, key); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created it in the meantime: use theirs.
			return LoadOrCreateKey(path)
		}
		return nil, err
	}
	return key, nil
}

// writeKey writes key as hex to a temporary file, syncs it and links it to
// path, so that path appears complete or not at all, and never replaces an
// existing file (fs.ErrExist).
func writeKey(path string, key *ecdsa.PrivateKey) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".key-*") // mode 0600
	if err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(hex.EncodeToString(crypto.FromECDSA(key)) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("key file %s: write: %w", path, err)
	}
	return nil
}

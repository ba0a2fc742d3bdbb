// Package keystore keeps txengine's keys: the keyring that seals account
// keys, idempotency records and callback secrets at rest (KeySealer), its
// rotation (RotateKeys), accounts whose key lives in AWS KMS (KMSSigner,
// over a KMSClient such as keystore/awskms) and the signer of every
// account wherever its key lives (Custody). It knows nothing of the
// engine's accounts: it signs for a Key.
package keystore

import "github.com/ethereum/go-ethereum/common"

// Key is what custody knows of an account: its id (errors name it), its
// address, and where its private key lives: sealed by a KeySealer
// (Sealed), or in AWS KMS (KMSKeyID, Sealed empty).
type Key struct {
	AccountID string
	Address   common.Address
	// Sealed is the account's private key sealed by a KeySealer.
	Sealed []byte
	// KMSKeyID is the ARN of the account's key in KMS.
	KMSKeyID string
}

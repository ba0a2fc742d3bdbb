package engine

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine/keystore"
)

// Signer signs transactions for custodial accounts: keystore.Custody in
// production (keystore.KeySealer and keystore.KMSSigner sign alone).
type Signer interface {
	SignTx(ctx context.Context, key keystore.Key, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error)
}

// ConcurrentSigner is a Signer that may sign several transactions of one
// account at once (keystore.Custody): the sender signs a batch with up to
// SignConcurrency calls in flight.
type ConcurrentSigner interface {
	SignConcurrency(key keystore.Key) int
}

// Key is what custody knows of the account: its id, address and where its
// key lives.
func (a *Account) Key() keystore.Key {
	return keystore.Key{AccountID: a.ID, Address: a.Address, Sealed: a.EncryptedKey, KMSKeyID: a.KMSKeyID}
}

// NewLocalAccount generates a key pair and returns an Account (without id,
// owner or timestamps) holding the private key sealed by s.
func NewLocalAccount(s *keystore.KeySealer) (*Account, error) {
	k, err := s.NewKey()
	if err != nil {
		return nil, err
	}
	return &Account{Address: k.Address, EncryptedKey: k.Sealed}, nil
}

// NewKMSAccount creates a key in KMS through k and returns an Account
// (without id, owner or timestamps) that signs with it. A KMS that does
// not answer is unavailable; a key refused is invalid_argument on
// custody.keyId.
func NewKMSAccount(ctx context.Context, k *keystore.KMSSigner, description string) (*Account, error) {
	key, err := k.NewKey(ctx, description)
	if err != nil {
		return nil, KeyError(err)
	}
	return &Account{Address: key.Address, KMSKeyID: key.KMSKeyID}, nil
}

// AttachKMSKey returns an Account (without id, owner or timestamps) that
// signs with the existing KMS key keyID (a key id, ARN or alias), which
// must be enabled, ECC_SECG_P256K1 and SIGN_VERIFY. Bad keys are
// invalid_argument on field custody.keyId; a KMS that does not answer is
// unavailable.
func AttachKMSKey(ctx context.Context, k *keystore.KMSSigner, keyID string) (*Account, error) {
	key, err := k.AttachKey(ctx, keyID)
	if err != nil {
		return nil, KeyError(err)
	}
	return &Account{Address: key.Address, KMSKeyID: key.KMSKeyID}, nil
}

// KeyError maps a *keystore.KeyError to the engine's error:
// invalid_argument on keystore.KeyField with its message, or unavailable
// with its message wrapping the KMS error. Any other error is returned
// unchanged.
func KeyError(err error) error {
	var ke *keystore.KeyError
	if !errors.As(err, &ke) {
		return err
	}
	if ke.Invalid {
		return &Error{Code: CodeInvalidArgument, Field: keystore.KeyField, Message: ke.Message}
	}
	return fmt.Errorf("%w: %w", &Error{Code: CodeUnavailable, Message: ke.Message}, ke.Err)
}

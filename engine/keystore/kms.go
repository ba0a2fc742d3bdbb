package keystore

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"time"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/internal/settings"
)

// Accounts whose key lives in AWS KMS (docs/kms.md). The keystore speaks to
// KMS through KMSClient, which keystore/awskms implements with the AWS SDK,
// so neither the keystore nor the engine depends on it.

// KMS key properties an account's key must have.
const (
	// KMSKeySpec is the key spec of an Ethereum key in KMS.
	KMSKeySpec = "ECC_SECG_P256K1"
	// KMSKeyUsage is the key usage it must have.
	KMSKeyUsage = "SIGN_VERIFY"
)

// KMSKey describes a KMS key (DescribeKey).
type KMSKey struct {
	// ARN is the key's ARN, which names it in every later call.
	ARN string
	// Spec (KeySpec) and Usage (KeyUsage) as KMS says them.
	Spec, Usage string
	// Enabled is whether the key's state is Enabled.
	Enabled bool
}

// KMSClient is the part of AWS KMS the keystore uses. Its errors are
// *KMSError, which say what kind of fault each is.
type KMSClient interface {
	// CreateKey creates a secp256k1 signing key (KMSKeySpec, KMSKeyUsage)
	// and returns its ARN.
	CreateKey(ctx context.Context, description string) (string, error)
	// DescribeKey describes the key named by a key id, ARN or alias.
	DescribeKey(ctx context.Context, keyID string) (KMSKey, error)
	// PublicKey returns the key's public key as a DER SubjectPublicKeyInfo.
	PublicKey(ctx context.Context, keyID string) ([]byte, error)
	// Sign signs a 32-byte digest (ECDSA_SHA_256, message type DIGEST)
	// and returns the DER signature.
	Sign(ctx context.Context, keyID string, digest []byte) ([]byte, error)
}

// KMSFault says what kind of fault a KMS error is.
type KMSFault int

// The faults of KMS.
const (
	// KMSUnavailable: no answer, a transport failure or a KMS internal
	// error; the call may succeed later (the account is held meanwhile).
	KMSUnavailable KMSFault = iota
	// KMSThrottled: KMS refused the call for its request quota; retried
	// with backoff.
	KMSThrottled
	// KMSDenied: the service's credentials may not use the key, or the
	// key is disabled or pending deletion; a transaction fails with
	// TxKeyAccessDenied.
	KMSDenied
	// KMSNotFound: no such key or alias.
	KMSNotFound
	// KMSInvalid: KMS refused the request as invalid (e.g. a key whose
	// usage does not allow signing).
	KMSInvalid
)

// String names the fault.
func (f KMSFault) String() string {
	switch f {
	case KMSThrottled:
		return "throttled"
	case KMSDenied:
		return "access denied"
	case KMSNotFound:
		return "not found"
	case KMSInvalid:
		return "invalid request"
	}
	return "unavailable"
}

// KMSError is an error of a KMS call.
type KMSError struct {
	Fault KMSFault
	// Op is the KMS operation (Sign, DescribeKey...).
	Op  string
	Err error
}

// Error implements error.
func (e *KMSError) Error() string {
	return fmt.Sprintf("KMS %s: %s: %v", e.Op, e.Fault, e.Err)
}

// Unwrap returns the cause.
func (e *KMSError) Unwrap() error { return e.Err }

// KMSFaultOf returns the fault of a KMS error in err's chain; an error
// that is not one (a deadline, a cancelled call) is KMSUnavailable.
func KMSFaultOf(err error) KMSFault {
	var e *KMSError
	if errors.As(err, &e) {
		return e.Fault
	}
	return KMSUnavailable
}

// IsKMSError reports whether err's chain holds a *KMSError.
func IsKMSError(err error) bool {
	var e *KMSError
	return errors.As(err, &e)
}

// KMSOptions tunes a KMSSigner.
type KMSOptions struct {
	// Concurrency bounds the Sign calls in flight, over every account.
	Concurrency int
	// CallTimeout bounds each KMS call.
	CallTimeout time.Duration
	// Retries is how many times a throttled Sign is tried again.
	Retries int
	// Backoff is the first pause after a throttled call; it doubles at
	// each retry (with jitter).
	Backoff time.Duration
}

// DefaultKMSOptions returns 32 Sign calls in flight, 5 s per KMS call, no
// retry of a throttled Sign, and 50 ms before the first retry when
// Retries is set.
func DefaultKMSOptions() KMSOptions {
	return KMSOptions{Concurrency: 32, CallTimeout: 5 * time.Second, Backoff: 50 * time.Millisecond}
}

// withDefaults gives the zero (or negative) fields of o the values of
// DefaultKMSOptions; negative Retries are none.
func (o KMSOptions) withDefaults() KMSOptions {
	d := DefaultKMSOptions()
	if o.Concurrency < 1 {
		o.Concurrency = d.Concurrency
	}
	o.CallTimeout = settings.Positive(o.CallTimeout, d.CallTimeout)
	o.Backoff = settings.Positive(o.Backoff, d.Backoff)
	if o.Retries < 0 {
		o.Retries = 0
	}
	return o
}

// Validate names the first negative field of o (zero takes the default).
func (o KMSOptions) Validate() error {
	if err := settings.NonNegative(
		settings.F("Concurrency", o.Concurrency),
		settings.F("CallTimeout", o.CallTimeout),
		settings.F("Retries", o.Retries),
		settings.F("Backoff", o.Backoff),
	); err != nil {
		return fmt.Errorf("kms options: %w", err)
	}
	return nil
}

// KMSSigner signs the transactions of accounts whose key lives in KMS
// (Key.KMSKeyID) and creates or attaches such keys.
type KMSSigner struct {
	client KMSClient
	opts   KMSOptions
	// slots bounds the Sign calls in flight (opts.Concurrency).
	slots chan struct{}
}

// NewKMSSigner returns the signer of KMS accounts through client.
func NewKMSSigner(client KMSClient, opts KMSOptions) *KMSSigner {
	opts = opts.withDefaults()
	return &KMSSigner{client: client, opts: opts, slots: make(chan struct{}, opts.Concurrency)}
}

// Concurrency is the bound of Sign calls in flight.
func (k *KMSSigner) Concurrency() int { return k.opts.Concurrency }

// SignTx signs tx for an account whose key is in KMS: the transaction's
// signing hash goes to KMS Sign, and the DER signature comes back as
// Ethereum's, checked to recover the account's address.
func (k *KMSSigner) SignTx(ctx context.Context, key Key, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	if key.KMSKeyID == "" {
		return nil, fmt.Errorf("account %s: its key is not in KMS", key.AccountID)
	}
	signer := types.LatestSignerForChainID(chainID)
	h := signer.Hash(tx)
	der, err := k.sign(ctx, key.KMSKeyID, h[:])
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", key.AccountID, err)
	}
	sig, err := EthereumSignature(h[:], der, key.Address)
	if err != nil {
		return nil, fmt.Errorf("account %s: KMS key %s: %w", key.AccountID, key.KMSKeyID, err)
	}
	signed, err := tx.WithSignature(signer, sig)
	if err != nil {
		return nil, fmt.Errorf("account %s: %w", key.AccountID, err)
	}
	return signed, nil
}

// sign calls KMS Sign within the concurrency bound, each call within
// CallTimeout, trying a throttled call again after a backoff.
func (k *KMSSigner) sign(ctx context.Context, keyID string, digest []byte) ([]byte, error) {
	select {
	case k.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &KMSError{Fault: KMSUnavailable, Op: "Sign", Err: ctx.Err()}
	}
	defer func() { <-k.slots }()
	pause := k.opts.Backoff
	for attempt := 0; ; attempt++ {
		der, err := k.call(ctx, func(ctx context.Context) ([]byte, error) { return k.client.Sign(ctx, keyID, digest) })
		if err == nil || KMSFaultOf(err) != KMSThrottled || attempt >= k.opts.Retries {
			return der, err
		}
		wait := pause/2 + rand.N(pause) // jitter: [pause/2, 3·pause/2)
		pause *= 2
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// call runs one KMS call within CallTimeout; a call that ran out of time
// is KMSUnavailable.
func (k *KMSSigner) call(ctx context.Context, f func(context.Context) ([]byte, error)) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, k.opts.CallTimeout)
	defer cancel()
	out, err := f(cctx)
	if err != nil && !IsKMSError(err) {
		err = &KMSError{Fault: KMSUnavailable, Op: "Sign", Err: err}
	}
	return out, err
}

// NewKey creates a key in KMS and returns the Key (without account id)
// that signs with it.
func (k *KMSSigner) NewKey(ctx context.Context, description string) (Key, error) {
	cctx, cancel := context.WithTimeout(ctx, k.opts.CallTimeout)
	arn, err := k.client.CreateKey(cctx, description)
	cancel()
	if err != nil {
		return Key{}, kmsRequestError("create a key", err)
	}
	return k.AttachKey(ctx, arn)
}

// AttachKey returns the Key (without account id) that signs with the
// existing KMS key keyID (a key id, ARN or alias): the key must be enabled,
// ECC_SECG_P256K1 and SIGN_VERIFY. Bad keys are an Invalid *KeyError (the
// API's invalid_argument on field KeyField); a KMS that does not answer is
// a *KeyError that is not Invalid (unavailable).
func (k *KMSSigner) AttachKey(ctx context.Context, keyID string) (Key, error) {
	cctx, cancel := context.WithTimeout(ctx, k.opts.CallTimeout)
	defer cancel()
	key, err := k.client.DescribeKey(cctx, keyID)
	if err != nil {
		return Key{}, kmsRequestError("key "+keyID, err)
	}
	switch {
	case key.Spec != KMSKeySpec:
		return Key{}, invalidKey("KMS key %s has key spec %s; an Ethereum account needs %s", keyID, key.Spec, KMSKeySpec)
	case key.Usage != KMSKeyUsage:
		return Key{}, invalidKey("KMS key %s has key usage %s; an Ethereum account needs %s", keyID, key.Usage, KMSKeyUsage)
	case !key.Enabled:
		return Key{}, invalidKey("KMS key %s is not enabled", keyID)
	}
	der, err := k.client.PublicKey(cctx, key.ARN)
	if err != nil {
		return Key{}, kmsRequestError("key "+keyID, err)
	}
	addr, err := AddressFromSPKI(der)
	if err != nil {
		return Key{}, invalidKey("KMS key %s: %v", keyID, err)
	}
	return Key{Address: addr, KMSKeyID: key.ARN}, nil
}

// KeyField is the request field that names a KMS key.
const KeyField = "custody.keyId"

// KeyError is the fault of a request that creates or attaches a KMS key:
// the caller's (Invalid: no such key, a key that cannot sign for Ethereum,
// refused; the API's invalid_argument on KeyField) or KMS's (it did not
// answer: the API's unavailable, Err says why). Message is safe to show to
// the caller; the engine maps it to its own error.
type KeyError struct {
	Invalid bool
	Message string
	// Err is the KMS error behind an error that is not Invalid.
	Err error
}

// Error implements error.
func (e *KeyError) Error() string {
	if e.Invalid {
		return fmt.Sprintf("%s (field %s)", e.Message, KeyField)
	}
	return fmt.Sprintf("%s: %v", e.Message, e.Err)
}

// Unwrap returns the KMS error behind it.
func (e *KeyError) Unwrap() error { return e.Err }

// invalidKey returns an Invalid *KeyError.
func invalidKey(format string, args ...any) *KeyError {
	return &KeyError{Invalid: true, Message: fmt.Sprintf(format, args...)}
}

// kmsRequestError is the *KeyError of a KMS failure while a key is
// created or attached (what): the caller's fault is Invalid, the KMS's
// not.
func kmsRequestError(what string, err error) error {
	switch KMSFaultOf(err) {
	case KMSNotFound:
		return invalidKey("%s: no such KMS key or alias", what)
	case KMSDenied:
		return invalidKey("%s: the service may not use this KMS key (access denied, disabled or pending deletion)", what)
	case KMSInvalid:
		return invalidKey("%s: KMS refused the request: %v", what, errors.Unwrap(err))
	}
	return &KeyError{Message: fmt.Sprintf("KMS did not answer (%s); try again", what), Err: err}
}

// Custody signs each account's transactions where its key lives: in KMS
// when the account names a KMS key, else with its key sealed by the local
// KeySealer. KMS may be nil (not configured): a KMS account's transactions
// then wait, as for a KMS that does not answer.
type Custody struct {
	Local *KeySealer
	KMS   *KMSSigner
}

// SignTx signs tx with key, wherever it lives.
func (c *Custody) SignTx(ctx context.Context, key Key, tx *types.Transaction, chainID *big.Int) (*types.Transaction, error) {
	if key.KMSKeyID == "" {
		return c.Local.SignTx(ctx, key, tx, chainID)
	}
	if c.KMS == nil {
		return nil, fmt.Errorf("account %s: %w", key.AccountID, &KMSError{Fault: KMSUnavailable, Op: "Sign", Err: errors.New("its key is in KMS and kms is not configured")})
	}
	return c.KMS.SignTx(ctx, key, tx, chainID)
}

// SignConcurrency is how many transactions of key's account may be signed
// at once: the KMS bound for a key in KMS, 1 (sequential) for a local key.
func (c *Custody) SignConcurrency(key Key) int {
	if key.KMSKeyID != "" && c.KMS != nil {
		return c.KMS.Concurrency()
	}
	return 1
}

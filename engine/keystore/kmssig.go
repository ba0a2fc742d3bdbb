package keystore

import (
	"crypto/ecdsa"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// The conversions between what AWS KMS speaks (DER ECDSA signatures,
// SubjectPublicKeyInfo public keys) and what Ethereum signs with
// ([R || S || V], 65 bytes, low S; the address of the public key).

// secp256k1N is the order of secp256k1, and secp256k1HalfN half of it.
var (
	secp256k1N     = crypto.S256().Params().N
	secp256k1HalfN = new(big.Int).Rsh(secp256k1N, 1)
)

// The object identifiers of an elliptic-curve public key on secp256k1
// (RFC 5480, SEC 2).
var (
	oidECPublicKey = asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}
	oidSecp256k1   = asn1.ObjectIdentifier{1, 3, 132, 0, 10}
)

// derSignature is an ECDSA signature as DER (RFC 3279): SEQUENCE { r, s }.
type derSignature struct {
	R, S *big.Int
}

// ParseDERSignature returns r and s of a DER ECDSA signature on secp256k1,
// s brought to the lower half of the curve order (s and n - s are both
// valid; Ethereum accepts the low one only, EIP-2).
func ParseDERSignature(der []byte) (r, s *big.Int, err error) {
	var sig derSignature
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil {
		return nil, nil, fmt.Errorf("DER signature: %w", err)
	}
	if len(rest) != 0 {
		return nil, nil, fmt.Errorf("DER signature: %d bytes after the signature", len(rest))
	}
	for _, v := range []*big.Int{sig.R, sig.S} {
		if v == nil || v.Sign() <= 0 || v.Cmp(secp256k1N) >= 0 {
			return nil, nil, errors.New("DER signature: r or s out of range")
		}
	}
	if sig.S.Cmp(secp256k1HalfN) > 0 {
		sig.S.Sub(secp256k1N, sig.S)
	}
	return sig.R, sig.S, nil
}

// EthereumSignature turns the DER signature der of digest (32 bytes) into
// Ethereum's [R || S || V] (V 0 or 1, S low), V being the recovery id under
// which the signature recovers addr. A signature that recovers addr under
// neither was made by another key: an error.
func EthereumSignature(digest, der []byte, addr common.Address) ([]byte, error) {
	if len(digest) != 32 {
		return nil, fmt.Errorf("digest of %d bytes, want 32", len(digest))
	}
	r, s, err := ParseDERSignature(der)
	if err != nil {
		return nil, err
	}
	sig := make([]byte, crypto.SignatureLength)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:64])
	for v := byte(0); v < 2; v++ {
		sig[64] = v
		pub, err := crypto.SigToPub(digest, sig)
		if err == nil && crypto.PubkeyToAddress(*pub) == addr {
			return sig, nil
		}
	}
	return nil, fmt.Errorf("the signature does not recover %s: made by another key", addr.Hex())
}

// spki is an X.509 SubjectPublicKeyInfo with EC parameters naming a curve.
type spki struct {
	Algorithm struct {
		Algorithm  asn1.ObjectIdentifier
		Parameters asn1.ObjectIdentifier
	}
	PublicKey asn1.BitString
}

// PublicKeyFromSPKI returns the secp256k1 public key of a DER
// SubjectPublicKeyInfo (what KMS GetPublicKey returns); any other key is
// an error.
func PublicKeyFromSPKI(der []byte) (*ecdsa.PublicKey, error) {
	var info spki
	rest, err := asn1.Unmarshal(der, &info)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	if len(rest) != 0 {
		return nil, errors.New("public key: trailing bytes")
	}
	if !info.Algorithm.Algorithm.Equal(oidECPublicKey) || !info.Algorithm.Parameters.Equal(oidSecp256k1) {
		return nil, fmt.Errorf("public key: not an elliptic-curve key on secp256k1 (algorithm %v, curve %v)",
			info.Algorithm.Algorithm, info.Algorithm.Parameters)
	}
	pub, err := crypto.UnmarshalPubkey(info.PublicKey.RightAlign())
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return pub, nil
}

// MarshalSPKI returns the DER SubjectPublicKeyInfo of a secp256k1 public
// key (the inverse of PublicKeyFromSPKI; fakes of KMS use it).
func MarshalSPKI(pub *ecdsa.PublicKey) ([]byte, error) {
	var info spki
	info.Algorithm.Algorithm = oidECPublicKey
	info.Algorithm.Parameters = oidSecp256k1
	point := crypto.FromECDSAPub(pub)
	info.PublicKey = asn1.BitString{Bytes: point, BitLength: 8 * len(point)}
	der, err := asn1.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return der, nil
}

// MarshalDERSignature returns r and s as a DER signature (fakes of KMS
// use it; s is kept as given, high or low).
func MarshalDERSignature(r, s *big.Int) ([]byte, error) {
	der, err := asn1.Marshal(derSignature{R: r, S: s})
	if err != nil {
		return nil, fmt.Errorf("DER signature: %w", err)
	}
	return der, nil
}

// AddressFromSPKI is the Ethereum address of the public key in der.
func AddressFromSPKI(der []byte) (common.Address, error) {
	pub, err := PublicKeyFromSPKI(der)
	if err != nil {
		return common.Address{}, err
	}
	return crypto.PubkeyToAddress(*pub), nil
}

package keystore

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
)

// TestEthereumSignatureMatchesGeth: a DER signature of a digest, as KMS
// returns it (s high or low, r and s of any length), becomes exactly what
// go-ethereum's crypto.Sign makes of the same digest with the same key:
// same R, low S, same V, recovering the same address. Among the digests
// some have an r or an s with leading zero bytes (shorter than 32 bytes
// in DER) and some an r whose high bit is set (a 0x00 prefix in DER).
func TestEthereumSignatureMatchesGeth(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	var shortR, shortS, highBitR, highS int
	for i := 0; i < 3000 || shortR == 0 || shortS == 0; i++ {
		if i > 100000 {
			t.Fatalf("no short r or s in %d signatures", i)
		}
		digest := make([]byte, 32)
		rand.Read(digest)
		want, err := crypto.Sign(digest, key)
		if err != nil {
			t.Fatal(err)
		}
		r, s := new(big.Int).SetBytes(want[:32]), new(big.Int).SetBytes(want[32:64])
		if want[0] == 0 {
			shortR++
		}
		if want[32] == 0 {
			shortS++
		}
		if want[0]&0x80 != 0 {
			highBitR++
		}
		// KMS may return either s: the high one half of the time.
		for _, sv := range []*big.Int{s, new(big.Int).Sub(secp256k1N, s)} {
			if sv.Cmp(secp256k1HalfN) > 0 {
				highS++
			}
			der, err := MarshalDERSignature(r, sv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EthereumSignature(digest, der, addr)
			if err != nil {
				t.Fatalf("digest %x: %v", digest, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("digest %x: got %x, go-ethereum signs %x", digest, got, want)
			}
			if !crypto.ValidateSignatureValues(got[64], r, new(big.Int).SetBytes(got[32:64]), true) {
				t.Fatalf("digest %x: not a valid low-s signature", digest)
			}
			pub, err := crypto.SigToPub(digest, got)
			if err != nil || crypto.PubkeyToAddress(*pub) != addr {
				t.Fatalf("digest %x: recovers %v, %v", digest, pub, err)
			}
		}
	}
	if highBitR == 0 || highS == 0 {
		t.Fatalf("edge cases not met: high-bit r %d, high s %d", highBitR, highS)
	}
	t.Logf("short r %d, short s %d, high-bit r %d, high s converted %d", shortR, shortS, highBitR, highS)
}

// TestEthereumSignatureRefusals: a signature of another key, bytes after
// the DER, r or s out of range and a digest of the wrong size are errors.
func TestEthereumSignatureRefusals(t *testing.T) {
	key, _ := crypto.GenerateKey()
	other, _ := crypto.GenerateKey()
	digest := crypto.Keccak256([]byte("tx"))
	sig, _ := crypto.Sign(digest, key)
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:64])
	der, _ := MarshalDERSignature(r, s)
	if _, err := EthereumSignature(digest, der, crypto.PubkeyToAddress(other.PublicKey)); err == nil {
		t.Error("a signature by another key was accepted")
	}
	if _, err := EthereumSignature(digest, append(bytes.Clone(der), 0), crypto.PubkeyToAddress(key.PublicKey)); err == nil {
		t.Error("trailing bytes were accepted")
	}
	if _, err := EthereumSignature(digest[:31], der, crypto.PubkeyToAddress(key.PublicKey)); err == nil {
		t.Error("a 31-byte digest was accepted")
	}
	for _, bad := range [][2]*big.Int{{big.NewInt(0), s}, {r, big.NewInt(0)}, {r, secp256k1N}, {secp256k1N, s}} {
		d, _ := MarshalDERSignature(bad[0], bad[1])
		if _, _, err := ParseDERSignature(d); err == nil {
			t.Errorf("r %v s %v accepted", bad[0], bad[1])
		}
	}
	// A non-minimal integer (a needless 0x00) is not DER.
	nonMinimal := []byte{0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01}
	if _, _, err := ParseDERSignature(nonMinimal); err == nil {
		t.Error("a non-minimal DER integer was accepted")
	}
}

// TestPublicKeyFromSPKI: the SubjectPublicKeyInfo of a secp256k1 key gives
// its address; a P-256 key's is refused.
func TestPublicKeyFromSPKI(t *testing.T) {
	key, _ := crypto.GenerateKey()
	der, err := MarshalSPKI(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := AddressFromSPKI(der)
	if err != nil || addr != crypto.PubkeyToAddress(key.PublicKey) {
		t.Fatalf("address %s, %v; want %s", addr.Hex(), err, crypto.PubkeyToAddress(key.PublicKey).Hex())
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pdur, err := x509.MarshalPKIXPublicKey(&p256.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PublicKeyFromSPKI(pdur); err == nil {
		t.Error("a P-256 key was accepted")
	}
	if _, err := PublicKeyFromSPKI(der[:len(der)-1]); err == nil {
		t.Error("a truncated key was accepted")
	}
}

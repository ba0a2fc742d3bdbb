package keystore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// testMaster returns a 32-byte master key filled with b.
func testMaster(b byte) []byte { return bytes.Repeat([]byte{b}, MasterKeySize) }

// mustSealer returns the keyring of current and previous.
func mustSealer(t *testing.T, current []byte, previous ...[]byte) *KeySealer {
	t.Helper()
	s, err := NewKeySealer(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// legacySeal seals as txengine did before key versions: nonce || AES-GCM
// under the raw master key.
func legacySeal(t *testing.T, master, plain, additional []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(master)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	return aead.Seal(nonce, nonce, plain, additional)
}

func TestKeySealerFormatAndKeyID(t *testing.T) {
	a := mustSealer(t, testMaster(1))
	addr := common.Address{1}
	sealed, err := a.SealAccountKey(addr, []byte("secret key"))
	if err != nil {
		t.Fatal(err)
	}
	// The key id is HKDF(master, "txengine key id")[:4], not the key.
	want, err := hkdf.Key(sha256.New, testMaster(1), nil, "txengine key id", KeyIDSize)
	if err != nil {
		t.Fatal(err)
	}
	if id := a.CurrentKeyID(); !bytes.Equal(id[:], want) {
		t.Fatalf("key id %s, want %x", id, want)
	}
	if sealed[0] != SealVersion || !bytes.Equal(sealed[1:5], want) {
		t.Fatalf("header %x, want version %d and key id %x", sealed[:5], SealVersion, want)
	}
	if id, ok := SealedKeyID(sealed); !ok || id != a.CurrentKeyID() {
		t.Fatalf("SealedKeyID = %s %v", id, ok)
	}
	if len(sealed) != 1+4+12+len("secret key")+16 {
		t.Fatalf("sealed length %d", len(sealed))
	}
	if bytes.Contains(sealed, []byte("secret key")) {
		t.Fatal("sealed value holds the plain text")
	}
	b := mustSealer(t, testMaster(2))
	if a.CurrentKeyID() == b.CurrentKeyID() {
		t.Fatal("two master keys share a key id")
	}
	plain, state, err := a.open(PurposeAccountKey, sealed, addr.Bytes())
	if err != nil || string(plain) != "secret key" || state != SealedCurrent {
		t.Fatalf("open = %q %v %v", plain, state, err)
	}
}

func TestKeySealerWrongKeyAndPrevious(t *testing.T) {
	old := mustSealer(t, testMaster(1))
	sealed, err := old.SealIdempotency("u1", "k1", []byte(`{"data":1}`))
	if err != nil {
		t.Fatal(err)
	}
	other := mustSealer(t, testMaster(2))
	if _, err := other.OpenIdempotency("u1", "k1", sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("open under another master key: %v, want ErrUnknownKey", err)
	}
	// The new master with the old one as previous opens it, says so, and
	// seals under the new one.
	ring := mustSealer(t, testMaster(2), testMaster(1))
	plain, state, err := ring.open(PurposeIdempotency, sealed, IdempotencyAdditional("u1", "k1"))
	if err != nil || string(plain) != `{"data":1}` || state != SealedPrevious {
		t.Fatalf("open under the previous key = %q %v %v", plain, state, err)
	}
	again, err := ring.SealIdempotency("u1", "k1", plain)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := SealedKeyID(again); id != other.CurrentKeyID() {
		t.Fatalf("sealed under %s, want the current key %s", id, other.CurrentKeyID())
	}
	if _, err := other.OpenIdempotency("u1", "k1", again); err != nil {
		t.Fatalf("the new key alone does not open what the ring sealed: %v", err)
	}
	if _, err := old.OpenIdempotency("u1", "k1", again); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the old key opens a value sealed under the new: %v", err)
	}
	if ids := ring.KeyIDs(); len(ids) != 2 || ids[0] != other.CurrentKeyID() || ids[1] != old.CurrentKeyID() {
		t.Fatalf("key ids %v", ids)
	}
}

func TestKeySealerPurposesAndAdditionalData(t *testing.T) {
	s := mustSealer(t, testMaster(3))
	sealed, err := s.SealCallbackSecret("u1", "cb-secret")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.OpenCallbackSecret("u1", sealed); err != nil || got != "cb-secret" {
		t.Fatalf("open = %q %v", got, err)
	}
	if _, err := s.OpenCallbackSecret("u2", sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("another user's row opens the secret: %v", err)
	}
	// Another purpose's key does not open it, even with the same additional data.
	if _, err := s.Open(PurposeIdempotency, sealed, callbackAdditional("u1")); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("the idempotency key opens a callback secret: %v", err)
	}
	acct, err := s.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenAccountKey(common.Address{9}, acct.Sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("an account key opens for another address: %v", err)
	}
}

func TestKeySealerTamper(t *testing.T) {
	s := mustSealer(t, testMaster(4), testMaster(5))
	addr := common.Address{4}
	sealed, err := s.SealAccountKey(addr, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := s.OpenAccountKey(addr, bad); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("byte %d flipped: %v, want ErrUnknownKey", i, err)
		}
	}
	// The header is bound: naming the previous key (or another version)
	// does not open under it.
	bad := bytes.Clone(sealed)
	prev := mustSealer(t, testMaster(5)).CurrentKeyID()
	copy(bad[1:5], prev[:])
	if _, err := s.OpenAccountKey(addr, bad); err == nil {
		t.Error("a value whose key id was changed opens")
	}
	for _, short := range [][]byte{nil, {SealVersion}, sealed[:10]} {
		if _, err := s.OpenAccountKey(addr, short); !errors.Is(err, ErrUnknownKey) {
			t.Errorf("%x: %v", short, err)
		}
	}
}

func TestKeySealerLegacyAndPlain(t *testing.T) {
	addr := common.Address{7}
	legacy := legacySeal(t, testMaster(6), []byte("old key"), addr.Bytes())
	// Under the same master (now current) and as a previous key.
	for name, s := range map[string]*KeySealer{
		"current":  mustSealer(t, testMaster(6)),
		"previous": mustSealer(t, testMaster(8), testMaster(6)),
	} {
		plain, state, err := s.open(PurposeAccountKey, legacy, addr.Bytes())
		if err != nil || string(plain) != "old key" || state != SealedLegacy {
			t.Errorf("%s: legacy open = %q %v %v", name, plain, state, err)
		}
	}
	if _, err := mustSealer(t, testMaster(8)).OpenAccountKey(addr, legacy); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a legacy value opens under an unknown master: %v", err)
	}
	legacyIdem := legacySeal(t, testMaster(6), []byte("body"), IdempotencyAdditional("u", "k"))
	if got, err := mustSealer(t, testMaster(6)).OpenIdempotency("u", "k", legacyIdem); err != nil || string(got) != "body" {
		t.Errorf("legacy idempotency record = %q %v", got, err)
	}
	// A callback secret stored in plain text before (migration 0012).
	s := mustSealer(t, testMaster(6))
	plain, state, err := s.open(PurposeCallbackSecret, append([]byte{PlainVersion}, "abc"...), callbackAdditional("u"))
	if err != nil || string(plain) != "abc" || state != SealedPlain {
		t.Errorf("plain callback secret = %q %v %v", plain, state, err)
	}
	// Plain is a callback-secret form only: an account key never reads as plain.
	if _, err := s.OpenAccountKey(addr, append([]byte{PlainVersion}, make([]byte, 40)...)); err == nil {
		t.Error("an account key opened as plain text")
	}
}

func TestKeySealerReloadsForUnknownKeyID(t *testing.T) {
	s := mustSealer(t, testMaster(1))
	next := mustSealer(t, testMaster(2), testMaster(1))
	sealed, err := next.SealCallbackSecret("u", "s")
	if err != nil {
		t.Fatal(err)
	}
	reloads := 0
	s.SetReload(func() {
		reloads++
		if err := s.Replace(testMaster(2), testMaster(1)); err != nil {
			t.Error(err)
		}
	})
	if got, err := s.OpenCallbackSecret("u", sealed); err != nil || got != "s" || reloads != 1 {
		t.Fatalf("open after a reload = %q, %v (%d reloads)", got, err, reloads)
	}
	if s.CurrentKeyID() != next.CurrentKeyID() {
		t.Fatal("the reload did not replace the keys")
	}
	// A value under a key nobody knows: no reload within a second, and
	// known ids or values without a header never reload.
	stranger, err := mustSealer(t, testMaster(3)).SealCallbackSecret("u", "x")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.OpenCallbackSecret("u", stranger); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("open under an unknown key: %v", err)
		}
	}
	if _, err := s.OpenCallbackSecret("v", sealed); err == nil {
		t.Fatal("opened for another user")
	}
	if reloads != 1 {
		t.Fatalf("%d reloads, want 1 (at most once a second, never for a known key id)", reloads)
	}
}

func TestKeySealerAdoptKeepsKeys(t *testing.T) {
	s := mustSealer(t, testMaster(1))
	sealed, err := s.SealAccountKey(common.Address{1}, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	// A new current key without the old one among the previous: adopted,
	// and the old one still opens.
	if err := s.Adopt(testMaster(2)); err != nil {
		t.Fatal(err)
	}
	if s.CurrentKeyID() != mustSealer(t, testMaster(2)).CurrentKeyID() {
		t.Fatal("not adopted")
	}
	if _, err := s.OpenAccountKey(common.Address{1}, sealed); err != nil {
		t.Fatalf("a key the ring knew is forgotten: %v", err)
	}
	if ids := s.KeyIDs(); len(ids) != 2 || !s.Knows(ids...) || s.Knows(mustSealer(t, testMaster(3)).CurrentKeyID()) {
		t.Fatalf("key ids %v", ids)
	}
	// Replace forgets.
	if err := s.Replace(testMaster(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenAccountKey(common.Address{1}, sealed); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Replace kept the old key: %v", err)
	}
}

package keystore

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// MasterKeySize is the size of a master key.
const MasterKeySize = 32

// Key versions: every value a KeySealer seals starts with a header,
//
//	version (1 byte, SealVersion) || key id (4 bytes) || nonce (12) || AES-256-GCM ciphertext
//
// where the key id names the master key whose purpose key (HKDF-SHA256 of
// the master, one per Purpose) sealed it, and the header is bound as
// additional data with the caller's (the account address, the user id and
// idempotency key, the user id). Values sealed before key versions
// (nonce || ciphertext under the raw master key, no header) still open
// under any known master key: they are "legacy", and `txengine keys rotate`
// seals them again. A callback secret stored before it was encrypted reads
// as PlainVersion || secret.
const (
	// SealVersion is the version byte of the current format.
	SealVersion byte = 1
	// PlainVersion marks a callback secret stored in plain text before
	// callback secrets were sealed (migration 0012 prefixes it).
	PlainVersion byte = 0
)

// sealHeaderSize is the version byte and the key id.
const sealHeaderSize = 1 + KeyIDSize

// KeyIDSize is the size of a key id.
const KeyIDSize = 4

// KeyID names a master key without revealing it: the first 4 bytes of
// HKDF-SHA256(master, info "txengine key id").
type KeyID [KeyIDSize]byte

// String is the key id in hex.
func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

// Purpose selects the key derived from a master key for one kind of value.
type Purpose byte

// The purposes: each has its own key, so a value sealed for one cannot be
// opened as another.
const (
	PurposeAccountKey Purpose = iota + 1
	PurposeIdempotency
	PurposeCallbackSecret
)

// String names the purpose.
func (p Purpose) String() string {
	switch p {
	case PurposeAccountKey:
		return "account key"
	case PurposeIdempotency:
		return "idempotency record"
	case PurposeCallbackSecret:
		return "callback secret"
	}
	return fmt.Sprintf("purpose %d", byte(p))
}

// hkdfInfo is the HKDF info string of a purpose's key.
func (p Purpose) hkdfInfo() string {
	switch p {
	case PurposeAccountKey:
		return "txengine account keys v1"
	case PurposeIdempotency:
		return "txengine idempotency records v1"
	case PurposeCallbackSecret:
		return "txengine callback secrets v1"
	}
	return ""
}

// masterKey is one master key's ciphers: one per purpose, and the raw
// master's for legacy values.
type masterKey struct {
	id      KeyID
	purpose map[Purpose]cipher.AEAD
	legacy  cipher.AEAD
}

// newMasterKey derives the ciphers of master.
func newMasterKey(master []byte) (*masterKey, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("master key must be %d bytes, got %d", MasterKeySize, len(master))
	}
	legacy, err := newGCM(master)
	if err != nil {
		return nil, err
	}
	idBytes, err := hkdf.Key(sha256.New, master, nil, "txengine key id", KeyIDSize)
	if err != nil {
		return nil, fmt.Errorf("master key id: %w", err)
	}
	k := &masterKey{purpose: map[Purpose]cipher.AEAD{}, legacy: legacy}
	copy(k.id[:], idBytes)
	for p := PurposeAccountKey; p <= PurposeCallbackSecret; p++ {
		key, err := hkdf.Key(sha256.New, master, nil, p.hkdfInfo(), 32)
		if err != nil {
			return nil, fmt.Errorf("master key: derive %s key: %w", p, err)
		}
		aead, err := newGCM(key)
		clear(key)
		if err != nil {
			return nil, err
		}
		k.purpose[p] = aead
	}
	return k, nil
}

// newGCM returns AES-256-GCM under key.
func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	return aead, nil
}

// KeySealer is the keyring of txengine's secrets at rest: a current master
// key, which seals, and previous master keys, which only open (during a
// rotation, until every value is sealed under the current key). It seals
// account private keys (the account address bound as additional data, so a
// sealed key cannot be moved to another account row), stored idempotency
// responses and callback secrets, each with its own purpose key. Replace
// swaps its keys while it is in use.
type KeySealer struct {
	ring atomic.Pointer[keyRing]
	// reload, when set, is called by open for a value that names a key id
	// the ring does not know, at most once per reloadEvery.
	reloadMu   sync.Mutex
	reload     func()
	lastReload time.Time
}

// reloadEvery bounds how often an unknown key id makes the keyring reload.
const reloadEvery = time.Second

// SetReload makes the keyring call reload (which should Replace its keys,
// e.g. from their files) when it meets a value sealed under a key id it
// does not know, at most once a second, and then try the value again.
func (s *KeySealer) SetReload(reload func()) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	s.reload = reload
}

// reloadForUnknown calls the reload function for a value naming an
// unknown key id, unless it ran less than reloadEvery ago; it reports
// whether it ran.
func (s *KeySealer) reloadForUnknown(sealed []byte) bool {
	id, ok := SealedKeyID(sealed)
	if !ok {
		return false
	}
	if _, known := s.ring.Load().keys[id]; known {
		return false
	}
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.reload == nil || time.Since(s.lastReload) < reloadEvery {
		return false
	}
	s.lastReload = time.Now()
	s.reload()
	return true
}

// keyRing is one immutable set of master keys.
type keyRing struct {
	current *masterKey
	// keys holds every master key, current and previous, by id.
	keys map[KeyID]*masterKey
	// order is current first, then the previous keys as given (legacy
	// values are tried in this order).
	order []*masterKey
}

// ErrUnknownKey is returned by Open for a value that opens under no known
// master key (sealed under a key no longer configured, or corrupted).
var ErrUnknownKey = errors.New("opens under no known master key")

// NewKeySealer returns the keyring of the 32-byte current master key and
// the previous master keys (which open but never seal).
func NewKeySealer(current []byte, previous ...[]byte) (*KeySealer, error) {
	s := &KeySealer{}
	if err := s.Replace(current, previous...); err != nil {
		return nil, err
	}
	return s, nil
}

// Replace makes current the key that seals and previous the keys that only
// open, for every call that starts after it returns (a service adopting a
// new master key of its data dir while it runs).
func (s *KeySealer) Replace(current []byte, previous ...[]byte) error {
	r, err := newKeyRing(current, previous)
	if err != nil {
		return err
	}
	s.ring.Store(r)
	return nil
}

// Adopt is Replace keeping every key the keyring knew as a previous key:
// a running service never forgets a key that may still open stored values
// (a key file edited by hand, a previous-keys file pruned early).
func (s *KeySealer) Adopt(current []byte, previous ...[]byte) error {
	r, err := newKeyRing(current, previous)
	if err != nil {
		return err
	}
	if old := s.ring.Load(); old != nil {
		for _, k := range old.order {
			if _, ok := r.keys[k.id]; !ok {
				r.keys[k.id] = k
				r.order = append(r.order, k)
			}
		}
	}
	s.ring.Store(r)
	return nil
}

// Knows reports whether every key id of ids is one of the keyring's.
func (s *KeySealer) Knows(ids ...KeyID) bool {
	r := s.ring.Load()
	for _, id := range ids {
		if _, ok := r.keys[id]; !ok {
			return false
		}
	}
	return true
}

// newKeyRing derives the keys of current and previous.
func newKeyRing(current []byte, previous [][]byte) (*keyRing, error) {
	cur, err := newMasterKey(current)
	if err != nil {
		return nil, err
	}
	s := &keyRing{current: cur, keys: map[KeyID]*masterKey{cur.id: cur}, order: []*masterKey{cur}}
	for i, p := range previous {
		k, err := newMasterKey(p)
		if err != nil {
			return nil, fmt.Errorf("previous master key %d: %w", i+1, err)
		}
		if _, dup := s.keys[k.id]; dup {
			continue
		}
		s.keys[k.id] = k
		s.order = append(s.order, k)
	}
	return s, nil
}

// CurrentKeyID is the id of the key that seals.
func (s *KeySealer) CurrentKeyID() KeyID { return s.ring.Load().current.id }

// KeyIDs lists the ids of every known master key, current first.
func (s *KeySealer) KeyIDs() []KeyID {
	r := s.ring.Load()
	ids := make([]KeyID, len(r.order))
	for i, k := range r.order {
		ids[i] = k.id
	}
	return ids
}

// Seal encrypts plain for purpose under the current master key, binding
// additional; the result carries the format version and the key id.
func (s *KeySealer) Seal(p Purpose, plain, additional []byte) ([]byte, error) {
	return s.ring.Load().seal(p, plain, additional)
}

// seal is Seal under r's current key.
func (s *keyRing) seal(p Purpose, plain, additional []byte) ([]byte, error) {
	aead, ok := s.current.purpose[p]
	if !ok {
		return nil, fmt.Errorf("seal: unknown purpose %s", p)
	}
	out := make([]byte, sealHeaderSize+aead.NonceSize(), sealHeaderSize+aead.NonceSize()+len(plain)+aead.Overhead())
	out[0] = SealVersion
	copy(out[1:sealHeaderSize], s.current.id[:])
	nonce := out[sealHeaderSize:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return aead.Seal(out, nonce, plain, headerAdditional(out[:sealHeaderSize], additional)), nil
}

// headerAdditional is the additional data of a versioned value: its header
// and the caller's.
func headerAdditional(header, additional []byte) []byte {
	ad := make([]byte, 0, len(header)+len(additional))
	return append(append(ad, header...), additional...)
}

// Open decrypts what Seal returned (under any known master key), or a
// legacy value.
func (s *KeySealer) Open(p Purpose, sealed, additional []byte) ([]byte, error) {
	plain, _, err := s.open(p, sealed, additional)
	return plain, err
}

// SealState says how a value opened.
type SealState int

// The states of a sealed value.
const (
	// SealedCurrent: versioned, under the current master key.
	SealedCurrent SealState = iota
	// SealedPrevious: versioned, under a previous master key.
	SealedPrevious
	// SealedLegacy: no header (sealed before key versions).
	SealedLegacy
	// SealedPlain: a callback secret stored in plain text.
	SealedPlain
)

// open is Open, also saying how the value was sealed.
func (s *KeySealer) open(p Purpose, sealed, additional []byte) ([]byte, SealState, error) {
	plain, state, err := s.ring.Load().open(p, sealed, additional)
	if err != nil && s.reloadForUnknown(sealed) {
		return s.ring.Load().open(p, sealed, additional)
	}
	return plain, state, err
}

// open is KeySealer.open on r's keys.
func (s *keyRing) open(p Purpose, sealed, additional []byte) ([]byte, SealState, error) {
	if _, ok := s.current.purpose[p]; !ok {
		return nil, 0, fmt.Errorf("open: unknown purpose %s", p)
	}
	if p == PurposeCallbackSecret && len(sealed) > 0 && sealed[0] == PlainVersion {
		return bytes.Clone(sealed[1:]), SealedPlain, nil
	}
	nonceSize := s.current.legacy.NonceSize()
	if len(sealed) >= sealHeaderSize+nonceSize && sealed[0] == SealVersion {
		var id KeyID
		copy(id[:], sealed[1:sealHeaderSize])
		if k, ok := s.keys[id]; ok {
			nonce := sealed[sealHeaderSize : sealHeaderSize+nonceSize]
			plain, err := k.purpose[p].Open(nil, nonce, sealed[sealHeaderSize+nonceSize:], headerAdditional(sealed[:sealHeaderSize], additional))
			if err == nil {
				if k == s.current {
					return plain, SealedCurrent, nil
				}
				return plain, SealedPrevious, nil
			}
		}
	}
	// A legacy value (whose random nonce may happen to look like a header).
	if p != PurposeCallbackSecret && len(sealed) >= nonceSize {
		for _, k := range s.order {
			if plain, err := k.legacy.Open(nil, sealed[:nonceSize], sealed[nonceSize:], additional); err == nil {
				return plain, SealedLegacy, nil
			}
		}
	}
	return nil, 0, fmt.Errorf("open %s: %w (wrong master key, key removed before rotation, or corrupted)", p, ErrUnknownKey)
}

// SealedKeyID returns the key id a versioned value names, and false for a
// value without a header.
func SealedKeyID(sealed []byte) (KeyID, bool) {
	var id KeyID
	if len(sealed) < sealHeaderSize || sealed[0] != SealVersion {
		return id, false
	}
	copy(id[:], sealed[1:sealHeaderSize])
	return id, true
}

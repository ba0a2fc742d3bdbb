package storetest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// sealedStore returns s as an keystore.SealedStore, failing the test when it
// is not one.
func sealedStore(t *testing.T, s engine.Store) keystore.SealedStore {
	t.Helper()
	ss, ok := s.(keystore.SealedStore)
	if !ok {
		t.Fatalf("%T does not implement keystore.SealedStore", s)
	}
	return ss
}

// allSealed reads every value of kind, limit at a time.
func allSealed(t *testing.T, s keystore.SealedStore, kind keystore.SealedKind, limit int) []keystore.SealedValue {
	t.Helper()
	var all []keystore.SealedValue
	var afterID, afterKey string
	for {
		page, err := s.SealedValues(ctxOf(t), kind, afterID, afterKey, limit)
		must(t, err)
		if len(page) > limit {
			t.Fatalf("%s: page of %d values, limit %d", kind, len(page), limit)
		}
		all = append(all, page...)
		if len(page) < limit {
			return all
		}
		afterID, afterKey = page[len(page)-1].ID, page[len(page)-1].Key
	}
}

// testSealedValues: the pages list every sealed value once, in (id, key)
// order with what it is bound to, and a swap replaces a value only while
// it is still the one read.
func testSealedValues(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	ss := sealedStore(t, s)
	users := map[string][]byte{}
	accounts := map[string]*engine.Account{}
	idems := map[string][]byte{}
	for i := range 5 {
		u := newUser(t, s, i)
		users[u.ID] = u.CallbackSecret
		a := newAccount(t, s, u.ID, i, true)
		accounts[a.ID] = a
		for j := range 2 {
			rec := idem(u.ID, fmt.Sprintf("k%d", j), "h", at(i))
			must(t, s.AddToken(ctx, u.ID, keystore.HashToken(fmt.Sprintf("tok-%d-%d", i, j)), rec))
			idems[u.ID+"/"+rec.Key] = rec.Body
		}
	}
	for _, limit := range []int{1, 2, 3, 100} {
		got := allSealed(t, ss, keystore.SealedCallbackSecrets, limit)
		if len(got) != len(users) {
			t.Fatalf("limit %d: %d callback secrets, want %d", limit, len(got), len(users))
		}
		for i, v := range got {
			if !bytes.Equal(v.Sealed, users[v.ID]) {
				t.Errorf("limit %d: callback secret of %s = %q, want %q", limit, v.ID, v.Sealed, users[v.ID])
			}
			if i > 0 && got[i-1].ID >= v.ID {
				t.Errorf("limit %d: callback secrets out of order at %d", limit, i)
			}
		}
		accts := allSealed(t, ss, keystore.SealedAccountKeys, limit)
		if len(accts) != len(accounts) {
			t.Fatalf("limit %d: %d account keys, want %d", limit, len(accts), len(accounts))
		}
		for _, v := range accts {
			a := accounts[v.ID]
			if a == nil || v.Address != a.Address || !bytes.Equal(v.Sealed, a.EncryptedKey) {
				t.Errorf("limit %d: account key %+v, want %+v", limit, v, a)
			}
		}
		recs := allSealed(t, ss, keystore.SealedIdempotency, limit)
		if len(recs) != len(idems) {
			t.Fatalf("limit %d: %d idempotency records, want %d", limit, len(recs), len(idems))
		}
		if !sort.SliceIsSorted(recs, func(i, j int) bool {
			return recs[i].ID < recs[j].ID || (recs[i].ID == recs[j].ID && recs[i].Key < recs[j].Key)
		}) {
			t.Errorf("limit %d: idempotency records out of order", limit)
		}
		for _, v := range recs {
			if !bytes.Equal(v.Sealed, idems[v.ID+"/"+v.Key]) {
				t.Errorf("limit %d: record %s/%s = %q", limit, v.ID, v.Key, v.Sealed)
			}
		}
	}

	// Swaps: the right old value is replaced, a stale one is not.
	var acct *engine.Account
	var uid string
	for _, a := range accounts {
		acct, uid = a, a.Owner
		break
	}
	n, err := ss.ResealValues(ctx, keystore.SealedAccountKeys, []keystore.Reseal{
		{ID: acct.ID, Old: acct.EncryptedKey, New: []byte("new key")},
		{ID: acct.ID, Old: []byte("stale"), New: []byte("lost")},
	})
	must(t, err)
	if n != 1 {
		t.Errorf("account swaps changed %d rows, want 1", n)
	}
	got, err := s.AccountByID(ctx, acct.ID)
	must(t, err)
	if string(got.EncryptedKey) != "new key" {
		t.Errorf("account key after swaps = %q", got.EncryptedKey)
	}
	n, err = ss.ResealValues(ctx, keystore.SealedCallbackSecrets, []keystore.Reseal{
		{ID: uid, Old: []byte("stale"), New: []byte("lost")},
		{ID: uid, Old: users[uid], New: []byte("new secret")},
	})
	must(t, err)
	u, err := s.UserByID(ctx, uid)
	must(t, err)
	if n != 1 || string(u.CallbackSecret) != "new secret" {
		t.Errorf("callback secret swaps: %d rows, secret %q", n, u.CallbackSecret)
	}
	n, err = ss.ResealValues(ctx, keystore.SealedIdempotency, []keystore.Reseal{
		{ID: uid, Key: "k1", Old: idems[uid+"/k1"], New: []byte("new body")},
		{ID: uid, Key: "k0", Old: []byte("stale"), New: []byte("lost")},
	})
	must(t, err)
	rec, err := s.IdempotencyRecord(ctx, uid, "k1")
	must(t, err)
	other, err := s.IdempotencyRecord(ctx, uid, "k0")
	must(t, err)
	if n != 1 || string(rec.Body) != "new body" || !bytes.Equal(other.Body, idems[uid+"/k0"]) {
		t.Errorf("idempotency swaps: %d rows, k1 %q, k0 %q", n, rec.Body, other.Body)
	}
}

// LegacySeal seals as txengine did before key versions: nonce || AES-GCM
// under the raw master key, no header.
func LegacySeal(t *testing.T, master, plain, additional []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(master)
	must(t, err)
	aead, err := cipher.NewGCM(block)
	must(t, err)
	nonce := make([]byte, aead.NonceSize())
	_, err = rand.Read(nonce)
	must(t, err)
	return aead.Seal(nonce, nonce, plain, additional)
}

// keyring returns the KeySealer of current and previous.
func keyring(t *testing.T, current []byte, previous ...[]byte) *keystore.KeySealer {
	t.Helper()
	k, err := keystore.NewKeySealer(current, previous...)
	must(t, err)
	return k
}

// testKeyRotation: keystore.RotateKeys on the store re-encrypts values under
// a previous key, legacy values and plain callback secrets under the new
// key, which then opens everything alone; a value under no known key makes
// it refuse and change nothing.
func testKeyRotation(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	ss := sealedStore(t, s)
	oldMaster, newMaster := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old := keyring(t, oldMaster)
	type want struct {
		user    *engine.User
		secret  string
		account *engine.Account
		key     []byte
		body    string
	}
	var wants []want
	for i := range 7 {
		u := &engine.User{ID: newID(), Created: at(i)}
		secret := fmt.Sprintf("secret-%d", i)
		var err error
		switch i % 3 {
		case 0: // sealed under the old key
			u.CallbackSecret, err = old.SealCallbackSecret(u.ID, secret)
			must(t, err)
		default: // in plain text, as migration 0012 left it
			u.CallbackSecret = append([]byte{keystore.PlainVersion}, secret...)
		}
		a, err := engine.NewLocalAccount(old)
		must(t, err)
		a.ID, a.Created = newID(), at(i)
		key, err := old.OpenAccountKey(a.Address, a.EncryptedKey)
		must(t, err)
		if i%2 == 0 { // sealed before key versions
			a.EncryptedKey = LegacySeal(t, oldMaster, key, a.Address.Bytes())
		}
		body := fmt.Sprintf(`{"data":%d}`, i)
		rec := idem(u.ID, "k", "h", at(i))
		if i%2 == 0 {
			rec.Body = LegacySeal(t, oldMaster, []byte(body), keystore.IdempotencyAdditional(u.ID, "k"))
		} else {
			rec.Body, err = old.SealIdempotency(u.ID, "k", []byte(body))
			must(t, err)
		}
		u.Idempotency = rec
		must(t, s.CreateUser(ctx, u, nil, a))
		wants = append(wants, want{user: u, secret: secret, account: a, key: key, body: body})
	}
	// A value under a key the ring does not know: refused, nothing changed.
	stranger := keyring(t, bytes.Repeat([]byte{3}, 32))
	lost := &engine.User{ID: newID(), Created: at(9)}
	var err error
	lost.CallbackSecret, err = stranger.SealCallbackSecret(lost.ID, "x")
	must(t, err)
	must(t, s.CreateUser(ctx, lost, nil, nil))
	ring := keyring(t, newMaster, oldMaster)
	_, err = keystore.RotateKeys(ctx, ss, ring, keystore.RotateOptions{Batch: 2})
	var unopenable *keystore.UnopenableError
	if !errors.As(err, &unopenable) || unopenable.Counts[keystore.SealedCallbackSecrets] != 1 || !errors.Is(err, keystore.ErrUnknownKey) {
		t.Fatalf("rotate with a value under an unknown key: %v", err)
	}
	for _, w := range wants {
		a, err := s.AccountByID(ctx, w.account.ID)
		must(t, err)
		if !bytes.Equal(a.EncryptedKey, w.account.EncryptedKey) {
			t.Fatalf("a refused rotation changed the key of account %s", a.ID)
		}
	}
	// With the stranger's key as a previous key too, the rotation runs.
	ring = keyring(t, newMaster, oldMaster, bytes.Repeat([]byte{3}, 32))
	report, err := keystore.RotateKeys(ctx, ss, ring, keystore.RotateOptions{Batch: 2})
	must(t, err)
	counts := map[keystore.SealedKind]keystore.RotateCount{}
	for _, c := range report.Counts {
		counts[c.Kind] = c
	}
	if c := counts[keystore.SealedAccountKeys]; c.Resealed != 7 || c.Legacy != 4 || c.Scanned != 7 {
		t.Errorf("account keys: %+v, want 7 re-encrypted (4 legacy)", c)
	}
	if c := counts[keystore.SealedCallbackSecrets]; c.Resealed != 8 || c.Plain != 4 {
		t.Errorf("callback secrets: %+v, want 8 re-encrypted (4 plain)", c)
	}
	if c := counts[keystore.SealedIdempotency]; c.Resealed != 7 || c.Legacy != 4 {
		t.Errorf("idempotency records: %+v, want 7 re-encrypted (4 legacy)", c)
	}
	// The new key alone opens everything, the old alone nothing.
	only := keyring(t, newMaster)
	for _, w := range wants {
		a, err := s.AccountByID(ctx, w.account.ID)
		must(t, err)
		key, err := only.OpenAccountKey(a.Address, a.EncryptedKey)
		if err != nil || !bytes.Equal(key, w.key) {
			t.Errorf("account %s after rotation: %v", a.ID, err)
		}
		if _, err := old.OpenAccountKey(a.Address, a.EncryptedKey); err == nil {
			t.Errorf("the old key still opens account %s", a.ID)
		}
		u, err := s.UserByID(ctx, w.user.ID)
		must(t, err)
		if secret, err := only.OpenCallbackSecret(u.ID, u.CallbackSecret); err != nil || secret != w.secret {
			t.Errorf("callback secret of %s after rotation = %q, %v", u.ID, secret, err)
		}
		if bytes.Contains(u.CallbackSecret, []byte(w.secret)) {
			t.Errorf("callback secret of %s stored in clear", u.ID)
		}
		rec, err := s.IdempotencyRecord(ctx, w.user.ID, "k")
		must(t, err)
		if body, err := only.OpenIdempotency(w.user.ID, "k", rec.Body); err != nil || string(body) != w.body {
			t.Errorf("idempotency record of %s after rotation = %q, %v", w.user.ID, body, err)
		}
	}
	// Again: nothing left to do.
	report, err = keystore.RotateKeys(ctx, ss, only, keystore.RotateOptions{})
	must(t, err)
	for _, c := range report.Counts {
		if c.Resealed != 0 {
			t.Errorf("second rotation re-encrypted %d %s", c.Resealed, c.Kind)
		}
	}
}

// PlainSecrets0012 is the test of migration 0012 for a store: old is open
// with the migrations before 0012 applied, exec runs a statement on it
// (with ? placeholders), and reopen closes it and returns the store with
// every migration applied. A callback secret stored in plain text reads as
// keystore.PlainVersion || secret, opens as the secret, and
// keystore.SealPlainCallbackSecrets seals it.
func PlainSecrets0012(t *testing.T, old engine.Store, exec func(q string, args ...any) error, reopen func() engine.Store) {
	ctx := ctxOf(t)
	u := &engine.User{ID: newID(), Created: at(0)}
	must(t, old.CreateUser(ctx, u, nil, nil))
	must(t, exec(`UPDATE users SET callback_secret = 'plain-secret-0012' WHERE id = ?`, u.ID))
	empty := &engine.User{ID: newID(), Created: at(1)}
	must(t, old.CreateUser(ctx, empty, nil, nil))
	must(t, exec(`UPDATE users SET callback_secret = '' WHERE id = ?`, empty.ID))
	s := reopen()
	got, err := s.UserByID(ctx, u.ID)
	must(t, err)
	if want := append([]byte{keystore.PlainVersion}, "plain-secret-0012"...); !bytes.Equal(got.CallbackSecret, want) {
		t.Fatalf("migrated callback secret = %q, want %q", got.CallbackSecret, want)
	}
	ring := keyring(t, bytes.Repeat([]byte{4}, 32))
	if secret, err := ring.OpenCallbackSecret(u.ID, got.CallbackSecret); err != nil || secret != "plain-secret-0012" {
		t.Fatalf("migrated secret opens as %q, %v", secret, err)
	}
	// Only the plain ones are read (both: the empty one too), not a user
	// whose secret is sealed already.
	sealedUser := &engine.User{ID: newID(), Created: at(3)}
	sealedUser.CallbackSecret, err = ring.SealCallbackSecret(sealedUser.ID, "sealed-secret")
	must(t, err)
	must(t, s.CreateUser(ctx, sealedUser, nil, nil))
	plain, err := sealedStore(t, s).PlainCallbackSecrets(ctx, 10)
	must(t, err)
	if len(plain) != 2 || !slices.ContainsFunc(plain, func(v keystore.SealedValue) bool { return v.ID == u.ID }) ||
		!slices.ContainsFunc(plain, func(v keystore.SealedValue) bool { return v.ID == empty.ID }) {
		t.Fatalf("PlainCallbackSecrets = %+v, want %s and %s", plain, u.ID, empty.ID)
	}
	// serve seals them at start.
	n, err := keystore.SealPlainCallbackSecrets(ctx, sealedStore(t, s), ring)
	if err != nil || n != 2 {
		t.Fatalf("SealPlainCallbackSecrets = %d, %v; want 2", n, err)
	}
	if plain, err := sealedStore(t, s).PlainCallbackSecrets(ctx, 10); err != nil || len(plain) != 0 {
		t.Fatalf("PlainCallbackSecrets after sealing = %+v, %v", plain, err)
	}
	report, err := keystore.RotateKeys(ctx, sealedStore(t, s), ring, keystore.RotateOptions{})
	must(t, err)
	for _, c := range report.Counts {
		if c.Resealed != 0 {
			t.Errorf("rotation after sealing the plain secrets re-encrypted %d %s", c.Resealed, c.Kind)
		}
	}
	got, err = s.UserByID(ctx, u.ID)
	must(t, err)
	if bytes.Contains(got.CallbackSecret, []byte("plain-secret-0012")) {
		t.Fatal("the callback secret is still in plain text after a rotation")
	}
	if secret, err := ring.OpenCallbackSecret(u.ID, got.CallbackSecret); err != nil || secret != "plain-secret-0012" {
		t.Fatalf("sealed secret opens as %q, %v", secret, err)
	}
	// A new user on the migrated store round-trips its sealed secret.
	fresh := &engine.User{ID: newID(), CallbackSecret: []byte{keystore.SealVersion, 1, 2, 3}, Created: at(2)}
	must(t, s.CreateUser(ctx, fresh, nil, nil))
	back, err := s.UserByID(ctx, fresh.ID)
	must(t, err)
	if !bytes.Equal(back.CallbackSecret, fresh.CallbackSecret) {
		t.Fatalf("callback secret round trip = %x", back.CallbackSecret)
	}
}

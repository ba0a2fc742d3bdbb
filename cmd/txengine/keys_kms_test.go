package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
)

// TestRotateLeavesKMSAccountsAlone: `txengine keys rotate` re-encrypts a
// local account's key, leaves an account whose key is in KMS as it is and
// says so; `keys status` counts it apart.
func TestRotateLeavesKMSAccountsAlone(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "txengine.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	old, _ := keystore.NewKeySealer(oldKey)
	u := &engine.User{ID: "u1", Created: time.Now()}
	u.CallbackSecret, _ = old.SealCallbackSecret(u.ID, "s")
	if err := store.CreateUser(ctx, u, nil, nil); err != nil {
		t.Fatal(err)
	}
	local, _ := engine.NewLocalAccount(old)
	local.ID, local.Owner, local.Created = "local", u.ID, time.Now()
	arn := "arn:aws:kms:eu-west-2:111122223333:key/k1"
	inKMS := &engine.Account{ID: "kms", Owner: u.ID, Address: common.Address{9}, KMSKeyID: arn, Created: time.Now()}
	for _, a := range []*engine.Account{local, inKMS} {
		if err := store.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	ring, _ := keystore.NewKeySealer(newKey, oldKey)
	var out bytes.Buffer
	if err := rotateKeys(ctx, store, ring, keystore.RotateOptions{}, &out); err != nil {
		t.Fatalf("rotate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "1 in AWS KMS: left alone") {
		t.Fatalf("the output does not say the KMS account was left alone:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "account keys                2 scanned        1 re-encrypted") {
		t.Fatalf("the output does not count the local key re-encrypted:\n%s", out.String())
	}
	got, err := store.AccountByID(ctx, "kms")
	if err != nil || got.KMSKeyID != arn || len(got.EncryptedKey) != 0 {
		t.Fatalf("the KMS account after rotation: %+v, %v", got, err)
	}
	only, _ := keystore.NewKeySealer(newKey)
	l, _ := store.AccountByID(ctx, "local")
	if _, err := only.OpenAccountKey(l.Address, l.EncryptedKey); err != nil {
		t.Fatalf("the local key is not under the new key: %v", err)
	}
	t.Log(out.String())
}

package storetest

import (
	"bytes"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// testKMSAccounts: an account whose key is in KMS keeps its key's ARN
// (and no sealed key) through every read; a KMS key backs one account
// only (a second is a conflict, nothing stored); the sealed-values scan
// marks it, and a key rotation leaves it alone and counts it.
func testKMSAccounts(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	oldMaster := bytes.Repeat([]byte{5}, 32)
	local, err := engine.NewLocalAccount(keyring(t, oldMaster))
	must(t, err)
	local.ID, local.Owner, local.Default, local.Created = newID(), u.ID, true, at(1)
	must(t, s.CreateAccount(ctx, local))
	arn := "arn:aws:kms:eu-west-2:111122223333:key/" + newID()
	a := &engine.Account{ID: newID(), Owner: u.ID, Address: randomAddress(t), KMSKeyID: arn, Created: at(2)}
	must(t, s.CreateAccount(ctx, a))
	got, err := s.AccountByID(ctx, a.ID)
	must(t, err)
	if got.KMSKeyID != arn || len(got.EncryptedKey) != 0 || got.Address != a.Address {
		t.Fatalf("KMS account read back as %+v", got)
	}
	got, err = s.AccountByAddress(ctx, a.Address)
	must(t, err)
	if got.KMSKeyID != arn {
		t.Fatalf("AccountByAddress: key %q", got.KMSKeyID)
	}
	list, err := s.ListAccounts(ctx, u.ID)
	must(t, err)
	if len(list) != 2 || list[0].KMSKeyID != "" || list[1].KMSKeyID != arn {
		t.Fatalf("ListAccounts: %+v", list)
	}
	if ss, ok := s.(engine.StageStore); ok {
		accts, err := ss.AccountsByID(ctx, []string{a.ID, local.ID})
		must(t, err)
		if accts[a.ID] == nil || accts[a.ID].KMSKeyID != arn || accts[local.ID].KMSKeyID != "" {
			t.Fatalf("stage Accounts: %+v", accts)
		}
	}
	again := &engine.Account{ID: newID(), Owner: u.ID, Address: randomAddress(t), KMSKeyID: arn, Created: at(3)}
	wantCode(t, s.CreateAccount(ctx, again), engine.CodeConflict, "CreateAccount with a KMS key already attached")
	if _, err := s.AccountByID(ctx, again.ID); !engine.IsNotFound(err) {
		t.Fatalf("the refused account was stored: %v", err)
	}

	ss, ok := s.(keystore.SealedStore)
	if !ok {
		t.Skip("not a SealedStore")
	}
	var inKMS, sealed int
	for _, v := range allSealed(t, ss, keystore.SealedAccountKeys, 1) {
		switch {
		case v.ID == a.ID && v.InKMS:
			inKMS++
		case v.ID == a.ID:
			t.Fatalf("the KMS account is not marked: %+v", v)
		case v.InKMS:
			t.Fatalf("account %s marked in KMS", v.ID)
		default:
			sealed++
		}
	}
	if inKMS != 1 || sealed != 1 {
		t.Fatalf("%d in KMS, %d sealed; want 1 and 1", inKMS, sealed)
	}
	ring := keyring(t, bytes.Repeat([]byte{6}, 32), oldMaster)
	report, err := keystore.RotateKeys(ctx, ss, ring, keystore.RotateOptions{Kinds: []keystore.SealedKind{keystore.SealedAccountKeys}})
	must(t, err)
	if c := report.Counts[0]; c.Resealed != 1 || c.InKMS != 1 || c.Scanned != 2 {
		t.Fatalf("rotation: %+v; want the local key re-encrypted, the KMS account counted and left alone", c)
	}
	got, err = s.AccountByID(ctx, a.ID)
	must(t, err)
	if got.KMSKeyID != arn || len(got.EncryptedKey) != 0 {
		t.Fatalf("the rotation changed the KMS account: %+v", got)
	}
	uses, err := keystore.SealedStatus(ctx, ss, ring, 10)
	must(t, err)
	if uses[0].Kind != keystore.SealedAccountKeys || uses[0].InKMS != 1 || uses[0].Unopenable != 0 || uses[0].NotCurrent(ring.CurrentKeyID()) != 0 {
		t.Fatalf("status after rotation: %+v", uses[0])
	}
}

package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/txengine/txengine/engine/keystore"
)

// TestNewUser: a new user has an id, a callback secret sealed for it, and
// the token and default account asked for, nothing else.
func TestNewUser(t *testing.T) {
	s, err := keystore.NewKeySealer(bytes.Repeat([]byte{3}, keystore.MasterKeySize))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	bare, err := MakeUser(s, NewUserSpec{Owner: "o"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if bare.User.ID == "" || bare.User.Owner != "o" || bare.User.Operator || !bare.User.Created.Equal(now) ||
		bare.Token != "" || bare.TokenHash != nil || bare.Account != nil {
		t.Fatalf("bare user %+v", bare)
	}
	if secret, err := s.OpenCallbackSecret(bare.User.ID, bare.User.CallbackSecret); err != nil || len(secret) != 64 {
		t.Fatalf("callback secret: %q, %v", secret, err)
	}
	full, err := MakeUser(s, NewUserSpec{Operator: true, Token: true, Account: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	a := full.Account
	if !full.User.Operator || full.User.Owner != "" || !bytes.Equal(keystore.HashToken(full.Token), full.TokenHash) ||
		a == nil || a.Owner != full.User.ID || !a.Default || !a.Created.Equal(now) || a.ID == "" || full.User.ID == bare.User.ID {
		t.Fatalf("full user %+v, account %+v", full, a)
	}
	if _, err := s.Open(keystore.PurposeAccountKey, a.EncryptedKey, a.Address.Bytes()); err != nil {
		t.Fatalf("account key does not open: %v", err)
	}
}

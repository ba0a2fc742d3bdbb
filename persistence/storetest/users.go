package storetest

import (
	"bytes"
	"testing"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

func wantUser(t *testing.T, got, want *engine.User) {
	t.Helper()
	if got.ID != want.ID || got.Owner != want.Owner || got.Operator != want.Operator || !bytes.Equal(got.CallbackSecret, want.CallbackSecret) {
		t.Errorf("user = %+v, want %+v", got, want)
	}
	wantTime(t, "user.Created", got.Created, want.Created)
}

func testUserRoundTrip(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	root := &engine.User{ID: newID(), Operator: true, CallbackSecret: []byte("s1"), Created: at(0)}
	must(t, s.CreateUser(ctx, root, nil, nil))
	child := &engine.User{ID: newID(), Owner: root.ID, CallbackSecret: []byte("s2"), Created: at(1)}
	must(t, s.CreateUser(ctx, child, nil, nil))

	for _, want := range []*engine.User{root, child} {
		got, err := s.UserByID(ctx, want.ID)
		must(t, err)
		wantUser(t, got, want)
	}
}

func testUserNotFound(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	_, err := s.UserByID(ctx, newID())
	wantCode(t, err, engine.CodeNotFound, "UserByID unknown")
	_, err = s.UserByTokenHash(ctx, keystore.HashToken("nope"))
	wantCode(t, err, engine.CodeNotFound, "UserByTokenHash unknown")
	err = s.AddToken(ctx, newID(), keystore.HashToken("orphan"), nil)
	wantCode(t, err, engine.CodeNotFound, "AddToken for unknown user")
}

func testUserConflict(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := newUser(t, s, 0)
	dup := &engine.User{ID: u.ID, CallbackSecret: []byte("other"), Created: at(5)}
	err := s.CreateUser(ctx, dup, keystore.HashToken("dup-token"), nil)
	wantCode(t, err, engine.CodeConflict, "CreateUser with a taken id")
	// The token of the failed creation was rolled back with it.
	_, err = s.UserByTokenHash(ctx, keystore.HashToken("dup-token"))
	wantCode(t, err, engine.CodeNotFound, "token of a failed CreateUser")
	got, err := s.UserByID(ctx, u.ID)
	must(t, err)
	wantUser(t, got, u)

	// A token hash belongs to one user only.
	v := &engine.User{ID: newID(), Created: at(1)}
	must(t, s.CreateUser(ctx, v, keystore.HashToken("t"), nil))
	w := &engine.User{ID: newID(), Created: at(2)}
	wantCode(t, s.CreateUser(ctx, w, keystore.HashToken("t"), nil), engine.CodeConflict, "CreateUser with a taken token")
	_, err = s.UserByID(ctx, w.ID)
	wantCode(t, err, engine.CodeNotFound, "user of a failed CreateUser")
}

func testUserWithAccount(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := &engine.User{ID: newID(), CallbackSecret: []byte("cs"), Created: at(0)}
	a := &engine.Account{ID: newID(), Owner: u.ID, Address: randomAddress(t), EncryptedKey: []byte{1, 2, 3}, Created: at(0)}
	must(t, s.CreateUser(ctx, u, keystore.HashToken("tok"), a))

	got, err := s.UserByTokenHash(ctx, keystore.HashToken("tok"))
	must(t, err)
	wantUser(t, got, u)

	def, err := s.DefaultAccount(ctx, u.ID)
	must(t, err)
	if def.ID != a.ID || !def.Default || def.Address != a.Address || !bytes.Equal(def.EncryptedKey, a.EncryptedKey) {
		t.Fatalf("default account = %+v, want %+v as default", def, a)
	}
}

func testUserWithAccountConflictIsAtomic(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	first := newUser(t, s, 0)
	taken := newAccount(t, s, first.ID, 0, true)

	u := &engine.User{ID: newID(), Created: at(1)}
	a := &engine.Account{ID: newID(), Owner: u.ID, Address: taken.Address, EncryptedKey: []byte{9}, Created: at(1)}
	err := s.CreateUser(ctx, u, keystore.HashToken("atomic"), a)
	wantCode(t, err, engine.CodeConflict, "CreateUser with an account whose address is taken")

	_, err = s.UserByID(ctx, u.ID)
	wantCode(t, err, engine.CodeNotFound, "user of a failed CreateUser")
	_, err = s.UserByTokenHash(ctx, keystore.HashToken("atomic"))
	wantCode(t, err, engine.CodeNotFound, "token of a failed CreateUser")
	_, err = s.AccountByID(ctx, a.ID)
	wantCode(t, err, engine.CodeNotFound, "account of a failed CreateUser")
}

func testTokens(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := &engine.User{ID: newID(), Created: at(0)}
	must(t, s.CreateUser(ctx, u, keystore.HashToken("one"), nil))
	v := newUser(t, s, 1)

	must(t, s.AddToken(ctx, u.ID, keystore.HashToken("two"), nil))
	must(t, s.AddToken(ctx, v.ID, keystore.HashToken("three"), nil))
	for tok, owner := range map[string]string{"one": u.ID, "two": u.ID, "three": v.ID} {
		got, err := s.UserByTokenHash(ctx, keystore.HashToken(tok))
		must(t, err)
		if got.ID != owner {
			t.Errorf("token %s: user %s, want %s", tok, got.ID, owner)
		}
	}
	wantCode(t, s.AddToken(ctx, v.ID, keystore.HashToken("one"), nil), engine.CodeConflict, "AddToken with a taken hash")
	got, err := s.UserByTokenHash(ctx, keystore.HashToken("one"))
	must(t, err)
	if got.ID != u.ID {
		t.Errorf("token one moved to %s", got.ID)
	}
}

func testFirstOperator(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	_, err := s.FirstOperator(ctx)
	wantCode(t, err, engine.CodeNotFound, "FirstOperator on an empty store")

	newUser(t, s, 0) // not an operator, and the oldest
	late := &engine.User{ID: newID(), Operator: true, Created: at(20)}
	must(t, s.CreateUser(ctx, late, nil, nil))
	early := &engine.User{ID: newID(), Operator: true, Created: at(10)}
	must(t, s.CreateUser(ctx, early, nil, nil))

	got, err := s.FirstOperator(ctx)
	must(t, err)
	wantUser(t, got, early)
}

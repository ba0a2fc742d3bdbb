package storetest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// testTokenRevocation: tokens are listed with an id (never shown tokens),
// a revoked token authenticates nobody at once, and revoking another
// user's, an unknown or an already revoked token is not found.
func testTokenRevocation(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	u := &engine.User{ID: newID(), Created: at(0)}
	must(t, s.CreateUser(ctx, u, keystore.HashToken("first"), nil))
	must(t, s.AddToken(ctx, u.ID, keystore.HashToken("second"), nil))
	v := newUser(t, s, 1)
	must(t, s.AddToken(ctx, v.ID, keystore.HashToken("other"), nil))

	toks, err := s.ListTokens(ctx, u.ID)
	must(t, err)
	if len(toks) != 2 {
		t.Fatalf("ListTokens = %d tokens, want 2", len(toks))
	}
	first, second := toks[0], toks[1]
	if !bytes.Equal(first.Hash, keystore.HashToken("first")) || !bytes.Equal(second.Hash, keystore.HashToken("second")) {
		t.Fatalf("tokens not oldest first, or hashes wrong: %+v", toks)
	}
	for _, tok := range toks {
		if _, err := uuid.Parse(tok.ID); err != nil || tok.UserID != u.ID || !tok.Revoked.IsZero() {
			t.Errorf("token %+v: want a UUID id, user %s, not revoked", tok, u.ID)
		}
	}
	wantTime(t, "first.Created", first.Created, u.Created)

	// Another user's token, an unknown id: not found, nothing changes.
	others, err := s.ListTokens(ctx, v.ID)
	must(t, err)
	_, err = s.RevokeToken(ctx, u.ID, others[0].ID, at(5))
	wantCode(t, err, engine.CodeNotFound, "RevokeToken of another user's token")
	_, err = s.RevokeToken(ctx, u.ID, newID(), at(5))
	wantCode(t, err, engine.CodeNotFound, "RevokeToken of an unknown id")
	if _, err := s.UserByTokenHash(ctx, keystore.HashToken("other")); err != nil {
		t.Fatalf("another user's token stopped working: %v", err)
	}

	got, err := s.RevokeToken(ctx, u.ID, first.ID, at(6))
	must(t, err)
	if got.ID != first.ID || !bytes.Equal(got.Hash, first.Hash) {
		t.Errorf("RevokeToken = %+v, want the token %s", got, first.ID)
	}
	wantTime(t, "Revoked", got.Revoked, at(6))
	_, err = s.UserByTokenHash(ctx, keystore.HashToken("first"))
	wantCode(t, err, engine.CodeNotFound, "UserByTokenHash of a revoked token")
	if _, err := s.UserByTokenHash(ctx, keystore.HashToken("second")); err != nil {
		t.Fatalf("the other token stopped working: %v", err)
	}
	_, err = s.RevokeToken(ctx, u.ID, first.ID, at(7))
	wantCode(t, err, engine.CodeNotFound, "RevokeToken of a revoked token")
	toks, err = s.ListTokens(ctx, u.ID)
	must(t, err)
	if len(toks) != 1 || toks[0].ID != second.ID {
		t.Errorf("ListTokens after revocation = %+v, want only %s", toks, second.ID)
	}
	// A user's last token may go when the user is not an operator.
	_, err = s.RevokeToken(ctx, u.ID, second.ID, at(8))
	must(t, err)
	if toks, err := s.ListTokens(ctx, u.ID); err != nil || len(toks) != 0 {
		t.Errorf("ListTokens with every token revoked = %+v, %v; want none", toks, err)
	}
}

// testLastOperatorToken: the last active token of all operators cannot be
// revoked; it can once another operator token exists, of the same
// operator or of another one.
func testLastOperatorToken(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	op := &engine.User{ID: newID(), Operator: true, Created: at(0)}
	must(t, s.CreateUser(ctx, op, keystore.HashToken("op-a"), nil))
	a := onlyToken(t, s, op.ID)
	_, err := s.RevokeToken(ctx, op.ID, a.ID, at(1))
	wantCode(t, err, engine.CodeConflict, "RevokeToken of the last operator token")
	if !errors.Is(err, engine.ErrLastOperatorToken) || engine.ErrorMessage(err) != engine.ErrLastOperatorToken.Message {
		t.Errorf("refusal %v: want engine.ErrLastOperatorToken and its message", err)
	}
	if _, err := s.UserByTokenHash(ctx, keystore.HashToken("op-a")); err != nil {
		t.Fatalf("the refused revocation revoked the token: %v", err)
	}

	must(t, s.AddToken(ctx, op.ID, keystore.HashToken("op-b"), nil))
	_, err = s.RevokeToken(ctx, op.ID, a.ID, at(2))
	must(t, err)
	b := onlyToken(t, s, op.ID)
	_, err = s.RevokeToken(ctx, op.ID, b.ID, at(3))
	wantCode(t, err, engine.CodeConflict, "RevokeToken of the last operator token (second)")

	// Another operator's token keeps the service administrable.
	op2 := &engine.User{ID: newID(), Operator: true, Created: at(4)}
	must(t, s.CreateUser(ctx, op2, keystore.HashToken("op2"), nil))
	_, err = s.RevokeToken(ctx, op.ID, b.ID, at(5))
	must(t, err)
	c := onlyToken(t, s, op2.ID)
	_, err = s.RevokeToken(ctx, op2.ID, c.ID, at(6))
	wantCode(t, err, engine.CodeConflict, "RevokeToken of op2's last token")
}

// testLastOperatorTokenConcurrent: two revocations of the last two
// operator tokens at once: exactly one succeeds, in every round.
func testLastOperatorTokenConcurrent(t *testing.T, s engine.Store) {
	ctx := ctxOf(t)
	var survivor *engine.APIToken // the previous round's
	for round := range 5 {
		ops := []*engine.User{{ID: newID(), Operator: true, Created: at(round)}, {ID: newID(), Operator: true, Created: at(round)}}
		toks := make([]engine.APIToken, 2)
		for i, u := range ops {
			must(t, s.CreateUser(ctx, u, keystore.HashToken(u.ID), nil))
			toks[i] = onlyToken(t, s, u.ID)
		}
		if survivor != nil {
			_, err := s.RevokeToken(ctx, survivor.UserID, survivor.ID, at(9))
			must(t, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, u := range ops {
			wg.Go(func() { _, errs[i] = s.RevokeToken(ctx, u.ID, toks[i].ID, at(10)) })
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: concurrent revocations of the last two operator tokens: %v, %v; want one refused", round, errs[0], errs[1])
		}
		for i, err := range errs {
			if err != nil {
				if engine.ErrorCode(err) != engine.CodeConflict {
					t.Fatalf("round %d: refusal %v, want conflict", round, err)
				}
				survivor = &toks[i]
			}
		}
	}
}

func onlyToken(t *testing.T, s engine.Store, userID string) engine.APIToken {
	t.Helper()
	toks, err := s.ListTokens(ctxOf(t), userID)
	must(t, err)
	if len(toks) != 1 {
		t.Fatalf("user %s has %d active tokens, want 1", userID, len(toks))
	}
	return toks[0]
}

// TokenIDs0016 checks migration 0016: tokens stored before it (inserted
// with insertToken, which sets no id) get distinct ids and keep working,
// and can be revoked by those ids.
func TokenIDs0016(t *testing.T, insertUser func(id string) error, insertToken func(userID string, hash []byte) error, migrate func() engine.Store) {
	id := newID()
	must(t, insertUser(id))
	must(t, insertToken(id, keystore.HashToken("old-1")))
	must(t, insertToken(id, keystore.HashToken("old-2")))
	s := migrate()
	ctx := ctxOf(t)
	for _, tok := range []string{"old-1", "old-2"} {
		u, err := s.UserByTokenHash(ctx, keystore.HashToken(tok))
		must(t, err)
		if u.ID != id {
			t.Fatalf("token %s: user %s, want %s", tok, u.ID, id)
		}
	}
	toks, err := s.ListTokens(ctx, id)
	must(t, err)
	if len(toks) != 2 || toks[0].ID == toks[1].ID {
		t.Fatalf("tokens after the migration = %+v, want 2 with distinct ids", toks)
	}
	for _, tok := range toks {
		if u, err := uuid.Parse(tok.ID); err != nil || u.Version() != 4 || tok.ID != u.String() {
			t.Errorf("id %q of a migrated token: want a canonical version 4 UUID (%v)", tok.ID, err)
		}
	}
	revoked, err := s.RevokeToken(ctx, id, toks[0].ID, at(1))
	must(t, err)
	_, err = s.UserByTokenHash(ctx, revoked.Hash)
	wantCode(t, err, engine.CodeNotFound, "a migrated token revoked by its id")
	// A token added after the migration gets an id too.
	must(t, s.AddToken(ctx, id, keystore.HashToken("new"), nil))
	if toks, err := s.ListTokens(ctx, id); err != nil || len(toks) != 2 {
		t.Fatalf("tokens = %+v, %v; want 2", toks, err)
	}
}

package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// insertAccount inserts a; when a.Default is true, the owner's other
// accounts stop being default first, in the same transaction tx, under the
// owner's lock.
func (s *Store) insertAccount(ctx context.Context, tx Conn, a *engine.Account) error {
	if a.Default {
		if err := s.lockOwner(ctx, tx, a.Owner); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET is_default = `+s.no+` WHERE owner = ? AND is_default = `+s.yes, a.Owner); err != nil {
			return s.wrap(err, "create account %s: clear default", a.ID)
		}
	}
	key := a.EncryptedKey
	if key == nil {
		key = []byte{}
	}
	// kms_key_id (migration 0015) is named only when set: a local
	// account's insert is the same as before it.
	cols, vals, args := `id, owner, address, is_default, encrypted_key, created`, `?, ?, ?, ?, ?, ?`,
		[]any{a.ID, a.Owner, sqlrow.Address(a.Address), a.Default, key, s.ts(a.Created)}
	if a.KMSKeyID != "" {
		cols, vals, args = cols+`, kms_key_id`, vals+`, ?`, append(args, a.KMSKeyID)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO accounts (`+cols+`) VALUES (`+vals+`)`, args...); err != nil {
		return s.wrap(err, "create account %s (%s)", a.ID, a.Address.Hex())
	}
	return nil
}

// CreateAccount inserts a. When a.Default is true, the owner's other
// accounts stop being default in the same database transaction, in which
// a.Idempotency (when not nil) is stored too. A taken id or address or a
// live idempotency key is engine.ErrConflict; an owner that does not exist
// is engine.ErrNotFound.
func (s *Store) CreateAccount(ctx context.Context, a *engine.Account) error {
	return s.inTx(ctx, func(tx Conn) error {
		if err := s.checkQuota(ctx, tx, a.Quota, 0, 1); err != nil {
			return err
		}
		if err := s.insertAccount(ctx, tx, a); err != nil {
			return err
		}
		if err := s.insertGrants(ctx, tx, a, a.Quota); err != nil {
			return err
		}
		return s.insertIdempotency(ctx, tx, a.Idempotency)
	})
}

// getAccount returns the one account selected by where, or ErrNotFound.
func (s *Store) getAccount(ctx context.Context, what, where string, args ...any) (*engine.Account, error) {
	var r accountRow
	if err := s.r.Get(ctx, &r, `SELECT `+sqlrow.AccountColumns+` FROM accounts WHERE `+where, args...); err != nil {
		return nil, s.wrap(err, "%s", what)
	}
	return decoded(r.Account())
}

// AccountByID returns the account with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) AccountByID(ctx context.Context, id string) (*engine.Account, error) {
	return s.getAccount(ctx, "account "+id, `id = ?`, id)
}

// AccountByAddress returns the account with this address (any owner), or
// engine.ErrNotFound.
func (s *Store) AccountByAddress(ctx context.Context, addr common.Address) (*engine.Account, error) {
	return s.getAccount(ctx, "account "+addr.Hex(), `address = ?`, sqlrow.Address(addr))
}

// DefaultAccount returns the owner's default account, or engine.ErrNotFound
// when the owner has none.
func (s *Store) DefaultAccount(ctx context.Context, owner string) (*engine.Account, error) {
	return s.getAccount(ctx, "default account of "+owner, `owner = ? AND is_default = `+s.yes, owner)
}

// ListAccounts returns the owner's accounts, oldest first (an empty slice
// when there are none).
func (s *Store) ListAccounts(ctx context.Context, owner string) ([]*engine.Account, error) {
	var rows []accountRow
	if err := s.r.Select(ctx, &rows, `SELECT `+sqlrow.AccountColumns+` FROM accounts
		WHERE owner = ? ORDER BY created, `+s.seq, owner); err != nil {
		return nil, s.wrap(err, "list accounts of %s", owner)
	}
	return decoded(sqlrow.Accounts(rows))
}

// SetDefaultAccount makes account id the owner's only default account. It
// returns engine.ErrNotFound when the owner has no account id.
func (s *Store) SetDefaultAccount(ctx context.Context, owner, id string) error {
	return s.inTx(ctx, func(tx Conn) error {
		if err := s.lockOwner(ctx, tx, owner); err != nil {
			return err
		}
		var n int
		err := tx.Get(ctx, &n, `SELECT 1 FROM accounts WHERE id = ? AND owner = ?`, id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return s.notFound("set default account: %s has no account %s", owner, id)
		}
		if err != nil {
			return s.wrap(err, "set default account %s of %s", id, owner)
		}
		// Two statements: the partial unique index allows one default per
		// owner at every step (it is not deferrable).
		if _, err := tx.Exec(ctx, `UPDATE accounts SET is_default = `+s.no+`
			WHERE owner = ? AND is_default = `+s.yes+` AND id <> ?`, owner, id); err != nil {
			return s.wrap(err, "set default account %s of %s: clear", id, owner)
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET is_default = `+s.yes+` WHERE id = ?`, id); err != nil {
			return s.wrap(err, "set default account %s of %s", id, owner)
		}
		return nil
	})
}

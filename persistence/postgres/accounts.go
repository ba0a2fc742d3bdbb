package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// insertAccount inserts a; when a.Default is true, the owner's other
// accounts stop being default first, in the same transaction tx, under the
// owner's lock.
func insertAccount(ctx context.Context, tx *sqlx.Tx, a *engine.Account) error {
	if a.Default {
		if err := lockOwner(ctx, tx, a.Owner); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET is_default = FALSE WHERE owner = $1 AND is_default`, a.Owner); err != nil {
			return wrap(err, "create account %s: clear default", a.ID)
		}
	}
	key := a.EncryptedKey
	if key == nil {
		key = []byte{}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO accounts (`+sqlrow.AccountColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		a.ID, a.Owner, sqlrow.Address(a.Address), a.Default, key, ts(a.Created)); err != nil {
		return wrap(err, "create account %s (%s)", a.ID, a.Address.Hex())
	}
	return nil
}

// CreateAccount inserts a. When a.Default is true, the owner's other
// accounts stop being default in the same database transaction, in which
// a.Idempotency (when not nil) is stored too. A taken id or address or a
// live idempotency key is engine.ErrConflict; an owner that does not exist
// is engine.ErrNotFound.
func (s *Store) CreateAccount(ctx context.Context, a *engine.Account) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := checkQuota(ctx, tx, a.Quota, 0, 1); err != nil {
			return err
		}
		if err := insertAccount(ctx, tx, a); err != nil {
			return err
		}
		if err := insertGrants(ctx, tx, a, a.Quota); err != nil {
			return err
		}
		return insertIdempotency(ctx, tx, a.Idempotency)
	})
}

// getAccount returns the one account selected by where, or ErrNotFound.
func (s *Store) getAccount(ctx context.Context, what, where string, args ...any) (*engine.Account, error) {
	var r accountRow
	if err := s.db.GetContext(ctx, &r, `SELECT `+sqlrow.AccountColumns+` FROM accounts WHERE `+where, args...); err != nil {
		return nil, wrap(err, "%s", what)
	}
	return decoded(r.Account())
}

// AccountByID returns the account with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) AccountByID(ctx context.Context, id string) (*engine.Account, error) {
	return s.getAccount(ctx, "account "+id, `id = $1`, id)
}

// AccountByAddress returns the account with this address (any owner), or
// engine.ErrNotFound.
func (s *Store) AccountByAddress(ctx context.Context, addr common.Address) (*engine.Account, error) {
	return s.getAccount(ctx, "account "+addr.Hex(), `address = $1`, sqlrow.Address(addr))
}

// DefaultAccount returns the owner's default account, or engine.ErrNotFound
// when the owner has none.
func (s *Store) DefaultAccount(ctx context.Context, owner string) (*engine.Account, error) {
	return s.getAccount(ctx, "default account of "+owner, `owner = $1 AND is_default`, owner)
}

// ListAccounts returns the owner's accounts, oldest first (an empty slice
// when there are none).
func (s *Store) ListAccounts(ctx context.Context, owner string) ([]*engine.Account, error) {
	var rows []accountRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+sqlrow.AccountColumns+` FROM accounts
		WHERE owner = $1 ORDER BY created, seq`, owner); err != nil {
		return nil, wrap(err, "list accounts of %s", owner)
	}
	return decoded(sqlrow.Accounts(rows))
}

// SetDefaultAccount makes account id the owner's only default account. It
// returns engine.ErrNotFound when the owner has no account id.
func (s *Store) SetDefaultAccount(ctx context.Context, owner, id string) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockOwner(ctx, tx, owner); err != nil {
			return err
		}
		var n int
		err := tx.GetContext(ctx, &n, `SELECT 1 FROM accounts WHERE id = $1 AND owner = $2`, id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("set default account: %s has no account %s", owner, id)
		}
		if err != nil {
			return wrap(err, "set default account %s of %s", id, owner)
		}
		// Two statements: the partial unique index allows one default per
		// owner at every step (it is not deferrable).
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET is_default = FALSE
			WHERE owner = $1 AND is_default AND id <> $2`, owner, id); err != nil {
			return wrap(err, "set default account %s of %s: clear", id, owner)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET is_default = TRUE WHERE id = $1`, id); err != nil {
			return wrap(err, "set default account %s of %s", id, owner)
		}
		return nil
	})
}

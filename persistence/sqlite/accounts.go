package sqlite

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
// accounts stop being default first, in the same transaction tx.
func insertAccount(ctx context.Context, tx *sqlx.Tx, a *engine.Account) error {
	if a.Default {
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET is_default = 0 WHERE owner = ? AND is_default = 1`, a.Owner); err != nil {
			return wrap(err, "create account %s: clear default", a.ID)
		}
	}
	key := a.EncryptedKey
	if key == nil {
		key = []byte{}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO accounts (`+sqlrow.AccountColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, a.Owner, sqlrow.Address(a.Address), a.Default, key, millis(a.Created)); err != nil {
		return wrap(err, "create account %s (%s)", a.ID, a.Address.Hex())
	}
	return nil
}

// CreateAccount inserts a. When a.Default is true, the owner's other
// accounts stop being default in the same database transaction, which
// also checks a.Quota (engine.CapError over a cap) and records the granted
// faucet fundings of a.Faucet (engine.ErrFaucetBudget over the budget). A
// taken id or address is engine.ErrConflict; an owner that does not exist
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
	if err := s.r.GetContext(ctx, &r, `SELECT `+sqlrow.AccountColumns+` FROM accounts WHERE `+where, args...); err != nil {
		return nil, wrap(err, "%s", what)
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
	return s.getAccount(ctx, "default account of "+owner, `owner = ? AND is_default = 1`, owner)
}

// ListAccounts returns the owner's accounts, oldest first (an empty slice
// when there are none).
func (s *Store) ListAccounts(ctx context.Context, owner string) ([]*engine.Account, error) {
	var rows []accountRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT `+sqlrow.AccountColumns+` FROM accounts
		WHERE owner = ? ORDER BY created, rowid`, owner); err != nil {
		return nil, wrap(err, "list accounts of %s", owner)
	}
	return decoded(sqlrow.Accounts(rows))
}

// SetDefaultAccount makes account id the owner's only default account. It
// returns engine.ErrNotFound when the owner has no account id.
func (s *Store) SetDefaultAccount(ctx context.Context, owner, id string) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var n int
		err := tx.GetContext(ctx, &n, `SELECT 1 FROM accounts WHERE id = ? AND owner = ?`, id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("set default account: %s has no account %s", owner, id)
		}
		if err != nil {
			return wrap(err, "set default account %s of %s", id, owner)
		}
		// Two statements: the partial unique index allows one default per
		// owner at every step.
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET is_default = 0
			WHERE owner = ? AND is_default = 1 AND id <> ?`, owner, id); err != nil {
			return wrap(err, "set default account %s of %s: clear", id, owner)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET is_default = 1 WHERE id = ?`, id); err != nil {
			return wrap(err, "set default account %s of %s", id, owner)
		}
		return nil
	})
}

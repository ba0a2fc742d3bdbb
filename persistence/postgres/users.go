package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// userRow is a row of users.
type userRow struct {
	ID             string         `db:"id"`
	Owner          sql.NullString `db:"owner"`
	Operator       bool           `db:"operator"`
	CallbackSecret string         `db:"callback_secret"`
	Created        time.Time      `db:"created"`
}

func (r *userRow) user() *engine.User {
	return &engine.User{
		ID:             r.ID,
		Owner:          r.Owner.String,
		Operator:       r.Operator,
		CallbackSecret: r.CallbackSecret,
		Created:        fromTS(r.Created),
	}
}

const userColumns = `id, owner, operator, callback_secret, created`

// CreateUser inserts u and, when tokenHash is not nil, a token for it, in
// one database transaction. When account is not nil it is inserted too, as
// the user's default account (account.Default is set to true, and an empty
// account.Owner to u.ID). A taken id, token hash or account address is
// engine.ErrConflict; an Owner that does not exist is engine.ErrNotFound.
func (s *Store) CreateUser(ctx context.Context, u *engine.User, tokenHash []byte, account *engine.Account) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (`+userColumns+`) VALUES ($1, $2, $3, $4, $5)`,
			u.ID, nullString(u.Owner), u.Operator, u.CallbackSecret, ts(u.Created)); err != nil {
			return wrap(err, "create user %s", u.ID)
		}
		if tokenHash != nil {
			if err := insertToken(ctx, tx, u.ID, tokenHash, u.Created); err != nil {
				return err
			}
		}
		if account != nil {
			if account.Owner == "" {
				account.Owner = u.ID
			} else if account.Owner != u.ID {
				return fmt.Errorf("postgres: create user %s: account %s belongs to %s", u.ID, account.ID, account.Owner)
			}
			account.Default = true
			if err := insertAccount(ctx, tx, account); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertToken inserts one token hash of user id.
func insertToken(ctx context.Context, tx *sqlx.Tx, userID string, hash []byte, created time.Time) error {
	if len(hash) == 0 {
		return fmt.Errorf("postgres: add token for user %s: empty token hash", userID)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO api_tokens (hash, user_id, created) VALUES ($1, $2, $3)`,
		hash, userID, ts(created)); err != nil {
		return wrap(err, "add token for user %s", userID)
	}
	return nil
}

// UserByTokenHash returns the user holding the (not revoked) token with this
// hash, or engine.ErrNotFound.
func (s *Store) UserByTokenHash(ctx context.Context, tokenHash []byte) (*engine.User, error) {
	var r userRow
	err := s.db.GetContext(ctx, &r, `SELECT u.id, u.owner, u.operator, u.callback_secret, u.created
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.hash = $1 AND t.revoked IS NULL`, tokenHash)
	if err != nil {
		return nil, wrap(err, "user by token")
	}
	return r.user(), nil
}

// UserByID returns the user with this id, or engine.ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id string) (*engine.User, error) {
	var r userRow
	if err := s.db.GetContext(ctx, &r, `SELECT `+userColumns+` FROM users WHERE id = $1`, id); err != nil {
		return nil, wrap(err, "user %s", id)
	}
	return r.user(), nil
}

// AddToken stores one more token hash for the user. A hash already stored is
// engine.ErrConflict; a user that does not exist is engine.ErrNotFound.
func (s *Store) AddToken(ctx context.Context, userID string, tokenHash []byte) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		return insertToken(ctx, tx, userID, tokenHash, time.Now())
	})
}

// FirstOperator returns the earliest created operator user, or
// engine.ErrNotFound when there is none.
func (s *Store) FirstOperator(ctx context.Context) (*engine.User, error) {
	var r userRow
	err := s.db.GetContext(ctx, &r, `SELECT `+userColumns+` FROM users
		WHERE operator ORDER BY created, seq LIMIT 1`)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("first operator: no operator user")
		}
		return nil, wrap(err, "first operator")
	}
	return r.user(), nil
}

package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// CreateUser inserts u and, when tokenHash is not nil, a token for it, in
// one database transaction. When account is not nil it is inserted too, as
// the user's default account (account.Default is set to true, and an empty
// account.Owner to u.ID), and so is u.Idempotency when not nil. A taken id,
// token hash, account address or live idempotency key is
// engine.ErrConflict; an Owner that does not exist is engine.ErrNotFound.
//
// u.Root is stored as the user's budget root (NULL when empty or u.ID). u.Quota, when
// set, is checked in the same transaction (engine.CapError over a cap), and
// the granted faucet fundings of account.Faucet are recorded
// (engine.ErrFaucetBudget over the budget).
func (s *Store) CreateUser(ctx context.Context, u *engine.User, tokenHash []byte, account *engine.Account) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		accounts := 0
		if account != nil {
			accounts = 1
		}
		if err := checkQuota(ctx, tx, u.Quota, 1, accounts); err != nil {
			return err
		}
		// root_id stays NULL for a user that is its own root.
		cols, vals, args := sqlrow.UserColumns, `$1, $2, $3, $4, $5`, []any{u.ID, sqlrow.NullString(u.Owner), u.Operator, sqlrow.NotNullBytes(u.CallbackSecret), ts(u.Created)}
		if u.Root != "" && u.Root != u.ID {
			cols, vals, args = cols+`, root_id`, `$1, $2, $3, $4, $5, $6`, append(args, u.Root)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (`+cols+`) VALUES (`+vals+`)`, args...); err != nil {
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
			if err := insertGrants(ctx, tx, account, u.Quota); err != nil {
				return err
			}
		}
		return insertIdempotency(ctx, tx, u.Idempotency)
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
	err := s.db.GetContext(ctx, &r, sqlrow.UserByTokenSelect+`$1`, tokenHash)
	if err != nil {
		return nil, wrap(err, "user by token")
	}
	return decoded(r.User())
}

// UserByID returns the user with this id, or engine.ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id string) (*engine.User, error) {
	var r userRow
	if err := s.db.GetContext(ctx, &r, `SELECT `+sqlrow.UserSelect+` FROM users WHERE id = $1`, id); err != nil {
		return nil, wrap(err, "user %s", id)
	}
	return decoded(r.User())
}

// AddToken stores one more token hash for the user, and idem (when not nil)
// in the same database transaction. A hash already stored or a live
// idempotency key is engine.ErrConflict; a user that does not exist is
// engine.ErrNotFound.
func (s *Store) AddToken(ctx context.Context, userID string, tokenHash []byte, idem *engine.IdempotencyRecord) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := insertToken(ctx, tx, userID, tokenHash, time.Now()); err != nil {
			return err
		}
		return insertIdempotency(ctx, tx, idem)
	})
}

// SetUserLimits stores the rate limits of user id; nil restores the
// defaults. A user that does not exist is engine.ErrNotFound. It is one
// statement, so it needs no explicit transaction.
func (s *Store) SetUserLimits(ctx context.Context, id string, limits *engine.RateLimits) error {
	var perSecond, perHour sql.NullInt64
	if limits != nil {
		perSecond = sql.NullInt64{Int64: int64(limits.PerSecond), Valid: true}
		perHour = sql.NullInt64{Int64: int64(limits.PerHour), Valid: true}
	}
	res, err := s.db.ExecContext(ctx, `UPDATE users SET limit_per_second = $1, limit_per_hour = $2 WHERE id = $3`,
		perSecond, perHour, id)
	if err != nil {
		return wrap(err, "set limits of user %s", id)
	}
	if n, err := res.RowsAffected(); err != nil {
		return wrap(err, "set limits of user %s", id)
	} else if n == 0 {
		return notFound("set limits of user %s: no such user", id)
	}
	return nil
}

// FirstOperator returns the earliest created operator user, or
// engine.ErrNotFound when there is none.
func (s *Store) FirstOperator(ctx context.Context) (*engine.User, error) {
	var r userRow
	err := s.db.GetContext(ctx, &r, `SELECT `+sqlrow.UserSelect+` FROM users
		WHERE operator ORDER BY created, seq LIMIT 1`)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("first operator: no operator user")
		}
		return nil, wrap(err, "first operator")
	}
	return decoded(r.User())
}

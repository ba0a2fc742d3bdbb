package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

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
	return s.inTx(ctx, func(tx Conn) error {
		accounts := 0
		if account != nil {
			accounts = 1
		}
		if err := s.checkQuota(ctx, tx, u.Quota, 1, accounts); err != nil {
			return err
		}
		// root_id stays NULL for a user that is its own root.
		cols, vals, args := sqlrow.UserColumns, `?, ?, ?, ?, ?`, []any{u.ID, sqlrow.NullString(u.Owner), u.Operator, sqlrow.NotNullBytes(u.CallbackSecret), s.ts(u.Created)}
		if u.Root != "" && u.Root != u.ID {
			cols, vals, args = cols+`, root_id`, `?, ?, ?, ?, ?, ?`, append(args, u.Root)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO users (`+cols+`) VALUES (`+vals+`)`, args...); err != nil {
			return s.wrap(err, "create user %s", u.ID)
		}
		if tokenHash != nil {
			if err := s.insertToken(ctx, tx, u.ID, tokenHash, u.Created); err != nil {
				return err
			}
		}
		if account != nil {
			if account.Owner == "" {
				account.Owner = u.ID
			} else if account.Owner != u.ID {
				return s.errorf("create user %s: account %s belongs to %s", u.ID, account.ID, account.Owner)
			}
			account.Default = true
			if err := s.insertAccount(ctx, tx, account); err != nil {
				return err
			}
			if err := s.insertGrants(ctx, tx, account, u.Quota); err != nil {
				return err
			}
		}
		return s.insertIdempotency(ctx, tx, u.Idempotency)
	})
}

// UserByTokenHash returns the user holding the (not revoked) token with this
// hash, or engine.ErrNotFound.
func (s *Store) UserByTokenHash(ctx context.Context, tokenHash []byte) (*engine.User, error) {
	var r userRow
	err := s.r.Get(ctx, &r, sqlrow.UserByTokenSelect+`?`, tokenHash)
	if err != nil {
		return nil, s.wrap(err, "user by token")
	}
	return decoded(r.User())
}

// UserByID returns the user with this id, or engine.ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id string) (*engine.User, error) {
	var r userRow
	if err := s.r.Get(ctx, &r, `SELECT `+sqlrow.UserSelect+` FROM users WHERE id = ?`, id); err != nil {
		return nil, s.wrap(err, "user %s", id)
	}
	return decoded(r.User())
}

// AddToken stores one more token hash for the user, and idem (when not nil)
// in the same database transaction. A hash already stored or a live
// idempotency key is engine.ErrConflict; a user that does not exist is
// engine.ErrNotFound.
func (s *Store) AddToken(ctx context.Context, userID string, tokenHash []byte, idem *engine.IdempotencyRecord) error {
	return s.inTx(ctx, func(tx Conn) error {
		if err := s.insertToken(ctx, tx, userID, tokenHash, time.Now()); err != nil {
			return err
		}
		return s.insertIdempotency(ctx, tx, idem)
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
	res, err := s.w.Exec(ctx, `UPDATE users SET limit_per_second = ?, limit_per_hour = ? WHERE id = ?`,
		perSecond, perHour, id)
	if err != nil {
		return s.wrap(err, "set limits of user %s", id)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.wrap(err, "set limits of user %s", id)
	} else if n == 0 {
		return s.notFound("set limits of user %s: no such user", id)
	}
	return nil
}

// FirstOperator returns the earliest created operator user, or
// engine.ErrNotFound when there is none.
func (s *Store) FirstOperator(ctx context.Context) (*engine.User, error) {
	var r userRow
	err := s.r.Get(ctx, &r, `SELECT `+sqlrow.UserSelect+` FROM users
		WHERE operator = `+s.yes+` ORDER BY created, `+s.seq+` LIMIT 1`)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, s.notFound("first operator: no operator user")
		}
		return nil, s.wrap(err, "first operator")
	}
	return decoded(r.User())
}

// lockOwner locks the users row of owner until the end of tx, so that the
// writes of one owner's default account run one after the other, where
// writers are not serialised anyway (Dialect.Lock). The lock does not
// block the foreign key checks of inserts that reference the user. A
// missing owner is not an error here: the insert that follows reports it.
func (s *Store) lockOwner(ctx context.Context, tx Conn, owner string) error {
	lock := s.d.Lock(LockNoKeyUpdate)
	if lock == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM users WHERE id = ?`+lock, owner); err != nil {
		return s.wrap(err, "lock user %s", owner)
	}
	return nil
}

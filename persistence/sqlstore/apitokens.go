package sqlstore

import (
	"context"
	"time"

	"github.com/txengine/txengine/engine"
)

var _ engine.TokenStore = (*Store)(nil)

// tokenRow is a row of api_tokens, with its user's operator flag.
type tokenRow struct {
	ID       string  `db:"id"`
	UserID   string  `db:"user_id"`
	Hash     []byte  `db:"hash"`
	Created  timeCol `db:"created"`
	Operator bool    `db:"operator"`
}

func (r tokenRow) token() engine.APIToken {
	return engine.APIToken{ID: r.ID, UserID: r.UserID, Hash: r.Hash, Created: r.Created.t}
}

// insertToken inserts one token hash of user id, with a new token id.
func (s *Store) insertToken(ctx context.Context, tx Conn, userID string, hash []byte, created time.Time) error {
	if len(hash) == 0 {
		return s.errorf("add token for user %s: empty token hash", userID)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO api_tokens (id, hash, user_id, created) VALUES (?, ?, ?, ?)`,
		engine.NewID(), hash, userID, s.ts(created)); err != nil {
		return s.wrap(err, "add token for user %s", userID)
	}
	return nil
}

// ListTokens implements engine.TokenStore: the active tokens of userID,
// oldest first (one range of the api_tokens_user index).
func (s *Store) ListTokens(ctx context.Context, userID string) ([]engine.APIToken, error) {
	var rows []tokenRow
	if err := s.r.Select(ctx, &rows, `SELECT t.id, t.user_id, t.hash, t.created, u.operator
		FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.user_id = ? AND t.revoked IS NULL ORDER BY t.created, t.id`, userID); err != nil {
		return nil, s.wrap(err, "list tokens of user %s", userID)
	}
	out := make([]engine.APIToken, len(rows))
	for i, r := range rows {
		out[i] = r.token()
	}
	return out, nil
}

// RevokeToken implements engine.TokenStore in one database transaction.
// When the token is an operator's, the operators' users rows are locked
// first (PostgreSQL; SQLite serialises writers), so that two revocations of
// the last two operator tokens, on two nodes at once, cannot both pass the
// count: the second one counts after the first committed and is refused.
func (s *Store) RevokeToken(ctx context.Context, userID, tokenID string, at time.Time) (*engine.APIToken, error) {
	var out engine.APIToken
	err := s.inTx(ctx, func(tx Conn) error {
		var r tokenRow
		err := tx.Get(ctx, &r, `SELECT t.id, t.user_id, t.hash, t.created, u.operator
			FROM api_tokens t JOIN users u ON u.id = t.user_id
			WHERE t.id = ? AND t.user_id = ? AND t.revoked IS NULL`, tokenID, userID)
		if err != nil {
			return s.wrap(err, "revoke token %s of user %s", tokenID, userID)
		}
		if r.Operator {
			if err := s.keepOperatorToken(ctx, tx, tokenID); err != nil {
				return err
			}
		}
		res, err := tx.Exec(ctx, `UPDATE api_tokens SET revoked = ? WHERE id = ? AND revoked IS NULL`, s.ts(at), tokenID)
		if err != nil {
			return s.wrap(err, "revoke token %s of user %s", tokenID, userID)
		}
		if n, err := res.RowsAffected(); err != nil {
			return s.wrap(err, "revoke token %s of user %s", tokenID, userID)
		} else if n == 0 {
			// Revoked by a concurrent request since the read above.
			return s.notFound("revoke token %s of user %s: already revoked", tokenID, userID)
		}
		out = r.token()
		out.Revoked = at.UTC().Truncate(time.Millisecond)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// keepOperatorToken returns engine.ErrLastOperatorToken when no operator
// holds an active token besides tokenID. It locks the operators' rows first.
func (s *Store) keepOperatorToken(ctx context.Context, tx Conn, tokenID string) error {
	if lock := s.d.Lock(LockNoKeyUpdate); lock != "" {
		if _, err := tx.Exec(ctx, `SELECT id FROM users WHERE operator = `+s.yes+lock); err != nil {
			return s.wrap(err, "lock the operators")
		}
	}
	var others int
	if err := tx.Get(ctx, &others, `SELECT COUNT(*) FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE u.operator = `+s.yes+` AND t.revoked IS NULL AND t.id <> ?`, tokenID); err != nil {
		return s.wrap(err, "count operator tokens")
	}
	if others == 0 {
		return s.errorf("revoke token %s: %w: %w", tokenID, engine.ErrLastOperatorToken, engine.ErrConflict)
	}
	return nil
}

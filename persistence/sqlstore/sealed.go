package sqlstore

import (
	"context"
	"fmt"

	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ keystore.SealedStore = (*Store)(nil)

// sealedSQL is the SQL of one sealed column: the page read after a cursor
// and the compare-and-swap update.
type sealedSQL struct {
	page, swap string
	// keyed: the rows are keyed by (user_id, key), the cursor has both.
	keyed bool
}

// sealedQueries returns the SQL of kind. The pages follow the primary
// keys, so each is one index range scan.
func sealedQueries(kind keystore.SealedKind) (sealedSQL, error) {
	switch kind {
	case keystore.SealedAccountKeys:
		return sealedSQL{
			page: `SELECT id, '' AS key, address, encrypted_key AS sealed, kms_key_id IS NOT NULL AS in_kms FROM accounts WHERE id > ? ORDER BY id LIMIT ?`,
			swap: `UPDATE accounts SET encrypted_key = ? WHERE id = ? AND encrypted_key = ?`,
		}, nil
	case keystore.SealedCallbackSecrets:
		return sealedSQL{
			page: `SELECT id, '' AS key, '' AS address, callback_secret AS sealed, FALSE AS in_kms FROM users WHERE id > ? ORDER BY id LIMIT ?`,
			swap: `UPDATE users SET callback_secret = ? WHERE id = ? AND callback_secret = ?`,
		}, nil
	case keystore.SealedIdempotency:
		return sealedSQL{
			page: `SELECT user_id AS id, key, '' AS address, body AS sealed, FALSE AS in_kms FROM idempotency_keys
				WHERE (user_id, key) > (?, ?) ORDER BY user_id, key LIMIT ?`,
			swap:  `UPDATE idempotency_keys SET body = ? WHERE user_id = ? AND key = ? AND body = ?`,
			keyed: true,
		}, nil
	}
	return sealedSQL{}, fmt.Errorf("unknown sealed column %q", kind)
}

// sealedRow is a row of a sealed page.
type sealedRow struct {
	ID      string `db:"id"`
	Key     string `db:"key"`
	Address string `db:"address"`
	Sealed  []byte `db:"sealed"`
	InKMS   bool   `db:"in_kms"`
}

// sealedValues decodes the rows of a sealed page.
func sealedValues(kind keystore.SealedKind, rows []sealedRow) ([]keystore.SealedValue, error) {
	out := make([]keystore.SealedValue, len(rows))
	for i, r := range rows {
		addr, err := sqlrow.FromAddress("address", r.Address)
		if err != nil {
			return nil, fmt.Errorf("read %s: row %s: %w", kind, r.ID, err)
		}
		out[i] = keystore.SealedValue{ID: r.ID, Key: r.Key, Address: addr, Sealed: r.Sealed, InKMS: r.InKMS}
	}
	return out, nil
}

// SealedValues implements keystore.SealedStore on the read pool: pages along
// the primary keys.
func (s *Store) SealedValues(ctx context.Context, kind keystore.SealedKind, afterID, afterKey string, limit int) ([]keystore.SealedValue, error) {
	qs, err := sealedQueries(kind)
	if err != nil {
		return nil, s.errorf("%w", err)
	}
	args := []any{afterID}
	if qs.keyed {
		args = append(args, afterKey)
	}
	var rows []sealedRow
	if err := s.r.Select(ctx, &rows, qs.page, append(args, limit)...); err != nil {
		return nil, s.wrap(err, "read %s", kind)
	}
	return decoded(sealedValues(kind, rows))
}

// PlainCallbackSecrets implements keystore.SealedStore: one statement that
// reads only the users whose callback secret is stored in plain text (its
// first byte is keystore.PlainVersion), so that the check at every start
// does not page through every user.
func (s *Store) PlainCallbackSecrets(ctx context.Context, limit int) ([]keystore.SealedValue, error) {
	var rows []sealedRow
	if err := s.r.Select(ctx, &rows, `SELECT id, '' AS key, '' AS address, callback_secret AS sealed, FALSE AS in_kms FROM users
		WHERE substr(callback_secret, 1, 1) = ? ORDER BY id LIMIT ?`, []byte{keystore.PlainVersion}, limit); err != nil {
		return nil, s.wrap(err, "read plain callback secrets")
	}
	return decoded(sealedValues(keystore.SealedCallbackSecrets, rows))
}

// Resealer is the optional bulk statement of a Dialect that applies the
// compare-and-swaps of a batch of ResealValues on c in one statement (one
// round trip whatever their number) and returns how many rows changed.
// Without it, the store runs the column's swap once per row in one write
// transaction.
type Resealer interface {
	Reseal(ctx context.Context, c Conn, kind keystore.SealedKind, swaps []keystore.Reseal) (int, error)
}

// ResealValues implements keystore.SealedStore: the swaps of the batch in
// one database transaction, each applied only where the row still holds
// its Old value.
func (s *Store) ResealValues(ctx context.Context, kind keystore.SealedKind, swaps []keystore.Reseal) (int, error) {
	if r, ok := s.d.(Resealer); ok {
		n, err := r.Reseal(ctx, s.w, kind, swaps)
		if err != nil {
			return 0, s.wrap(err, "re-encrypt %s", kind)
		}
		return n, nil
	}
	qs, err := sealedQueries(kind)
	if err != nil {
		return 0, s.errorf("%w", err)
	}
	changed := 0
	err = s.inTx(ctx, func(tx Conn) error {
		for _, sw := range swaps {
			args := []any{sw.New, sw.ID}
			if qs.keyed {
				args = append(args, sw.Key)
			}
			res, err := tx.Exec(ctx, qs.swap, append(args, sw.Old)...)
			if err != nil {
				return s.wrap(err, "re-encrypt %s: row %s", kind, sw.ID)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return s.wrap(err, "re-encrypt %s: row %s", kind, sw.ID)
			}
			changed += int(n)
		}
		return nil
	})
	return changed, err
}

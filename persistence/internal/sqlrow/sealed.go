package sqlrow

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// sealedSQL is the SQL of one sealed column, with ? placeholders (a store
// rebinds them): the page read after a cursor and the compare-and-swap
// update.
type sealedSQL struct {
	page, swap string
	// keyed: the rows are keyed by (user_id, key), the cursor has both.
	keyed bool
}

// sealedQueries returns the SQL of kind. The pages follow the primary
// keys, so each is one index range scan.
func sealedQueries(kind engine.SealedKind) (sealedSQL, error) {
	switch kind {
	case engine.SealedAccountKeys:
		return sealedSQL{
			page: `SELECT id, '' AS key, address, encrypted_key AS sealed FROM accounts WHERE id > ? ORDER BY id LIMIT ?`,
			swap: `UPDATE accounts SET encrypted_key = ? WHERE id = ? AND encrypted_key = ?`,
		}, nil
	case engine.SealedCallbackSecrets:
		return sealedSQL{
			page: `SELECT id, '' AS key, '' AS address, callback_secret AS sealed FROM users WHERE id > ? ORDER BY id LIMIT ?`,
			swap: `UPDATE users SET callback_secret = ? WHERE id = ? AND callback_secret = ?`,
		}, nil
	case engine.SealedIdempotency:
		return sealedSQL{
			page: `SELECT user_id AS id, key, '' AS address, body AS sealed FROM idempotency_keys
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
}

// SealedValues is engine.SealedStore's SealedValues on q; bindType is the
// store's placeholder style (sqlx.QUESTION, sqlx.DOLLAR).
func SealedValues(ctx context.Context, q sqlx.QueryerContext, bindType int, kind engine.SealedKind, afterID, afterKey string, limit int) ([]engine.SealedValue, error) {
	qs, err := sealedQueries(kind)
	if err != nil {
		return nil, err
	}
	args := []any{afterID}
	if qs.keyed {
		args = append(args, afterKey)
	}
	var rows []sealedRow
	if err := sqlx.SelectContext(ctx, q, &rows, sqlx.Rebind(bindType, qs.page), append(args, limit)...); err != nil {
		return nil, fmt.Errorf("read %s: %w", kind, err)
	}
	out := make([]engine.SealedValue, len(rows))
	for i, r := range rows {
		addr, err := FromAddress("address", r.Address)
		if err != nil {
			return nil, fmt.Errorf("read %s: row %s: %w", kind, r.ID, err)
		}
		out[i] = engine.SealedValue{ID: r.ID, Key: r.Key, Address: addr, Sealed: r.Sealed}
	}
	return out, nil
}

// ResealValues is engine.SealedStore's ResealValues in tx: each swap is
// applied only where the row still holds its Old value.
func ResealValues(ctx context.Context, tx sqlx.ExecerContext, bindType int, kind engine.SealedKind, swaps []engine.Reseal) (int, error) {
	qs, err := sealedQueries(kind)
	if err != nil {
		return 0, err
	}
	query := sqlx.Rebind(bindType, qs.swap)
	changed := 0
	for _, sw := range swaps {
		args := []any{sw.New, sw.ID}
		if qs.keyed {
			args = append(args, sw.Key)
		}
		res, err := tx.ExecContext(ctx, query, append(args, sw.Old)...)
		if err != nil {
			return 0, fmt.Errorf("re-encrypt %s: row %s: %w", kind, sw.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("re-encrypt %s: row %s: %w", kind, sw.ID, err)
		}
		changed += int(n)
	}
	return changed, nil
}

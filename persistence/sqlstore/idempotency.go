package sqlstore

import (
	"context"
	"fmt"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// IdempotencyWriter is the optional bulk statement of a Dialect that writes
// idempotency records, whatever their number: each replaces an expired
// record of its (user, key); a live record is engine.ErrConflict (the
// caller's transaction is then rolled back). The store passes records of
// distinct (user, key) only: two of one key in a batch are a conflict it
// reports itself. Without it, the store runs a delete of the expired
// record and an insert per record.
type IdempotencyWriter interface {
	InsertIdempotency(ctx context.Context, tx Conn, rs []*engine.IdempotencyRecord) error
}

// insertIdempotency stores the records rs (nil ones skipped) in tx. An
// expired record of the same (user, key) is replaced; a live one is
// engine.ErrConflict.
func (s *Store) insertIdempotency(ctx context.Context, tx Conn, rs ...*engine.IdempotencyRecord) error {
	var live []*engine.IdempotencyRecord
	seen := make(map[[2]string]bool, len(rs))
	for _, r := range rs {
		if r == nil {
			continue
		}
		if err := sqlrow.CheckIdempotency(r); err != nil {
			return s.errorf("%w", err)
		}
		k := [2]string{r.UserID, r.Key}
		if seen[k] {
			return s.errorf("two records of idempotency key %q of %s in one write: %w", r.Key, r.UserID, engine.ErrConflict)
		}
		seen[k] = true
		if r.Body == nil {
			r.Body = []byte{}
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return nil
	}
	if w, ok := s.d.(IdempotencyWriter); ok {
		return s.wrap(w.InsertIdempotency(ctx, tx, live), "idempotency key of %s", live[0].UserID)
	}
	for _, r := range live {
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = ? AND key = ? AND created <= ?`,
			r.UserID, r.Key, s.ts(r.Created.Add(-engine.IdempotencyTTL))); err != nil {
			return s.wrap(err, "idempotency key of %s: drop expired", r.UserID)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (`+sqlrow.IdempotencyColumns+`)
			VALUES (?, ?, ?, ?, ?, ?)`, r.UserID, r.Key, r.RequestHash, r.Status, r.Body, s.ts(r.Created)); err != nil {
			return s.wrap(err, "idempotency key of %s", r.UserID)
		}
	}
	return nil
}

// IdempotencyRecord returns the record of (userID, key), expired or not,
// or engine.ErrNotFound.
func (s *Store) IdempotencyRecord(ctx context.Context, userID, key string) (*engine.IdempotencyRecord, error) {
	var r idempotencyRow
	if err := s.r.Get(ctx, &r, `SELECT `+sqlrow.IdempotencyColumns+`
		FROM idempotency_keys WHERE user_id = ? AND key = ?`, userID, key); err != nil {
		return nil, s.wrap(err, "idempotency key of %s", userID)
	}
	return decoded(r.Record())
}

// IdempotencyRecords returns the records of userID's keys that exist,
// expired or not, by key: one statement (per chunk of the dialect's
// list) for what IdempotencyRecord reads one key at a time.
func (s *Store) IdempotencyRecords(ctx context.Context, userID string, keys []string) (map[string]*engine.IdempotencyRecord, error) {
	out := make(map[string]*engine.IdempotencyRecord, len(keys))
	what := fmt.Sprintf("%d idempotency keys of %s", len(keys), userID)
	err := selectIn(ctx, s, what, "key", keys, `SELECT `+sqlrow.IdempotencyColumns+`
		FROM idempotency_keys WHERE user_id = ? AND `, ``, []any{userID},
		func(r *idempotencyRow) error {
			rec, err := decoded(r.Record())
			if err != nil {
				return err
			}
			out[rec.Key] = rec
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

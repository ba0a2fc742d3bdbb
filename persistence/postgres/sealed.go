package postgres

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ engine.SealedStore = (*Store)(nil)

// SealedValues implements engine.SealedStore.
func (s *Store) SealedValues(ctx context.Context, kind engine.SealedKind, afterID, afterKey string, limit int) ([]engine.SealedValue, error) {
	vs, err := sqlrow.SealedValues(ctx, s.db, sqlx.DOLLAR, kind, afterID, afterKey, limit)
	return vs, wrap(err, "sealed values")
}

// resealSQL is the compare-and-swap update of a sealed column for a batch
// in one statement (unnest of ids, keys, old and new values): one round
// trip per batch.
func resealSQL(kind engine.SealedKind) (string, error) {
	switch kind {
	case engine.SealedAccountKeys:
		return `UPDATE accounts AS t SET encrypted_key = v.new
			FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[]) AS v (id, key, old, new)
			WHERE t.id = v.id AND t.encrypted_key = v.old`, nil
	case engine.SealedCallbackSecrets:
		return `UPDATE users AS t SET callback_secret = v.new
			FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[]) AS v (id, key, old, new)
			WHERE t.id = v.id AND t.callback_secret = v.old`, nil
	case engine.SealedIdempotency:
		return `UPDATE idempotency_keys AS t SET body = v.new
			FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[]) AS v (id, key, old, new)
			WHERE t.user_id = v.id AND t.key = v.key AND t.body = v.old`, nil
	}
	return "", fmt.Errorf("postgres: unknown sealed column %q", kind)
}

// ResealValues implements engine.SealedStore: the swaps in one statement,
// so in one database transaction.
func (s *Store) ResealValues(ctx context.Context, kind engine.SealedKind, swaps []engine.Reseal) (int, error) {
	q, err := resealSQL(kind)
	if err != nil {
		return 0, err
	}
	var ids, keys pq.StringArray
	var olds, news pq.ByteaArray
	for _, sw := range swaps {
		ids, keys = append(ids, sw.ID), append(keys, sw.Key)
		olds, news = append(olds, sw.Old), append(news, sw.New)
	}
	res, err := s.db.ExecContext(ctx, q, ids, keys, olds, news)
	if err != nil {
		return 0, wrap(err, "re-encrypt %s", kind)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap(err, "re-encrypt %s", kind)
	}
	return int(n), nil
}

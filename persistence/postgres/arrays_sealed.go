package postgres

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// resealSQL is the compare-and-swap update of a sealed column for a batch
// in one statement (unnest of ids, keys, old and new values).
func resealSQL(kind keystore.SealedKind) (string, error) {
	switch kind {
	case keystore.SealedAccountKeys:
		return `UPDATE accounts AS t SET encrypted_key = v.new
			FROM unnest(?::text[], ?::text[], ?::bytea[], ?::bytea[]) AS v (id, key, old, new)
			WHERE t.id = v.id AND t.encrypted_key = v.old`, nil
	case keystore.SealedCallbackSecrets:
		return `UPDATE users AS t SET callback_secret = v.new
			FROM unnest(?::text[], ?::text[], ?::bytea[], ?::bytea[]) AS v (id, key, old, new)
			WHERE t.id = v.id AND t.callback_secret = v.old`, nil
	case keystore.SealedIdempotency:
		return `UPDATE idempotency_keys AS t SET body = v.new
			FROM unnest(?::text[], ?::text[], ?::bytea[], ?::bytea[]) AS v (id, key, old, new)
			WHERE t.user_id = v.id AND t.key = v.key AND t.body = v.old`, nil
	}
	return "", fmt.Errorf("unknown sealed column %q", kind)
}

var _ sqlstore.Resealer = dialect{}

// Reseal implements sqlstore.Resealer with resealSQL.
func (dialect) Reseal(ctx context.Context, c sqlstore.Conn, kind keystore.SealedKind, swaps []keystore.Reseal) (int, error) {
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
	res, err := c.Exec(ctx, q, ids, keys, olds, news)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

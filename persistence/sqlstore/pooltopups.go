package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/txengine/txengine/engine"
)

// topUpsSentQuery is the count of PoolTopUps (placeholders: the key
// prefix, the pool id): the treasury's rows of the pool whose key starts
// with the prefix, read through the treasury's rows (transactions_queue:
// account and network), not through every row of the pool (COALESCE keeps
// the planners from probing transactions_pool_created). The pool's row
// is read whether deleted or not; none: the pool is unknown. substr, not
// LIKE or a range: '_' is a LIKE wildcard, and a collation may order ':'
// as it likes.
func topUpsSentQuery() string {
	return fmt.Sprintf(`SELECT p.treasury_id, (SELECT COUNT(*) FROM transactions t
		WHERE t.account_id = p.treasury_id AND t.network = p.network AND COALESCE(t.pool_id, '') = p.id
			AND substr(t.ordering_key, 1, %d) = ?) AS sent
		FROM pools p WHERE p.id = ?`, len(engine.TopUpKeyPrefix))
}

// topUpsPendingQuery lists the keys of the pool's top-ups not ended
// (placeholders: the pool id, the key prefix), from the pool's pending
// keyed rows (transactions_pool_key, whose condition it names).
func topUpsPendingQuery() string {
	return fmt.Sprintf(`SELECT ordering_key FROM transactions
		WHERE pool_id = ? AND ordering_key IS NOT NULL AND %s AND substr(ordering_key, 1, %d) = ?`,
		pendingStatuses, len(engine.TopUpKeyPrefix))
}

// topUpsRow is the row of topUpsSentQuery.
type topUpsRow struct {
	TreasuryID sql.NullString `db:"treasury_id"`
	Sent       int            `db:"sent"`
}

// PoolTopUps implements engine.PoolStore in two statements: the count of
// the treasury's top-ups of the pool, and the keys of those pending.
func (s *Store) PoolTopUps(ctx context.Context, poolID string) (engine.PoolTopUps, error) {
	var row topUpsRow
	err := s.r.Get(ctx, &row, topUpsSentQuery(), engine.TopUpKeyPrefix, poolID)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.PoolTopUps{}, s.notFound("top-ups of pool %s: no such pool", poolID)
	}
	if err != nil {
		return engine.PoolTopUps{}, s.wrap(err, "top-ups of pool %s", poolID)
	}
	out := engine.PoolTopUps{Sent: row.Sent, Pending: []string{}}
	if !row.TreasuryID.Valid {
		return out, nil
	}
	if err := s.r.Select(ctx, &out.Pending, topUpsPendingQuery(), poolID, engine.TopUpKeyPrefix); err != nil {
		return engine.PoolTopUps{}, s.wrap(err, "pending top-ups of pool %s", poolID)
	}
	return out, nil
}

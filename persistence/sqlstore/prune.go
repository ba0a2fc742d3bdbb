package sqlstore

import (
	"context"
	"time"
)

// PruneCallbacks implements engine.OutboxPruner: one DELETE of the oldest
// ended rows (the partial index on created of rows that are not
// pending finds them; the literal keeps it usable on SQLite).
func (s *Store) PruneCallbacks(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := s.deleted(ctx, `DELETE FROM callback_outbox WHERE id IN (
		SELECT id FROM callback_outbox WHERE status <> 'pending' AND created < ?
		ORDER BY created LIMIT ?)`, s.ts(before), limit)
	if err != nil {
		return 0, s.wrap(err, "prune callbacks")
	}
	return n, nil
}

// PruneSubscriptionEvents implements engine.OutboxPruner: one DELETE of the
// oldest deliveries that no outbox row refers to.
func (s *Store) PruneSubscriptionEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	n, err := s.deleted(ctx, `DELETE FROM subscription_events WHERE id IN (
		SELECT e.id FROM subscription_events e WHERE e.created < ?
			AND NOT EXISTS (SELECT 1 FROM callback_outbox o WHERE o.event_id = e.id)
		ORDER BY e.created LIMIT ?)`, s.ts(before), limit)
	if err != nil {
		return 0, s.wrap(err, "prune subscription deliveries")
	}
	return n, nil
}

// deleted runs a DELETE in its own database transaction and returns how
// many rows it deleted.
func (s *Store) deleted(ctx context.Context, query string, args ...any) (int, error) {
	var n int64
	err := s.inTx(ctx, func(tx Conn) error {
		res, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

package sqlstore

import (
	"context"

	"github.com/txengine/txengine/engine"
)

var _ engine.QueueCounter = (*Store)(nil)

// CountQueued returns how many transactions of the account on the network
// are queued (status new or waiting), for the queue depth gauge. It reads
// the transactions_queue index only.
func (s *Store) CountQueued(ctx context.Context, accountID, network string) (int, error) {
	var n int
	if err := s.r.Get(ctx, &n, `SELECT COUNT(*) FROM transactions
		WHERE account_id = ? AND network = ? AND status IN (?, ?)`,
		accountID, network, string(engine.StatusNew), string(engine.StatusWaiting)); err != nil {
		return 0, s.wrap(err, "count queued transactions of %s on %s", accountID, network)
	}
	return n, nil
}

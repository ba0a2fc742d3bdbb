package sqlite

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ engine.StageStore = (*Store)(nil)

// readyStatement reads the oldest transactions of an account on a network
// in a status: ReadyTransactions (sqlstore's readyOfAccount serves
// ReadyTransactionsOf).
const readyStatement = sqlrow.TxSelect + `
	WHERE account_id = ? AND network = ? AND status = ? ORDER BY seq LIMIT ?`

// readyWith runs readyStatement with sel (a query of the statement's
// rows into dest) for the account's new transactions on network, at most
// limit.
func readyWith(sel func(dest any, args ...any) error, accountID, network string, limit int) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := sel(&rows, accountID, network, string(engine.StatusNew), limit); err != nil {
		return nil, wrap(err, "ready transactions of %s on %s", accountID, network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// MarkSubmittedGroups implements engine.StageStore: one write transaction
// (writers are serialised, so the order of the fence checks cannot
// deadlock) in which each group's fence is checked and its transactions
// marked, in group order. The first error rolls everything back and is
// returned as MarkSubmittedMany returns it.
func (s *Store) MarkSubmittedGroups(ctx context.Context, groups []engine.SubmitGroup) error {
	if len(groups) == 0 {
		return nil
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		for _, g := range groups {
			if err := checkFence(ctx, dbtx, g.Fence); err != nil {
				return err
			}
			for _, tx := range g.Txs {
				if err := s.markSubmitted(ctx, dbtx, g.Fence, tx); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

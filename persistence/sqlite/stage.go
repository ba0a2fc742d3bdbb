package sqlite

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

var _ engine.StageStore = (*Store)(nil)

// InFlightSummaries implements engine.StageStore: one statement per
// hashChunk accounts (inChunks; SQLite bounds the bound parameters of a
// statement), read from the transactions_queue index and the rows' nonces.
func (s *Store) InFlightSummaries(ctx context.Context, network string, accountIDs []string) (map[string]engine.InFlightSummary, error) {
	out := make(map[string]engine.InFlightSummary, len(accountIDs))
	err := inChunks(accountIDs, func(in string, ids []any) error {
		var rows []sqlrow.InFlightRow
		if err := s.r.SelectContext(ctx, &rows, `SELECT account_id, COUNT(*) AS n, MIN(nonce) AS lowest
			FROM transactions WHERE network = ? AND status = ? AND account_id IN `+in+`
			GROUP BY account_id`, append([]any{network, string(engine.StatusSubmitted)}, ids...)...); err != nil {
			return wrap(err, "in-flight summaries of %d accounts on %s", len(ids), network)
		}
		for _, r := range rows {
			out[r.AccountID] = r.Summary()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadyTransactionsOf implements engine.StageStore: the statement of
// ReadyTransactions, prepared once and run for each account with a limit
// > 0, inside one read transaction (one snapshot of the database). SQLite
// runs in process, so a statement per account costs no round trip, and
// each is an index scan of transactions_queue (account_id, network,
// status, seq) that stops at the account's limit; SQLite has no LATERAL,
// and a ROW_NUMBER() window over the accounts would read every new row of
// each account (a deep queue whole) to keep its first limit.
func (s *Store) ReadyTransactionsOf(ctx context.Context, network string, limits map[string]int) (map[string][]*engine.Transaction, error) {
	out := make(map[string][]*engine.Transaction, len(limits))
	asked := 0
	for _, n := range limits {
		if n > 0 {
			asked++
		}
	}
	if asked == 0 {
		return out, nil
	}
	rtx, err := s.r.BeginTxx(ctx, nil)
	if err != nil {
		return nil, wrap(err, "ready transactions of %d accounts on %s: begin", asked, network)
	}
	defer func() { _ = rtx.Rollback() }() // read only: nothing to commit
	stmt, err := rtx.PreparexContext(ctx, readyStatement)
	if err != nil {
		return nil, wrap(err, "ready transactions of %d accounts on %s: prepare", asked, network)
	}
	defer stmt.Close()
	for id, n := range limits {
		if n <= 0 {
			continue
		}
		txs, err := readyWith(func(dest any, args ...any) error {
			return stmt.SelectContext(ctx, dest, args...)
		}, id, network, n)
		if err != nil {
			return nil, err
		}
		if len(txs) > 0 {
			out[id] = txs
		}
	}
	return out, nil
}

// readyStatement reads the oldest transactions of an account on a network
// in a status: ReadyTransactions and ReadyTransactionsOf.
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

// CountQueuedOf implements engine.StageStore: one statement per hashChunk
// accounts (inChunks), reading the transactions_queue index only, as
// CountQueued.
func (s *Store) CountQueuedOf(ctx context.Context, network string, accountIDs []string) (map[string]int, error) {
	out := make(map[string]int, len(accountIDs))
	err := inChunks(accountIDs, func(in string, ids []any) error {
		var rows []struct {
			AccountID string `db:"account_id"`
			Count     int    `db:"n"`
		}
		if err := s.r.SelectContext(ctx, &rows, `SELECT account_id, COUNT(*) AS n FROM transactions
			WHERE network = ? AND status IN (?, ?) AND account_id IN `+in+`
			GROUP BY account_id`, append([]any{network, string(engine.StatusNew), string(engine.StatusWaiting)}, ids...)...); err != nil {
			return wrap(err, "count queued transactions of %d accounts on %s", len(ids), network)
		}
		for _, r := range rows {
			out[r.AccountID] = r.Count
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AccountsByID implements engine.StageStore: one statement per chunk of
// ids (the primary key).
func (s *Store) AccountsByID(ctx context.Context, ids []string) (map[string]*engine.Account, error) {
	out := make(map[string]*engine.Account, len(ids))
	err := inChunks(ids, func(in string, args []any) error {
		var rows []accountRow
		if err := s.r.SelectContext(ctx, &rows, `SELECT `+sqlrow.AccountColumns+` FROM accounts WHERE id IN `+in, args...); err != nil {
			return wrap(err, "%d accounts", len(args))
		}
		accts, err := decoded(sqlrow.Accounts(rows))
		if err != nil {
			return err
		}
		for _, a := range accts {
			out[a.ID] = a
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MaxNonces implements engine.StageStore: one statement per chunk of ids,
// GROUP BY account.
func (s *Store) MaxNonces(ctx context.Context, network string, accountIDs []string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(accountIDs))
	err := inChunks(accountIDs, func(in string, ids []any) error {
		var rows []struct {
			AccountID string `db:"account_id"`
			Max       int64  `db:"n"`
		}
		if err := s.r.SelectContext(ctx, &rows, `SELECT account_id, MAX(nonce) AS n FROM transactions
			WHERE network = ? AND nonce IS NOT NULL AND account_id IN `+in+`
			GROUP BY account_id`, append([]any{network}, ids...)...); err != nil {
			return wrap(err, "max nonces of %d accounts on %s", len(ids), network)
		}
		for _, r := range rows {
			n, err := sqlrow.Uint64Of("nonce", r.Max)
			if err != nil {
				return fmt.Errorf("sqlite: max nonce of %s on %s: %w", r.AccountID, network, err)
			}
			out[r.AccountID] = n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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

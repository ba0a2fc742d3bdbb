package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The reads of transactions. Those of a list of ids or hashes run one
// statement per chunk of the list (Dialect.List: one on PostgreSQL, whose
// array parameter takes them all) and merge the chunks' rows in
// acceptance order.

// TransactionByID returns the transaction with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) TransactionByID(ctx context.Context, id string) (*engine.Transaction, error) {
	var r txRow
	if err := s.r.Get(ctx, &r, sqlrow.TxSelect+` WHERE id = ?`, id); err != nil {
		return nil, s.wrap(err, "transaction %s", id)
	}
	return decoded(r.Transaction())
}

// ReadyTransactions returns up to limit transactions of the account on the
// network in status new, in acceptance order. A limit <= 0 returns none.
func (s *Store) ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*engine.Transaction, error) {
	if limit <= 0 {
		return []*engine.Transaction{}, nil
	}
	// The status is a literal: PostgreSQL's transactions_ready is a
	// partial index of the new rows, which a plan of any status could not
	// use.
	var rows []txRow
	if err := s.r.Select(ctx, &rows, sqlrow.TxSelect+`
		WHERE account_id = ? AND network = ? AND status = '`+string(engine.StatusNew)+`' ORDER BY seq LIMIT ?`,
		accountID, network, limit); err != nil {
		return nil, s.wrap(err, "ready transactions of %s on %s", accountID, network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// InFlight returns the account's transactions on the network in status
// submitted, by nonce.
func (s *Store) InFlight(ctx context.Context, accountID, network string) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := s.r.Select(ctx, &rows, sqlrow.TxSelect+`
		WHERE account_id = ? AND network = ? AND status = ? ORDER BY nonce, seq`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return nil, s.wrap(err, "in-flight transactions of %s on %s", accountID, network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// InFlightSummary implements engine.TxStore.
func (s *Store) InFlightSummary(ctx context.Context, accountID, network string) (engine.InFlightSummary, error) {
	var r sqlrow.InFlightRow
	if err := s.r.Get(ctx, &r, `SELECT COUNT(*) AS n, MIN(nonce) AS lowest
		FROM transactions WHERE account_id = ? AND network = ? AND status = ?`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return engine.InFlightSummary{}, s.wrap(err, "in-flight summary of %s on %s", accountID, network)
	}
	return r.Summary(), nil
}

// MaxNonce returns the highest nonce ever assigned to the account on the
// network (whatever the status of its transaction), and false when none was.
func (s *Store) MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error) {
	var n sql.NullInt64
	if err := s.r.Get(ctx, &n, `SELECT MAX(nonce) FROM transactions
		WHERE account_id = ? AND network = ? AND nonce IS NOT NULL`, accountID, network); err != nil {
		return 0, false, s.wrap(err, "max nonce of %s on %s", accountID, network)
	}
	if !n.Valid {
		return 0, false, nil
	}
	u, err := sqlrow.Uint64Of("nonce", n.Int64)
	if err != nil {
		return 0, false, s.errorf("max nonce of %s on %s: %w", accountID, network, err)
	}
	return u, true, nil
}

// selectTxs runs the query of each chunk of the condition that column is
// one of values (query returns it with its arguments; its rows are of
// transactions, seq first) and returns the rows of every chunk in
// acceptance order, a transaction found by several chunks once.
func (s *Store) selectTxs(ctx context.Context, what, column string, values []string, query func(c Chunk) (string, []any)) ([]*engine.Transaction, error) {
	var all []txRow
	err := s.list(column, values, func(c Chunk) error {
		var rows []txRow
		q, args := query(c)
		if err := s.r.Select(ctx, &rows, q, args...); err != nil {
			return s.wrap(err, "%s", what)
		}
		all = append(all, rows...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(all, func(a, b txRow) int { return cmp.Compare(a.Seq, b.Seq) })
	all = slices.CompactFunc(all, func(a, b txRow) bool { return a.ID == b.ID && a.MatchedHash == b.MatchedHash })
	return decoded(sqlrow.Transactions(all))
}

// SubmittedByHash returns the transactions in status submitted on the
// network whose hash is one of hashes, in acceptance order.
func (s *Store) SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*engine.Transaction, error) {
	hexes := make([]string, len(hashes))
	for i, h := range hashes {
		hexes[i] = h.Hex()
	}
	return s.selectTxs(ctx, "submitted transactions by hash on "+network, "a.hash", hexes, func(c Chunk) (string, []any) {
		return `SELECT t.seq, ` + sqlrow.Prefixed("t.", sqlrow.TxColumns) + `, a.hash AS matched_hash
			FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
			WHERE a.network = ? AND t.status = ? AND ` + c.Cond + `
			ORDER BY t.seq`, append([]any{network, string(engine.StatusSubmitted)}, c.Args...)
	})
}

// PendingAccounts implements engine.TxStore.
func (s *Store) PendingAccounts(ctx context.Context, network string) ([]string, error) {
	accounts := []string{}
	if err := s.r.Select(ctx, &accounts, `SELECT DISTINCT account_id FROM transactions
		WHERE network = ? AND status IN (?, ?, ?) ORDER BY account_id`, network,
		string(engine.StatusNew), string(engine.StatusWaiting), string(engine.StatusSubmitted)); err != nil {
		return nil, s.wrap(err, "pending accounts of %s", network)
	}
	return accounts, nil
}

// Dependents implements engine.TxStore.
func (s *Store) Dependents(ctx context.Context, ids []string) ([]*engine.Transaction, error) {
	return s.selectTxs(ctx, "dependents", "depends_on", ids, func(c Chunk) (string, []any) {
		return sqlrow.TxSelect + `
			WHERE status IN (?, ?) AND id IN (SELECT tx_id FROM tx_dependencies WHERE ` + c.Cond + `)
			ORDER BY seq`, append([]any{string(engine.StatusNew), string(engine.StatusWaiting)}, c.Args...)
	})
}

// Statuses implements engine.TxStore.
func (s *Store) Statuses(ctx context.Context, ids []string) (map[string]engine.TxStatus, error) {
	out := make(map[string]engine.TxStatus, len(ids))
	err := s.list("id", ids, func(c Chunk) error {
		var rows []struct {
			ID     string `db:"id"`
			Status string `db:"status"`
		}
		if err := s.r.Select(ctx, &rows, `SELECT id, status FROM transactions WHERE `+c.Cond, c.Args...); err != nil {
			return s.wrap(err, "statuses")
		}
		for _, r := range rows {
			out[r.ID] = engine.TxStatus(r.Status)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Waiting implements engine.TxStore. A negative limit means no limit.
func (s *Store) Waiting(ctx context.Context, network, after string, limit int) ([]*engine.Transaction, error) {
	q, args := sqlrow.TxSelect+` WHERE network = ? AND status = ?`, []any{network, string(engine.StatusWaiting)}
	if after != "" {
		q, args = q+` AND seq > COALESCE((SELECT seq FROM transactions WHERE id = ?), 0)`, append(args, after)
	}
	q += ` ORDER BY seq`
	if limit >= 0 {
		q, args = q+` LIMIT ?`, append(args, limit)
	}
	var rows []txRow
	if err := s.r.Select(ctx, &rows, q, args...); err != nil {
		return nil, s.wrap(err, "waiting transactions of %s", network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// ExpireWaiting implements engine.ConditionStore: one UPDATE over the
// waiting transactions of network due by now (the partial index on
// (network, wait_until) of waiting rows finds them), and their callbacks,
// in one database transaction.
func (s *Store) ExpireWaiting(ctx context.Context, network string, now time.Time, limit int) ([]string, error) {
	errJSON, err := sqlrow.NullJSON("error", engine.ExpiredError(), false)
	if err != nil {
		return nil, s.errorf("expire waiting transactions: %w", err)
	}
	// The literal 'waiting' matches the partial index (a parameter would not).
	waiting := string(engine.StatusWaiting)
	var rows []struct {
		ID        string         `db:"id"`
		Callbacks sql.NullString `db:"callbacks"`
	}
	err = s.inTx(ctx, func(tx Conn) error {
		if err := tx.Select(ctx, &rows, `UPDATE transactions SET status = ?, error = ?, ended = ?
			WHERE status = ? AND id IN (SELECT id FROM transactions
				WHERE network = ? AND status = 'waiting' AND wait_until IS NOT NULL AND wait_until <= ?
				ORDER BY wait_until LIMIT ?)
			RETURNING id, callbacks`,
			string(engine.StatusFailed), errJSON, s.ts(now), waiting, network, s.ts(now), limit); err != nil {
			return err
		}
		var outbox []OutboxRow
		for _, r := range rows {
			more, err := s.outboxRows(r.ID, r.Callbacks, now)
			if err != nil {
				return err
			}
			outbox = append(outbox, more...)
		}
		return s.insertOutbox(ctx, tx, outbox)
	})
	if err != nil {
		return nil, s.wrap(err, "expire waiting transactions of %s", network)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

// HashesOf implements engine.TxStore.
func (s *Store) HashesOf(ctx context.Context, ids []string) (map[string][]common.Hash, error) {
	out := map[string][]common.Hash{}
	err := s.list("tx_id", ids, func(c Chunk) error {
		var rows []struct {
			TxID string `db:"tx_id"`
			Hash string `db:"hash"`
		}
		if err := s.r.Select(ctx, &rows, `SELECT tx_id, hash FROM tx_attempts
			WHERE `+c.Cond+` ORDER BY created, hash`, c.Args...); err != nil {
			return s.wrap(err, "versions of %d transactions", len(ids))
		}
		for _, r := range rows {
			out[r.TxID] = append(out[r.TxID], common.HexToHash(r.Hash))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// ListTransactions implements engine.TxStore: keyset pagination on
// (created, seq), so a page boundary stays put while rows are inserted.
// The position is a row comparison, (created, seq) < (c, s) (or >), which
// both databases turn into a range of transactions_owner_created_seq: with
// an owner (which the API always gives), a page is one index range scan of
// Limit+1 rows in either direction, however deep the listing goes.
func (s *Store) ListTransactions(ctx context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error) {
	if f.Limit <= 0 {
		return nil, nil, s.errorf("list transactions: limit %d must be positive", f.Limit)
	}
	q, args := s.listTxQuery(f)
	var rows []txRow
	if err := s.r.Select(ctx, &rows, q, args...); err != nil {
		return nil, nil, s.wrap(err, "list transactions")
	}
	txs, next, err := sqlrow.TxPage(rows, f.Limit)
	if err != nil {
		return nil, nil, s.errorf("list transactions: %w", err)
	}
	return txs, next, nil
}

// ListTransactionsQuery returns the query of ListTransactions of f, bound
// to the database's placeholders, and its arguments, for the database's
// tests (EXPLAIN).
func (s *Store) ListTransactionsQuery(f engine.TxFilter) (string, []any) {
	q, args := s.listTxQuery(f)
	return s.bind(q), args
}

// listTxQuery returns the query of ListTransactions and its arguments: the
// rows of f's page and one more, which tells whether a next page exists.
func (s *Store) listTxQuery(f engine.TxFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if f.Owner != "" {
		add(`owner = ?`, f.Owner)
	}
	if len(f.Statuses) > 0 {
		sts := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			sts[i] = string(st)
		}
		cond, in := s.in("status", sts)
		add(cond, in...)
	}
	if f.ContractID != "" {
		add(`contract_id = ?`, f.ContractID)
	}
	if f.Method != "" {
		add(`method = ?`, f.Method)
	}
	if f.From != nil {
		add(`from_address = ?`, sqlrow.Address(*f.From))
	}
	if f.Network != "" {
		add(`network = ?`, f.Network)
	}
	if f.Pool != "" {
		add(`pool_id = ?`, f.Pool)
	}
	if f.Since != nil {
		add(`created >= ?`, s.ts(*f.Since))
	}
	if f.Until != nil {
		add(`created < ?`, s.ts(*f.Until))
	}
	order, cmp := `created DESC, seq DESC`, `<`
	if f.Ascending {
		order, cmp = `created, seq`, `>`
	}
	if f.After != nil {
		add(`(created, seq) `+cmp+` (?, ?)`, s.ts(f.After.Created), f.After.Seq)
	}
	q := sqlrow.TxSelect
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return q + ` ORDER BY ` + order + ` LIMIT ?`, append(args, f.Limit+1)
}

// CancelTransaction implements engine.TxStore: one conditional UPDATE that
// returns the updated row, and its callbacks. When it updates nothing, the
// status of the row (read right after) tells engine.ErrConflict from
// engine.ErrNotFound.
func (s *Store) CancelTransaction(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) (*engine.Transaction, error) {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return nil, s.errorf("cancel %s: %w", id, err)
	}
	cond, args := from(engine.TxCancel)
	var r txRow
	err = s.inTx(ctx, func(tx Conn) error {
		if err := tx.Get(ctx, &r, `UPDATE transactions SET status = ?, error = ?, ended = ?
			WHERE id = ? AND `+cond+`
			RETURNING seq, `+sqlrow.TxColumns,
			append([]any{string(engine.StatusFailed), errJSON, s.ts(ended), id}, args...)...); err != nil {
			return err
		}
		return s.insertCallbacks(ctx, tx, id, r.Callbacks, ended)
	})
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err = s.r.Get(ctx, &status, `SELECT status FROM transactions WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, s.notFound("cancel %s: no such transaction", id)
		}
		if err != nil {
			return nil, s.wrap(err, "cancel %s", id)
		}
		return nil, s.conflict("cancel %s: status is %s, not new or waiting", id, status)
	}
	if err != nil {
		return nil, s.wrap(err, "cancel %s", id)
	}
	return decoded(r.Transaction())
}

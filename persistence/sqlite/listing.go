package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// ListTransactions implements engine.TxStore: keyset pagination on
// (created, seq), so a page boundary stays put while rows are inserted.
func (s *Store) ListTransactions(ctx context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error) {
	if f.Limit <= 0 {
		return nil, nil, fmt.Errorf("sqlite: list transactions: limit %d must be positive", f.Limit)
	}
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
		ph := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			ph[i] = "?"
			args = append(args, string(st))
		}
		where = append(where, `status IN (`+strings.Join(ph, ", ")+`)`)
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
	if f.Since != nil {
		add(`created >= ?`, millis(*f.Since))
	}
	if f.Until != nil {
		add(`created < ?`, millis(*f.Until))
	}
	order := `created DESC, seq DESC`
	cmp := `<`
	if f.Ascending {
		order, cmp = `created, seq`, `>`
	}
	if f.After != nil {
		c := millis(f.After.Created)
		add(`(created `+cmp+` ? OR (created = ? AND seq `+cmp+` ?))`, c, c, f.After.Seq)
	}
	q := sqlrow.TxSelect
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY ` + order + ` LIMIT ?`
	args = append(args, f.Limit+1)
	var rows []txRow
	if err := s.r.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, nil, wrap(err, "list transactions")
	}
	txs, next, err := sqlrow.TxPage(rows, f.Limit)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: list transactions: %w", err)
	}
	return txs, next, nil
}

// CancelTransaction implements engine.TxStore.
func (s *Store) CancelTransaction(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) (*engine.Transaction, error) {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: cancel %s: %w", id, err)
	}
	var out *engine.Transaction
	err = s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ?, error = ?, ended = ?
			WHERE id = ? AND status IN (?, ?)`,
			string(engine.StatusFailed), errJSON, millis(ended),
			id, string(engine.StatusNew), string(engine.StatusWaiting))
		if err != nil {
			return wrap(err, "cancel %s", id)
		}
		if err := s.checkUpdated(ctx, dbtx, res, id, "cancel %s", "not new or waiting"); err != nil {
			return err
		}
		if err := enqueueCallbacks(ctx, dbtx, id, ended); err != nil {
			return err
		}
		var r txRow
		if err := dbtx.GetContext(ctx, &r, sqlrow.TxSelect+` WHERE id = ?`, id); err != nil {
			return wrap(err, "cancel %s: read back", id)
		}
		out, err = decoded(r.Transaction())
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

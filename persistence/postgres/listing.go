package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/jmoiron/sqlx"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// ListTransactions implements engine.TxStore: keyset pagination on
// (created, seq), so a page boundary stays put while rows are inserted.
// The position is a row comparison, (created, seq) < (c, s) (or >), which
// PostgreSQL turns into a range of transactions_owner_created_seq: with an
// owner (which the API always gives), a page is one index range scan of
// Limit+1 rows in either direction, however deep the listing goes.
func (s *Store) ListTransactions(ctx context.Context, f engine.TxFilter) ([]*engine.Transaction, *engine.TxCursor, error) {
	if f.Limit <= 0 {
		return nil, nil, fmt.Errorf("postgres: list transactions: limit %d must be positive", f.Limit)
	}
	q, args := listTxQuery(f)
	var rows []txRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, nil, wrap(err, "list transactions")
	}
	txs, next, err := sqlrow.TxPage(rows, f.Limit)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: list transactions: %w", err)
	}
	return txs, next, nil
}

// listTxQuery returns the query of ListTransactions and its arguments: the
// rows of f's page and one more, which tells whether a next page exists.
func listTxQuery(f engine.TxFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Owner != "" {
		where = append(where, `owner = `+arg(f.Owner))
	}
	if len(f.Statuses) > 0 {
		sts := make(pq.StringArray, len(f.Statuses))
		for i, st := range f.Statuses {
			sts[i] = string(st)
		}
		where = append(where, `status = ANY(`+arg(sts)+`::text[])`)
	}
	if f.ContractID != "" {
		where = append(where, `contract_id = `+arg(f.ContractID))
	}
	if f.Method != "" {
		where = append(where, `method = `+arg(f.Method))
	}
	if f.From != nil {
		where = append(where, `from_address = `+arg(sqlrow.Address(*f.From)))
	}
	if f.Network != "" {
		where = append(where, `network = `+arg(f.Network))
	}
	if f.Since != nil {
		where = append(where, `created >= `+arg(ts(*f.Since)))
	}
	if f.Until != nil {
		where = append(where, `created < `+arg(ts(*f.Until)))
	}
	order, cmp := `created DESC, seq DESC`, `<`
	if f.Ascending {
		order, cmp = `created, seq`, `>`
	}
	if f.After != nil {
		where = append(where, `(created, seq) `+cmp+` (`+arg(ts(f.After.Created))+`, `+arg(f.After.Seq)+`)`)
	}
	q := sqlrow.TxSelect
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY ` + order + ` LIMIT ` + arg(f.Limit+1)
	return q, args
}

// CancelTransaction implements engine.TxStore: one conditional UPDATE that
// returns the updated row. When it updates nothing, the status of the row
// (read right after) tells engine.ErrConflict from engine.ErrNotFound.
func (s *Store) CancelTransaction(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) (*engine.Transaction, error) {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return nil, fmt.Errorf("postgres: cancel %s: %w", id, err)
	}
	var r txRow
	err = s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := dbtx.GetContext(ctx, &r, `UPDATE transactions SET status = $1, error = $2, ended = $3
			WHERE id = $4 AND status IN ($5, $6)
			RETURNING seq, `+sqlrow.TxColumns,
			string(engine.StatusFailed), errJSON, ts(ended),
			id, string(engine.StatusNew), string(engine.StatusWaiting)); err != nil {
			return err
		}
		return insertCallbacks(ctx, dbtx, id, r.Callbacks, ended)
	})
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err = s.db.GetContext(ctx, &status, `SELECT status FROM transactions WHERE id = $1`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, notFound("cancel %s: no such transaction", id)
		}
		if err != nil {
			return nil, wrap(err, "cancel %s", id)
		}
		return nil, conflict("cancel %s: status is %s, not new or waiting", id, status)
	}
	if err != nil {
		return nil, wrap(err, "cancel %s", id)
	}
	return decoded(r.Transaction())
}

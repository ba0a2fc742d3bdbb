package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// SubmitRow is one transaction to mark submitted, encoded, with the fence
// of its group (the node and epoch its attempt records).
type SubmitRow struct {
	ID, Hash  string
	Nonce     int64
	GasLimit  sql.NullInt64
	RawTx     []byte // nil: NULL
	Submitted time.Time
	Node      string
	Epoch     int64
}

// SubmitWriter is the optional bulk statement of a Dialect that marks many
// transactions submitted: in tx, the rows of rows still in a status of
// from (a condition on t.status with its arguments) move to submitted with
// their values and error cleared, and each version is recorded in
// tx_attempts as insertAttempt does, in a fixed number of statements. It
// reports false unless every row was updated (a row was not in a status of
// from, is missing, or a constraint refused it): the caller rolls tx back
// and redoes the rows one by one, which returns the error of the first
// failing row. Without it, the store marks the rows one by one.
type SubmitWriter interface {
	MarkSubmitted(ctx context.Context, tx Conn, rows []SubmitRow, from Chunk) (bool, error)
}

// errRowByRow tells that a bulk write did not apply every row: the caller
// rolls back and redoes the call row by row, which stops at the first
// failing row in input order and returns its error as it always did.
var errRowByRow = errors.New("redo row by row")

// MarkSubmittedMany implements engine.TxStore: for every tx, it records
// tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx and tx.Submitted (all required
// but the gas limit), moves the row from new to submitted and records the
// version in tx_attempts, in one database transaction, all or none. It
// fails with engine.ErrConflict if a row is no longer new, engine.ErrNotFound
// if there is none, and engine.ErrFenced if f is not current (the lease row
// is locked first, FOR SHARE where writers run side by side, so an
// acquisition waits for the commit). tx.Status is not modified.
func (s *Store) MarkSubmittedMany(ctx context.Context, f engine.Fence, txs []*engine.Transaction) error {
	return s.submitGroups(ctx, []engine.Fence{f}, []engine.SubmitGroup{{Fence: f, Txs: txs}})
}

// MarkSubmittedGroups implements engine.StageStore: one database
// transaction that first locks the lease row of every non-zero fence (as
// MarkSubmittedMany), in the order of account id and epoch whatever the
// order of groups, so that two callers never wait on each other's locks in
// a cycle; then marks the groups' transactions (submitGroups). The first
// error (a stale fence, then, in group order, a row that is no longer new
// or does not exist) rolls everything back and is returned as
// MarkSubmittedMany returns it.
func (s *Store) MarkSubmittedGroups(ctx context.Context, groups []engine.SubmitGroup) error {
	if len(groups) == 0 {
		return nil
	}
	fences := make([]engine.Fence, 0, len(groups))
	for _, g := range groups {
		if !g.Fence.IsZero() {
			fences = append(fences, g.Fence)
		}
	}
	slices.SortFunc(fences, func(a, b engine.Fence) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.Node, b.Node))
	})
	return s.submitGroups(ctx, slices.Compact(fences), groups)
}

// submitGroups marks the transactions of groups submitted in one database
// transaction that first locks the lease rows of fences (lockFences). With
// a SubmitWriter, the rows are written in bulk; when a row fails, the call
// is redone row by row in a new database transaction, which stops at the
// first failing row (in group order) and returns its error.
func (s *Store) submitGroups(ctx context.Context, fences []engine.Fence, groups []engine.SubmitGroup) error {
	lockFences := func(tx Conn) error { return s.lockFences(ctx, tx, fences) }
	if w, ok := s.d.(SubmitWriter); ok {
		if rows, ok := submitRows(groups); ok {
			err := s.inTx(ctx, func(tx Conn) error {
				if err := lockFences(tx); err != nil {
					return err
				}
				return s.markSubmittedBulk(ctx, tx, w, rows)
			})
			if !errors.Is(err, errRowByRow) {
				return err
			}
		}
	}
	return s.inTx(ctx, func(tx Conn) error {
		if err := lockFences(tx); err != nil {
			return err
		}
		st := tx.stmts()
		defer st.Close()
		for _, g := range groups {
			for _, t := range g.Txs {
				if err := s.markSubmitted(ctx, tx, st, g.Fence, t); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// submitRows encodes the transactions of groups for a SubmitWriter, and
// false when the bulk write could not return what markSubmitted returns
// row by row: a transaction lacks a required value or does not encode, or
// an id is repeated (the second time is a conflict).
func submitRows(groups []engine.SubmitGroup) ([]SubmitRow, bool) {
	var rows []SubmitRow
	seen := map[string]bool{}
	for _, g := range groups {
		for _, t := range g.Txs {
			if t.Nonce == nil || t.Hash == nil || t.Submitted == nil || seen[t.ID] {
				return nil, false
			}
			seen[t.ID] = true
			nonce, err := sqlrow.NullUint("nonce", t.Nonce)
			if err != nil {
				return nil, false
			}
			gasLimit, err := sqlrow.GasLimit(t.GasLimit)
			if err != nil {
				return nil, false
			}
			rows = append(rows, SubmitRow{ID: t.ID, Hash: t.Hash.Hex(), Nonce: nonce.Int64, GasLimit: gasLimit,
				RawTx: t.RawTx, Submitted: *t.Submitted, Node: g.Fence.Node, Epoch: g.Fence.Epoch})
		}
	}
	return rows, true
}

// markSubmittedBulk marks rows submitted in tx with w. It returns
// errRowByRow (and the caller rolls back) unless every row was new and
// stored.
func (s *Store) markSubmittedBulk(ctx context.Context, tx Conn, w SubmitWriter, rows []SubmitRow) error {
	if len(rows) == 0 {
		return nil
	}
	cond, args := fromCol("t.status", engine.TxSubmit)
	all, err := w.MarkSubmitted(ctx, tx, rows, Chunk{Cond: cond, Args: args})
	if err != nil {
		return s.wrap(err, "mark %s submitted", rowsNamed(len(rows), rows[0].ID))
	}
	if !all {
		return errRowByRow
	}
	return nil
}

// rowsNamed names n rows in an error: the id of the first when it is the
// only one, as the writes of one row name it, or their number.
func rowsNamed(n int, first string) string {
	if n == 1 {
		return first
	}
	return fmt.Sprintf("%d transactions", n)
}

// markSubmitted marks one transaction submitted inside dbtx, its
// statements run by st (prepared once for the rows of dbtx).
func (s *Store) markSubmitted(ctx context.Context, dbtx Conn, st stmtExecer, f engine.Fence, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Submitted == nil {
		return s.errorf("mark %s submitted: nonce, hash and submitted time are required", tx.ID)
	}
	nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
	if err != nil {
		return s.errorf("mark %s submitted: %w", tx.ID, err)
	}
	gasLimit, err := sqlrow.GasLimit(tx.GasLimit)
	if err != nil {
		return s.errorf("mark %s submitted: %w", tx.ID, err)
	}
	cond, args := from(engine.TxSubmit)
	res, err := st.Exec(ctx, `UPDATE transactions
		SET status = ?, nonce = ?, gas_limit = ?, hash = ?, raw_tx = ?, submitted = ?, error = NULL
		WHERE id = ? AND `+cond,
		append([]any{string(engine.StatusSubmitted), nonce, gasLimit, sqlrow.NullHash(tx.Hash), sqlrow.NullBytes(tx.RawTx),
			s.nullTS(tx.Submitted), tx.ID}, args...)...)
	if err != nil {
		return s.wrap(err, "mark %s submitted", tx.ID)
	}
	if err := s.checkUpdated(ctx, dbtx, res, tx.ID, "mark %s submitted", "not new"); err != nil {
		return err
	}
	return s.insertAttempt(ctx, st, f, tx, *tx.Submitted)
}

// MarkReplaced implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) MarkReplaced(ctx context.Context, f engine.Fence, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Replaced == nil {
		return s.errorf("mark %s replaced: nonce, hash and replaced time are required", tx.ID)
	}
	nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
	if err != nil {
		return s.errorf("mark %s replaced: %w", tx.ID, err)
	}
	errJSON, err := sqlrow.NullJSON("error", tx.Error, tx.Error == nil)
	if err != nil {
		return s.errorf("mark %s replaced: %w", tx.ID, err)
	}
	cond, args := from(engine.TxReplace)
	return s.inTx(ctx, func(dbtx Conn) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.Exec(ctx, `UPDATE transactions SET hash = ?, raw_tx = ?, replaced = ?, error = ?
			WHERE id = ? AND nonce = ? AND `+cond,
			append([]any{sqlrow.NullHash(tx.Hash), sqlrow.NullBytes(tx.RawTx), s.nullTS(tx.Replaced), errJSON, tx.ID, nonce}, args...)...)
		if err != nil {
			return s.wrap(err, "mark %s replaced", tx.ID)
		}
		if err := s.checkUpdated(ctx, dbtx, res, tx.ID, "mark %s replaced", "not submitted with this nonce"); err != nil {
			return err
		}
		return s.insertAttempt(ctx, dbtx, f, tx, *tx.Replaced)
	})
}

// checkUpdated turns an UPDATE of one row of transactions by id that
// changed nothing into engine.ErrNotFound (no such row) or
// engine.ErrConflict (the row is not in a state the update accepts; why
// describes it).
func (s *Store) checkUpdated(ctx context.Context, dbtx Conn, res sql.Result, id, what, why string) error {
	return s.checkRow(ctx, dbtx, res, "transactions", "transaction", id, what, why)
}

// checkRow is checkUpdated of a row of table (with a status column), a
// noun in errors.
func (s *Store) checkRow(ctx context.Context, dbtx Conn, res sql.Result, table, noun, id, what, why string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return s.wrap(err, what, id)
	}
	if n > 0 {
		return nil
	}
	var status string
	err = dbtx.Get(ctx, &status, `SELECT status FROM `+table+` WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return s.notFound(what+": no such "+noun, id)
	}
	if err != nil {
		return s.wrap(err, what, id)
	}
	return s.conflict(what+": status is %s, %s", id, status, why)
}

// MarkWaiting implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) MarkWaiting(ctx context.Context, f engine.Fence, id string) error {
	cond, args := from(engine.TxWait)
	return s.inTx(ctx, func(dbtx Conn) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.Exec(ctx, `UPDATE transactions SET status = ? WHERE id = ? AND `+cond,
			append([]any{string(engine.StatusWaiting), id}, args...)...)
		if err != nil {
			return s.wrap(err, "mark %s waiting", id)
		}
		return s.checkUpdated(ctx, dbtx, res, id, "mark %s waiting", "not new")
	})
}

// MarkReady implements engine.TxStore: one UPDATE per chunk of ids (one
// statement on its own where one chunk takes them all). The ids moved are
// returned in the order of ids, each once.
func (s *Store) MarkReady(ctx context.Context, ids []string) ([]string, error) {
	moved := []string{}
	if len(ids) == 0 {
		return moved, nil
	}
	cond, args := from(engine.TxReady)
	var updated []string
	run := func(db Conn) error {
		updated = updated[:0]
		return s.list("id", ids, func(c Chunk) error {
			var got []string
			if err := db.Select(ctx, &got, `UPDATE transactions SET status = ? WHERE `+c.Cond+` AND `+cond+` RETURNING id`,
				append(append([]any{string(engine.StatusNew)}, c.Args...), args...)...); err != nil {
				return s.wrap(err, "mark %d transactions ready", len(ids))
			}
			updated = append(updated, got...)
			return nil
		})
	}
	var err error
	if len(s.d.List("id", ids)) == 1 {
		err = run(s.w)
	} else {
		err = s.inTx(ctx, run)
	}
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(updated))
	for _, id := range updated {
		set[id] = true
	}
	for _, id := range ids {
		if set[id] {
			moved = append(moved, id)
			delete(set, id)
		}
	}
	return moved, nil
}

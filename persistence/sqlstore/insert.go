package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// TxInserter is the optional bulk insert of transactions of a Dialect.
// Rows are the values of sqlrow.TxColumns as sqlrow.TxArgs returns them
// (timestamps encoded by Dialect.Time), or, when no transaction of the
// batch was sent through a pool, those of sqlrow.TxBaseColumns only (the
// first sqlrow.TxBaseCount: the pool columns stay NULL); every row of a
// batch has the same length. They are inserted in slice order (seq
// follows it). Without it, the store runs one prepared INSERT per row in
// the transaction, which costs SQLite no round trip.
type TxInserter interface {
	// InsertTxsAlone inserts rows with one statement run on the pool db,
	// in its own implicit transaction (one round trip for the whole group
	// commit), and reports false, having done nothing, when it does not
	// take so many rows.
	InsertTxsAlone(ctx context.Context, db Conn, rows [][]any) (bool, error)
	// InsertTxs inserts rows in the transaction tx.
	InsertTxs(ctx context.Context, tx Conn, rows [][]any) error
	// InsertDependencies inserts the rows (txIDs[i], dependsOn[i]) of
	// tx_dependencies in tx, one that is there already skipped.
	InsertDependencies(ctx context.Context, tx Conn, txIDs, dependsOn []string) error
}

// txInsert inserts one row of transactions (the values of sqlrow.TxArgs),
// txBaseInsert one without its pool columns.
var (
	txInsert = `INSERT INTO transactions (` + sqlrow.TxColumns + `) VALUES (?` +
		strings.Repeat(`, ?`, strings.Count(sqlrow.TxColumns, ",")) + `)`
	txBaseInsert = `INSERT INTO transactions (` + sqlrow.TxBaseColumns + `) VALUES (?` +
		strings.Repeat(`, ?`, strings.Count(sqlrow.TxBaseColumns, ",")) + `)`
)

// InsertTransactions inserts txs in one database transaction: all or none
// (the group commit of the account actor). Rows get their acceptance order
// in slice order. Every field is stored as given; an empty Status is stored
// as new. The Idempotency records of txs (those not nil) and their
// dependencies (DependsOn) are stored in the same database transaction,
// after the rows. A taken id or a live idempotency key is
// engine.ErrConflict; an owner or account that does not exist is
// engine.ErrNotFound. txs is not modified.
//
// With a TxInserter (PostgreSQL), a batch without idempotency records or
// dependencies (the group commits of a busy account) may be one statement
// in its own implicit transaction, one round trip in all; the others
// stream their rows in a transaction (COPY), and the idempotency records
// and dependencies follow as arrays, two statements each whatever their
// number.
func (s *Store) InsertTransactions(ctx context.Context, txs []*engine.Transaction) error {
	if len(txs) == 0 {
		return nil
	}
	// Encode before a connection is taken.
	rows := make([][]any, len(txs))
	var (
		idems        []*engine.IdempotencyRecord
		depTx, depOn []string
	)
	pooled := false
	for _, t := range txs {
		pooled = pooled || sqlrow.HasPoolColumns(t)
	}
	for i, t := range txs {
		a, err := sqlrow.TxArgs(t, s.nullTS)
		if err != nil {
			return s.errorf("insert transaction %s: %w", t.ID, err)
		}
		if !pooled {
			a = a[:sqlrow.TxBaseCount]
		}
		rows[i] = a
		if t.Idempotency != nil {
			idems = append(idems, t.Idempotency)
		}
		for _, dep := range t.DependsOn {
			depTx, depOn = append(depTx, t.ID), append(depOn, dep)
		}
	}
	what := func() string {
		if len(txs) == 1 {
			return "insert transaction " + txs[0].ID
		}
		return fmt.Sprintf("insert %d transactions (first %s)", len(txs), txs[0].ID)
	}
	ins, bulk := s.d.(TxInserter)
	if bulk && len(idems) == 0 && len(depTx) == 0 {
		done, err := ins.InsertTxsAlone(ctx, s.w, rows)
		if done {
			return s.aloneError(s.wrap(err, "%s", what()))
		}
	}
	return s.inTx(ctx, func(tx Conn) error {
		if err := s.insertTxRows(ctx, tx, ins, rows, txs); err != nil {
			return err
		}
		if err := s.insertIdempotency(ctx, tx, idems...); err != nil {
			return fmt.Errorf("%s: %w", what(), err)
		}
		return s.insertDependencies(ctx, tx, ins, depTx, depOn)
	})
}

// aloneError returns the error (nil: none) of a statement run in its own
// implicit transaction as engine.NotCommitted when nothing can have been
// committed: the database was not even reached, or it answered with an
// error (a failed statement commits nothing). Only a connection lost before
// the answer leaves the outcome unknown.
func (s *Store) aloneError(err error) error {
	if err != nil && (errors.Is(err, syscall.ECONNREFUSED) || s.d.RolledBack(err)) {
		return engine.NotCommitted(err)
	}
	return err
}

// insertTxRows inserts rows (of txs) in tx, with ins when not nil.
func (s *Store) insertTxRows(ctx context.Context, tx Conn, ins TxInserter, rows [][]any, txs []*engine.Transaction) error {
	if ins != nil {
		return s.wrap(ins.InsertTxs(ctx, tx, rows), "insert %d transactions (first %s)", len(txs), txs[0].ID)
	}
	q := txInsert
	if len(rows[0]) == sqlrow.TxBaseCount {
		q = txBaseInsert
	}
	stmt, err := tx.Prepare(ctx, q)
	if err != nil {
		return s.wrap(err, "insert transactions: prepare")
	}
	defer stmt.Close()
	for i, a := range rows {
		if _, err := stmt.ExecContext(ctx, a...); err != nil {
			return s.wrap(err, "insert transaction %s (%d of %d)", txs[i].ID, i+1, len(txs))
		}
	}
	return nil
}

// insertDependencies inserts the rows (txIDs[i], dependsOn[i]) of
// tx_dependencies in tx, with ins when not nil.
func (s *Store) insertDependencies(ctx context.Context, tx Conn, ins TxInserter, txIDs, dependsOn []string) error {
	if len(txIDs) == 0 {
		return nil
	}
	if ins != nil {
		return s.wrap(ins.InsertDependencies(ctx, tx, txIDs, dependsOn),
			"insert %d dependencies (first of %s)", len(txIDs), txIDs[0])
	}
	for i, id := range txIDs {
		if _, err := tx.Exec(ctx, `INSERT INTO tx_dependencies (tx_id, depends_on) VALUES (?, ?)
			ON CONFLICT DO NOTHING`, id, dependsOn[i]); err != nil {
			return s.wrap(err, "insert dependency of %s on %s", id, dependsOn[i])
		}
	}
	return nil
}

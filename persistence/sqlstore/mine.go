package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// MinedRow is the outcome of one transaction to write: its status, block,
// gas used, events, error, end time and the hash of the mined version
// (NULL: keep the stored one).
type MinedRow struct {
	ID, Status, BlockHash string
	BlockNumber, GasUsed  int64
	Events, Error, Hash   sql.NullString
	Ended                 time.Time
}

// MinedWriter is the optional bulk statement of a Dialect that writes the
// outcomes rows, of distinct transactions locked in tx, to those still in
// a status of from (a condition on t.status with its arguments), in a
// fixed number of statements. Without it, the store writes them one by
// one.
type MinedWriter interface {
	MarkMined(ctx context.Context, tx Conn, rows []MinedRow, from Chunk) error
}

// MarkMined implements engine.TxStore: the outcomes are applied in one
// database transaction, all or none. A transaction is mined only from
// submitted: one in another status is engine.ErrConflict and one that does
// not exist engine.ErrNotFound, and nothing is applied.
func (s *Store) MarkMined(ctx context.Context, outcomes []engine.Mined) error {
	_, err := s.markMined(ctx, engine.NetworkFence{}, outcomes, true)
	return err
}

// MarkMinedFenced implements engine.FencedFollowerStore: MarkMined that
// leaves the transactions that are not submitted unchanged and returns
// their ids, with the network lease checked first (lockNetworkFence).
func (s *Store) MarkMinedFenced(ctx context.Context, f engine.NetworkFence, outcomes []engine.Mined) ([]string, error) {
	return s.markMined(ctx, f, outcomes, false)
}

// markMined applies the outcomes of transactions in status submitted, in
// one database transaction: status, block number and hash, gas used,
// events, error and ended of each, and the callbacks of each. One that is
// not submitted is engine.ErrConflict when strict (nothing applied) and
// skipped (its id returned) otherwise; one that does not exist is
// engine.ErrNotFound (nothing applied). Outcomes of distinct transactions
// are applied together (markMinedRows); when a transaction has several,
// they are applied one after the other, in order.
func (s *Store) markMined(ctx context.Context, f engine.NetworkFence, outcomes []engine.Mined, strict bool) ([]string, error) {
	if len(outcomes) == 0 {
		return nil, nil // nothing to write
	}
	rows := make([]MinedRow, len(outcomes))
	seen := make(map[string]bool, len(outcomes))
	distinct := true
	for i, o := range outcomes {
		e, err := sqlrow.EncodeMined(o)
		if err != nil {
			return nil, s.errorf("mark %s mined: %w", o.ID, err)
		}
		rows[i] = MinedRow{ID: o.ID, Status: string(o.Status), BlockHash: o.BlockHash.Hex(), BlockNumber: e.BlockNumber,
			GasUsed: e.GasUsed, Events: e.Events, Error: e.Error, Hash: e.Hash, Ended: o.Ended}
		distinct = distinct && !seen[o.ID]
		seen[o.ID] = true
	}
	var skipped []string
	err := s.inTx(ctx, func(tx Conn) error {
		skipped = nil
		if err := s.lockNetworkFence(ctx, tx, f); err != nil {
			return err
		}
		if distinct {
			var err error
			skipped, err = s.markMinedRows(ctx, tx, outcomes, rows, strict)
			return err
		}
		for i := range outcomes {
			sk, err := s.markMinedRows(ctx, tx, outcomes[i:i+1], rows[i:i+1], strict)
			if err != nil {
				return err
			}
			skipped = append(skipped, sk...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return skipped, nil
}

// minedBefore is what markMined reads of a transaction, locked, before
// applying its outcome.
type minedBefore struct {
	ID        string         `db:"id"`
	Status    string         `db:"status"`
	Callbacks sql.NullString `db:"callbacks"`
}

// markMinedRows is markMined's work in tx for outcomes (encoded as rows) of
// distinct transactions: the rows are read and locked in id order, the
// outcomes decided in input order (minedStep, so the first failing one is
// the error returned), then the outbox rows inserted and the applied
// outcomes written (with a MinedWriter in a fixed number of statements).
func (s *Store) markMinedRows(ctx context.Context, tx Conn, outcomes []engine.Mined, rows []MinedRow, strict bool) ([]string, error) {
	ids := make([]string, len(outcomes))
	for i, o := range outcomes {
		ids[i] = o.ID
	}
	before := make(map[string]*minedBefore, len(outcomes))
	if err := s.list("id", ids, func(c Chunk) error {
		var got []minedBefore
		if err := tx.Select(ctx, &got, `SELECT id, status, callbacks FROM transactions
			WHERE `+c.Cond+` ORDER BY id`+s.d.Lock(LockUpdate), c.Args...); err != nil {
			return s.wrap(err, "mark %s mined", rowsNamed(len(ids), ids[0]))
		}
		for i := range got {
			before[got[i].ID] = &got[i]
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var (
		skipped []string
		outbox  []OutboxRow
		applied []MinedRow
	)
	for i, o := range outcomes {
		apply, ob, err := s.minedStep(o, before[o.ID], strict)
		if err != nil {
			return nil, err
		}
		if !apply {
			skipped = append(skipped, o.ID)
			continue
		}
		outbox = append(outbox, ob...)
		applied = append(applied, rows[i])
	}
	if err := s.insertOutbox(ctx, tx, outbox); err != nil {
		return nil, err
	}
	// The rows are locked (or writers serialised): their status cannot
	// have changed since read.
	if err := s.writeMined(ctx, tx, applied); err != nil {
		return nil, err
	}
	return skipped, nil
}

// minedStep decides the outcome o of a transaction in state before (nil:
// no such transaction): whether it applies, and the outbox rows it adds;
// an error (engine.ErrNotFound, or engine.ErrConflict when strict) stops
// the call with nothing applied.
func (s *Store) minedStep(o engine.Mined, before *minedBefore, strict bool) (bool, []OutboxRow, error) {
	if before == nil {
		return false, nil, s.notFound("mark %s mined: no such transaction", o.ID)
	}
	if !slices.Contains(engine.TransitionFrom(engine.TxMine), before.Status) {
		if strict {
			return false, nil, s.conflict("mark %s mined: status is %s, not submitted", o.ID, before.Status)
		}
		return false, nil, nil
	}
	if !o.Status.Terminal() {
		return true, nil, nil
	}
	rows, err := s.outboxRows(o.ID, before.Callbacks, o.Ended)
	return true, rows, err
}

// writeMined writes the outcomes rows to their transactions, still in a
// status TxMine leaves from.
func (s *Store) writeMined(ctx context.Context, tx Conn, rows []MinedRow) error {
	if len(rows) == 0 {
		return nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	if w, ok := s.d.(MinedWriter); ok {
		cond, args := fromCol("t.status", engine.TxMine)
		return s.wrap(w.MarkMined(ctx, tx, rows, Chunk{Cond: cond, Args: args}), "mark %s mined", rowsNamed(len(ids), ids[0]))
	}
	cond, args := from(engine.TxMine)
	stmt, err := tx.Prepare(ctx, `UPDATE transactions
		SET status = ?, block_number = ?, block_hash = ?, gas_used = ?, events = ?, error = ?, ended = ?,
			hash = COALESCE(?, hash)
		WHERE id = ? AND `+cond)
	if err != nil {
		return s.wrap(err, "mark mined: prepare")
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, append([]any{r.Status, r.BlockNumber, r.BlockHash, r.GasUsed,
			r.Events, r.Error, s.ts(r.Ended), r.Hash, r.ID}, args...)...); err != nil {
			return s.wrap(err, "mark %s mined", r.ID)
		}
	}
	return nil
}

// Unmine implements engine.TxStore.
func (s *Store) Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error) {
	return s.UnmineFenced(ctx, engine.NetworkFence{Network: network}, fromBlock)
}

// UnmineFenced implements engine.FencedFollowerStore. One UPDATE both moves
// the rows back and names their accounts, so no row mined meanwhile slips
// between a read and the write; only completed and failed rows move.
func (s *Store) UnmineFenced(ctx context.Context, f engine.NetworkFence, fromBlock uint64) ([]string, error) {
	fromNum, err := sqlrow.NullUint("fromBlock", &fromBlock)
	if err != nil {
		return nil, s.errorf("unmine: %w", err)
	}
	cond, args := from(engine.TxUnmine)
	var touched []string
	err = s.inTx(ctx, func(tx Conn) error {
		touched = nil
		if err := s.lockNetworkFence(ctx, tx, f); err != nil {
			return err
		}
		if err := tx.Select(ctx, &touched, `UPDATE transactions SET status = ?, block_number = NULL,
			block_hash = NULL, gas_used = NULL, events = NULL, error = NULL, ended = NULL
			WHERE network = ? AND block_number >= ? AND `+cond+`
			RETURNING account_id`, append([]any{string(engine.StatusSubmitted), f.Network, fromNum}, args...)...); err != nil {
			return s.wrap(err, "unmine %s from %d", f.Network, fromBlock)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(touched)
	return slices.Compact(touched), nil
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// txInsert inserts one row of transactions (the values of sqlrow.TxArgs).
const txInsert = `INSERT INTO transactions (` + sqlrow.TxColumns + `) VALUES (
	?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// InsertTransactions inserts txs in one database transaction: all or none
// (the group commit of the account actor). Rows get their acceptance order
// in slice order. Every field is stored as given; an empty Status is stored
// as new. A taken id is engine.ErrConflict; an owner or account that does
// not exist is engine.ErrNotFound. txs is not modified.
func (s *Store) InsertTransactions(ctx context.Context, txs []*engine.Transaction) error {
	if len(txs) == 0 {
		return nil
	}
	// Encode before the write lock is taken.
	args := make([][]any, len(txs))
	for i, t := range txs {
		a, err := sqlrow.TxArgs(t, timeValue)
		if err != nil {
			return fmt.Errorf("sqlite: insert transaction %s: %w", t.ID, err)
		}
		args[i] = a
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		stmt, err := tx.PreparexContext(ctx, txInsert)
		if err != nil {
			return wrap(err, "insert transactions: prepare")
		}
		defer stmt.Close()
		for i, a := range args {
			if _, err := stmt.ExecContext(ctx, a...); err != nil {
				return wrap(err, "insert transaction %s (%d of %d)", txs[i].ID, i+1, len(txs))
			}
			if err := insertIdempotency(ctx, tx, txs[i].Idempotency); err != nil {
				return fmt.Errorf("insert transaction %s: %w", txs[i].ID, err)
			}
			for _, dep := range txs[i].DependsOn {
				if _, err := tx.ExecContext(ctx, `INSERT INTO tx_dependencies (tx_id, depends_on) VALUES (?, ?)
					ON CONFLICT DO NOTHING`, txs[i].ID, dep); err != nil {
					return wrap(err, "insert dependency of %s on %s", txs[i].ID, dep)
				}
			}
		}
		return nil
	})
}

// TransactionByID returns the transaction with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) TransactionByID(ctx context.Context, id string) (*engine.Transaction, error) {
	var r txRow
	if err := s.r.GetContext(ctx, &r, sqlrow.TxSelect+` WHERE id = ?`, id); err != nil {
		return nil, wrap(err, "transaction %s", id)
	}
	return decoded(r.Transaction())
}

// ReadyTransactions returns up to limit transactions of the account on the
// network in status new, in acceptance order. A limit <= 0 returns none.
func (s *Store) ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*engine.Transaction, error) {
	if limit <= 0 {
		return []*engine.Transaction{}, nil
	}
	return readyWith(func(dest any, args ...any) error {
		return s.r.SelectContext(ctx, dest, readyStatement, args...)
	}, accountID, network, limit)
}

// InFlight returns the account's transactions on the network in status
// submitted, by nonce.
func (s *Store) InFlight(ctx context.Context, accountID, network string) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := s.r.SelectContext(ctx, &rows, sqlrow.TxSelect+`
		WHERE account_id = ? AND network = ? AND status = ? ORDER BY nonce, seq`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return nil, wrap(err, "in-flight transactions of %s on %s", accountID, network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// InFlightSummary implements engine.TxStore.
func (s *Store) InFlightSummary(ctx context.Context, accountID, network string) (engine.InFlightSummary, error) {
	var r sqlrow.InFlightRow
	if err := s.r.GetContext(ctx, &r, `SELECT COUNT(*) AS n, MIN(nonce) AS lowest
		FROM transactions WHERE account_id = ? AND network = ? AND status = ?`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return engine.InFlightSummary{}, wrap(err, "in-flight summary of %s on %s", accountID, network)
	}
	return r.Summary(), nil
}

// MaxNonce returns the highest nonce ever assigned to the account on the
// network (whatever the status of its transaction), and false when none was.
func (s *Store) MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error) {
	var n sql.NullInt64
	if err := s.r.GetContext(ctx, &n, `SELECT MAX(nonce) FROM transactions
		WHERE account_id = ? AND network = ? AND nonce IS NOT NULL`, accountID, network); err != nil {
		return 0, false, wrap(err, "max nonce of %s on %s", accountID, network)
	}
	if !n.Valid {
		return 0, false, nil
	}
	u, err := sqlrow.Uint64Of("nonce", n.Int64)
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: max nonce of %s on %s: %w", accountID, network, err)
	}
	return u, true, nil
}

// MarkSubmittedMany implements engine.TxStore: for every tx, it records
// tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx and tx.Submitted (all required
// but the gas limit), moves the row from new to submitted and records the
// version in tx_attempts, in one database transaction, all or none. It
// fails with engine.ErrConflict if a row is no longer new, engine.ErrNotFound
// if there is none, and engine.ErrFenced if f is not current (checked in the
// same write transaction: writers are serialised). tx.Status is not
// modified. It is MarkSubmittedGroups of one group.
func (s *Store) MarkSubmittedMany(ctx context.Context, f engine.Fence, txs []*engine.Transaction) error {
	return s.MarkSubmittedGroups(ctx, []engine.SubmitGroup{{Fence: f, Txs: txs}})
}

// markSubmitted marks one transaction submitted inside dbtx.
func (s *Store) markSubmitted(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Submitted == nil {
		return fmt.Errorf("sqlite: mark %s submitted: nonce, hash and submitted time are required", tx.ID)
	}
	nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s submitted: %w", tx.ID, err)
	}
	gasLimit, err := sqlrow.GasLimit(tx.GasLimit)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s submitted: %w", tx.ID, err)
	}
	res, err := dbtx.ExecContext(ctx, `UPDATE transactions
		SET status = ?, nonce = ?, gas_limit = ?, hash = ?, raw_tx = ?, submitted = ?, error = NULL
		WHERE id = ? AND status = ?`,
		string(engine.StatusSubmitted), nonce, gasLimit, sqlrow.NullHash(tx.Hash), sqlrow.NullBytes(tx.RawTx),
		nullMillis(tx.Submitted), tx.ID, string(engine.StatusNew))
	if err != nil {
		return wrap(err, "mark %s submitted", tx.ID)
	}
	if err := s.checkUpdated(ctx, dbtx, res, tx.ID, "mark %s submitted", "not new"); err != nil {
		return err
	}
	return insertAttempt(ctx, dbtx, f, tx, *tx.Submitted)
}

// MarkReplaced implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) MarkReplaced(ctx context.Context, f engine.Fence, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Replaced == nil {
		return fmt.Errorf("sqlite: mark %s replaced: nonce, hash and replaced time are required", tx.ID)
	}
	nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s replaced: %w", tx.ID, err)
	}
	errJSON, err := sqlrow.NullJSON("error", tx.Error, tx.Error == nil)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s replaced: %w", tx.ID, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := checkFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET hash = ?, raw_tx = ?, replaced = ?, error = ?
			WHERE id = ? AND status = ? AND nonce = ?`,
			sqlrow.NullHash(tx.Hash), sqlrow.NullBytes(tx.RawTx), nullMillis(tx.Replaced), errJSON, tx.ID, string(engine.StatusSubmitted), nonce)
		if err != nil {
			return wrap(err, "mark %s replaced", tx.ID)
		}
		if err := s.checkUpdated(ctx, dbtx, res, tx.ID, "mark %s replaced", "not submitted with this nonce"); err != nil {
			return err
		}
		return insertAttempt(ctx, dbtx, f, tx, *tx.Replaced)
	})
}

// checkUpdated turns an UPDATE of one row by id that changed nothing into
// engine.ErrNotFound (no such row) or engine.ErrConflict (the row is not in
// a state the update accepts; why describes it).
func (s *Store) checkUpdated(ctx context.Context, dbtx *sqlx.Tx, res sql.Result, id, what, why string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(err, what, id)
	}
	if n > 0 {
		return nil
	}
	var status string
	err = dbtx.GetContext(ctx, &status, `SELECT status FROM transactions WHERE id = ?`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what+": no such transaction", id)
	}
	if err != nil {
		return wrap(err, what, id)
	}
	return conflict(what+": status is %s, %s", id, status, why)
}

// MarkFailed moves a transaction that is not terminal to failed with txErr
// and ended, and enqueues its callbacks. It fails with engine.ErrConflict if the transaction is already
// completed or failed and engine.ErrNotFound if there is none.
func (s *Store) MarkFailed(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) error {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s failed: %w", id, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ?, error = ?, ended = ?
			WHERE id = ? AND status NOT IN (?, ?)`,
			string(engine.StatusFailed), errJSON, millis(ended),
			id, string(engine.StatusCompleted), string(engine.StatusFailed))
		if err != nil {
			return wrap(err, "mark %s failed", id)
		}
		if err := s.checkUpdated(ctx, dbtx, res, id, "mark %s failed", "terminal"); err != nil {
			return err
		}
		return enqueueCallbacks(ctx, dbtx, id, ended)
	})
}

// FailQueued implements engine.TxStore: MarkFailed for the Sender, only
// from new, with the fence checked as in MarkSubmittedMany. The callbacks
// are enqueued in the same database transaction.
func (s *Store) FailQueued(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return s.failFrom(ctx, f, engine.StatusNew, id, txErr, ended)
}

// hashChunk bounds the bound parameters of one IN list.
const hashChunk = 500

// SubmittedByHash returns the transactions in status submitted on the
// network whose hash is one of hashes, in acceptance order.
func (s *Store) SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*engine.Transaction, error) {
	out := []*engine.Transaction{}
	for start := 0; start < len(hashes); start += hashChunk {
		chunk := hashes[start:min(start+hashChunk, len(hashes))]
		args := make([]any, 0, len(chunk)+2)
		args = append(args, network, string(engine.StatusSubmitted))
		for _, h := range chunk {
			args = append(args, h.Hex())
		}
		var rows []txRow
		if err := s.r.SelectContext(ctx, &rows, `SELECT t.seq, `+sqlrow.Prefixed("t.", sqlrow.TxColumns)+`, a.hash AS matched_hash
			FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
			WHERE a.network = ? AND t.status = ? AND a.hash IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`)
			ORDER BY t.seq`, args...); err != nil {
			return nil, wrap(err, "submitted transactions by hash on %s", network)
		}
		txs, err := decoded(sqlrow.Transactions(rows))
		if err != nil {
			return nil, err
		}
		out = append(out, txs...)
	}
	return out, nil
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
// their ids, with the network lease checked first (checkNetworkFence).
func (s *Store) MarkMinedFenced(ctx context.Context, f engine.NetworkFence, outcomes []engine.Mined) ([]string, error) {
	return s.markMined(ctx, f, outcomes, false)
}

// markMined applies the outcomes of transactions in status submitted, in
// one database transaction: status, block number and hash, gas used,
// events, error and ended of each, and the callback outbox rows of each.
// One that is not submitted is engine.ErrConflict when strict (nothing
// applied) and skipped (its id returned) otherwise; one that does not
// exist is engine.ErrNotFound (nothing applied).
func (s *Store) markMined(ctx context.Context, f engine.NetworkFence, outcomes []engine.Mined, strict bool) ([]string, error) {
	if len(outcomes) == 0 {
		return nil, nil // nothing to write
	}
	enc := make([]sqlrow.MinedValues, len(outcomes))
	for i, o := range outcomes {
		e, err := sqlrow.EncodeMined(o)
		if err != nil {
			return nil, fmt.Errorf("sqlite: mark %s mined: %w", o.ID, err)
		}
		enc[i] = e
	}
	var skipped []string
	err := s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		skipped = nil
		if err := checkNetworkFence(ctx, dbtx, f); err != nil {
			return err
		}
		stmt, err := dbtx.PreparexContext(ctx, `UPDATE transactions
			SET status = ?, block_number = ?, block_hash = ?, gas_used = ?, events = ?, error = ?, ended = ?,
				hash = COALESCE(?, hash)
			WHERE id = ? AND status = ?`)
		if err != nil {
			return wrap(err, "mark mined: prepare")
		}
		defer stmt.Close()
		for i, o := range outcomes {
			e := enc[i]
			var before struct {
				Status    string         `db:"status"`
				Callbacks sql.NullString `db:"callbacks"`
			}
			if err := dbtx.GetContext(ctx, &before, `SELECT status, callbacks FROM transactions WHERE id = ?`, o.ID); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return notFound("mark %s mined: no such transaction", o.ID)
				}
				return wrap(err, "mark %s mined", o.ID)
			}
			if engine.TxStatus(before.Status) != engine.StatusSubmitted {
				if strict {
					return conflict("mark %s mined: status is %s, not submitted", o.ID, before.Status)
				}
				skipped = append(skipped, o.ID)
				continue
			}
			if o.Status.Terminal() {
				if err := insertCallbacks(ctx, dbtx, o.ID, before.Callbacks, o.Ended); err != nil {
					return err
				}
			}
			// One writer at a time: the status cannot have changed since it was read.
			if _, err := stmt.ExecContext(ctx, string(o.Status), e.BlockNumber, o.BlockHash.Hex(), e.GasUsed,
				e.Events, e.Error, millis(o.Ended), e.Hash, o.ID, string(engine.StatusSubmitted)); err != nil {
				return wrap(err, "mark %s mined", o.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return skipped, nil
}

// ReleaseNonce implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) ReleaseNonce(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	status, errJSON, endedAt := string(engine.StatusNew), sql.NullString{}, sql.NullInt64{}
	if txErr != nil {
		j, err := sqlrow.NullJSON("error", txErr, false)
		if err != nil {
			return fmt.Errorf("sqlite: release nonce of %s: %w", id, err)
		}
		status, errJSON, endedAt = string(engine.StatusFailed), j, sql.NullInt64{Int64: millis(ended), Valid: true}
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := checkFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ?, error = ?, ended = ?,
			nonce = NULL, gas_limit = NULL, hash = NULL, raw_tx = NULL, submitted = NULL
			WHERE id = ? AND status = ?`,
			status, errJSON, endedAt, id, string(engine.StatusSubmitted))
		if err != nil {
			return wrap(err, "release nonce of %s", id)
		}
		if err := s.checkUpdated(ctx, dbtx, res, id, "release nonce of %s", "not submitted"); err != nil {
			return err
		}
		if _, err := dbtx.ExecContext(ctx, `DELETE FROM tx_attempts WHERE tx_id = ?`, id); err != nil {
			return wrap(err, "forget hashes of %s", id)
		}
		if txErr == nil {
			return nil
		}
		return enqueueCallbacks(ctx, dbtx, id, ended)
	})
}

// Unmine implements engine.TxStore.
func (s *Store) Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error) {
	return s.UnmineFenced(ctx, engine.NetworkFence{Network: network}, fromBlock)
}

// UnmineFenced implements engine.FencedFollowerStore: only completed and
// failed rows move.
func (s *Store) UnmineFenced(ctx context.Context, f engine.NetworkFence, fromBlock uint64) ([]string, error) {
	from, err := sqlrow.NullUint("fromBlock", &fromBlock)
	if err != nil {
		return nil, fmt.Errorf("sqlite: unmine: %w", err)
	}
	var accounts []string
	err = s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		accounts = nil
		if err := checkNetworkFence(ctx, dbtx, f); err != nil {
			return err
		}
		mined := []any{f.Network, from, string(engine.StatusCompleted), string(engine.StatusFailed)}
		if err := dbtx.SelectContext(ctx, &accounts, `SELECT DISTINCT account_id FROM transactions
			WHERE network = ? AND block_number >= ? AND status IN (?, ?) ORDER BY account_id`, mined...); err != nil {
			return wrap(err, "unmine %s from %d", f.Network, fromBlock)
		}
		if _, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ?, block_number = NULL,
			block_hash = NULL, gas_used = NULL, events = NULL, error = NULL, ended = NULL
			WHERE network = ? AND block_number >= ? AND status IN (?, ?)`,
			append([]any{string(engine.StatusSubmitted)}, mined...)...); err != nil {
			return wrap(err, "unmine %s from %d", f.Network, fromBlock)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return accounts, nil
}

// PendingAccounts implements engine.TxStore.
func (s *Store) PendingAccounts(ctx context.Context, network string) ([]string, error) {
	accounts := []string{}
	if err := s.r.SelectContext(ctx, &accounts, `SELECT DISTINCT account_id FROM transactions
		WHERE network = ? AND status IN (?, ?, ?) ORDER BY account_id`, network,
		string(engine.StatusNew), string(engine.StatusWaiting), string(engine.StatusSubmitted)); err != nil {
		return nil, wrap(err, "pending accounts of %s", network)
	}
	return accounts, nil
}

// MarkWaiting implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) MarkWaiting(ctx context.Context, f engine.Fence, id string) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := checkFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ? WHERE id = ? AND status = ?`,
			string(engine.StatusWaiting), id, string(engine.StatusNew))
		if err != nil {
			return wrap(err, "mark %s waiting", id)
		}
		return s.checkUpdated(ctx, dbtx, res, id, "mark %s waiting", "not new")
	})
}

// MarkReady implements engine.TxStore.
func (s *Store) MarkReady(ctx context.Context, ids []string) ([]string, error) {
	moved := []string{}
	if len(ids) == 0 {
		return moved, nil
	}
	err := s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		moved = moved[:0]
		for _, id := range ids {
			res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ? WHERE id = ? AND status = ?`,
				string(engine.StatusNew), id, string(engine.StatusWaiting))
			if err != nil {
				return wrap(err, "mark %s ready", id)
			}
			if n, err := res.RowsAffected(); err != nil {
				return wrap(err, "mark %s ready", id)
			} else if n == 1 {
				moved = append(moved, id)
			}
		}
		return nil
	})
	return moved, err
}

// Dependents implements engine.TxStore.
func (s *Store) Dependents(ctx context.Context, ids []string) ([]*engine.Transaction, error) {
	out := []*engine.Transaction{}
	for start := 0; start < len(ids); start += hashChunk {
		chunk := ids[start:min(start+hashChunk, len(ids))]
		args := []any{string(engine.StatusNew), string(engine.StatusWaiting)}
		for _, id := range chunk {
			args = append(args, id)
		}
		var rows []txRow
		if err := s.r.SelectContext(ctx, &rows, `SELECT seq, `+sqlrow.Prefixed("t.", sqlrow.TxColumns)+` FROM transactions t
			WHERE t.status IN (?, ?) AND t.id IN (
				SELECT tx_id FROM tx_dependencies WHERE depends_on IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`))
			ORDER BY t.seq`, args...); err != nil {
			return nil, wrap(err, "dependents")
		}
		txs, err := decoded(sqlrow.Transactions(rows))
		if err != nil {
			return nil, err
		}
		out = append(out, txs...)
	}
	return out, nil
}

// Statuses implements engine.TxStore.
func (s *Store) Statuses(ctx context.Context, ids []string) (map[string]engine.TxStatus, error) {
	out := make(map[string]engine.TxStatus, len(ids))
	err := inChunks(ids, func(in string, args []any) error {
		var rows []struct {
			ID     string `db:"id"`
			Status string `db:"status"`
		}
		if err := s.r.SelectContext(ctx, &rows, `SELECT id, status FROM transactions WHERE id IN `+in, args...); err != nil {
			return wrap(err, "statuses")
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

// Waiting implements engine.TxStore.
func (s *Store) Waiting(ctx context.Context, network string, limit int) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := s.r.SelectContext(ctx, &rows, sqlrow.TxSelect+` WHERE network = ? AND status = ? ORDER BY seq LIMIT ?`,
		network, string(engine.StatusWaiting), limit); err != nil {
		return nil, wrap(err, "waiting transactions of %s", network)
	}
	return decoded(sqlrow.Transactions(rows))
}

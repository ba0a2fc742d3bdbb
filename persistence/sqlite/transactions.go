package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// txRow is a row of transactions.
type txRow struct {
	Seq             int64          `db:"seq"`
	ID              string         `db:"id"`
	Owner           string         `db:"owner"`
	AccountID       string         `db:"account_id"`
	Network         string         `db:"network"`
	From            string         `db:"from_address"`
	ContractID      string         `db:"contract_id"`
	ContractAddress string         `db:"contract_address"`
	ContractName    string         `db:"contract_name"`
	ContractBWType  string         `db:"contract_bwtype"`
	Method          string         `db:"method"`
	Parameters      sql.NullString `db:"parameters"`
	Data            []byte         `db:"data"`
	Value           sql.NullString `db:"value"`
	Status          string         `db:"status"`
	Created         int64          `db:"created"`
	Submitted       sql.NullInt64  `db:"submitted"`
	Ended           sql.NullInt64  `db:"ended"`
	Nonce           sql.NullInt64  `db:"nonce"`
	GasLimit        sql.NullInt64  `db:"gas_limit"`
	Hash            sql.NullString `db:"hash"`
	RawTx           []byte         `db:"raw_tx"`
	BlockNumber     sql.NullInt64  `db:"block_number"`
	BlockHash       sql.NullString `db:"block_hash"`
	GasUsed         sql.NullInt64  `db:"gas_used"`
	Events          sql.NullString `db:"events"`
	Error           sql.NullString `db:"error"`
	Callbacks       sql.NullString `db:"callbacks"`
	DependsOn       sql.NullString `db:"depends_on"`
	WaitForAsset    string         `db:"wait_for_asset"`
	WaitForValue    sql.NullString `db:"wait_for_value"`
	ABI             sql.NullString `db:"abi"`
	WaitUntil       sql.NullInt64  `db:"wait_until"`
	Replaced        sql.NullInt64  `db:"replaced"`
	// MatchedHash is the hash by which SubmittedByHash found the row.
	MatchedHash sql.NullString `db:"matched_hash"`
}

// txColumns are the columns of transactions but seq, in insert order.
const txColumns = `id, owner, account_id, network, from_address,
	contract_id, contract_address, contract_name, contract_bwtype,
	method, parameters, data, value, status, created, submitted, ended,
	nonce, gas_limit, hash, raw_tx, block_number, block_hash, gas_used,
	events, error, callbacks, depends_on, wait_for_asset, wait_for_value, abi, wait_until, replaced`

const txSelect = `SELECT seq, ` + txColumns + ` FROM transactions`

const txInsert = `INSERT INTO transactions (` + txColumns + `) VALUES (
	?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// insertArgs returns the values of txColumns for t.
func insertArgs(t *engine.Transaction) ([]any, error) {
	var contractAddr string
	if t.ContractAddress != (common.Address{}) {
		contractAddr = address(t.ContractAddress)
	}
	params, err := nullJSON("parameters", t.Parameters, t.Parameters == nil)
	if err != nil {
		return nil, err
	}
	nonce, err := nullUint("nonce", t.Nonce)
	if err != nil {
		return nil, err
	}
	gasLimit, err := gasLimitOf(t.GasLimit)
	if err != nil {
		return nil, err
	}
	blockNumber, err := nullUint("blockNumber", t.BlockNumber)
	if err != nil {
		return nil, err
	}
	gasUsed, err := nullUint("gasUsed", t.GasUsed)
	if err != nil {
		return nil, err
	}
	events, err := nullJSON("events", t.Events, t.Events == nil)
	if err != nil {
		return nil, err
	}
	txErr, err := nullJSON("error", t.Error, t.Error == nil)
	if err != nil {
		return nil, err
	}
	callbacks, err := nullJSON("callbacks", t.Callbacks, t.Callbacks == nil)
	if err != nil {
		return nil, err
	}
	dependsOn, err := nullJSON("dependsOn", t.DependsOn, t.DependsOn == nil)
	if err != nil {
		return nil, err
	}
	status := t.Status
	if status == "" {
		status = engine.StatusNew
	}
	return []any{
		t.ID, t.Owner, t.AccountID, t.Network, address(t.From),
		t.ContractID, contractAddr, t.ContractName, t.ContractBWType,
		t.Method, params, nullBytes(t.Data), nullBig(t.Value), string(status),
		millis(t.Created), nullMillis(t.Submitted), nullMillis(t.Ended),
		nonce, gasLimit, nullHash(t.Hash), nullBytes(t.RawTx), blockNumber, nullHash(t.BlockHash), gasUsed,
		events, txErr, callbacks, dependsOn, t.WaitForAsset, nullBig(t.WaitForValue),
		nullString(string(t.ABI)), nullMillis(t.WaitUntil), nullMillis(t.Replaced),
	}, nil
}

// gasLimitOf encodes a gas limit; 0 (not estimated yet) is NULL.
func gasLimitOf(v uint64) (sql.NullInt64, error) {
	if v == 0 {
		return sql.NullInt64{}, nil
	}
	return nullUint("gasLimit", &v)
}

func (r *txRow) transaction() (*engine.Transaction, error) {
	t := &engine.Transaction{
		ID:             r.ID,
		Owner:          r.Owner,
		AccountID:      r.AccountID,
		Network:        r.Network,
		ContractID:     r.ContractID,
		ContractName:   r.ContractName,
		ContractBWType: r.ContractBWType,
		Method:         r.Method,
		Data:           r.Data,
		Status:         engine.TxStatus(r.Status),
		Created:        fromMillis(r.Created),
		Submitted:      fromNullMillis(r.Submitted),
		Ended:          fromNullMillis(r.Ended),
		RawTx:          r.RawTx,
		WaitForAsset:   r.WaitForAsset,
	}
	var err error
	fail := func(err error) (*engine.Transaction, error) {
		return nil, fmt.Errorf("sqlite: transaction %s: %w", r.ID, err)
	}
	if t.From, err = fromAddress("from", r.From); err != nil {
		return fail(err)
	}
	if t.ContractAddress, err = fromAddress("contractAddress", r.ContractAddress); err != nil {
		return fail(err)
	}
	if err = fromNullJSON("parameters", r.Parameters, &t.Parameters); err != nil {
		return fail(err)
	}
	if t.Value, err = fromNullBig("value", r.Value); err != nil {
		return fail(err)
	}
	if t.Nonce, err = fromNullUint("nonce", r.Nonce); err != nil {
		return fail(err)
	}
	if r.GasLimit.Valid {
		if t.GasLimit, err = uint64Of("gasLimit", r.GasLimit.Int64); err != nil {
			return fail(err)
		}
	}
	if t.Hash, err = fromNullHash("hash", r.Hash); err != nil {
		return fail(err)
	}
	if t.BlockNumber, err = fromNullUint("blockNumber", r.BlockNumber); err != nil {
		return fail(err)
	}
	if t.BlockHash, err = fromNullHash("blockHash", r.BlockHash); err != nil {
		return fail(err)
	}
	if t.GasUsed, err = fromNullUint("gasUsed", r.GasUsed); err != nil {
		return fail(err)
	}
	if err = fromNullJSON("events", r.Events, &t.Events); err != nil {
		return fail(err)
	}
	if r.Error.Valid {
		t.Error = new(engine.TxError)
		if err = fromNullJSON("error", r.Error, t.Error); err != nil {
			return fail(err)
		}
	}
	if err = fromNullJSON("callbacks", r.Callbacks, &t.Callbacks); err != nil {
		return fail(err)
	}
	if err = fromNullJSON("dependsOn", r.DependsOn, &t.DependsOn); err != nil {
		return fail(err)
	}
	if t.WaitForValue, err = fromNullBig("waitForValue", r.WaitForValue); err != nil {
		return fail(err)
	}
	t.WaitUntil = fromNullMillis(r.WaitUntil)
	t.Replaced = fromNullMillis(r.Replaced)
	if r.ABI.Valid {
		t.ABI = json.RawMessage(r.ABI.String)
	}
	return t, nil
}

// transactions converts rows.
func transactions(rows []txRow) ([]*engine.Transaction, error) {
	out := make([]*engine.Transaction, 0, len(rows))
	for i := range rows {
		t, err := rows[i].transaction()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

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
		a, err := insertArgs(t)
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
	if err := s.r.GetContext(ctx, &r, txSelect+` WHERE id = ?`, id); err != nil {
		return nil, wrap(err, "transaction %s", id)
	}
	return r.transaction()
}

// ReadyTransactions returns up to limit transactions of the account on the
// network in status new, in acceptance order. A limit <= 0 returns none.
func (s *Store) ReadyTransactions(ctx context.Context, accountID, network string, limit int) ([]*engine.Transaction, error) {
	if limit <= 0 {
		return []*engine.Transaction{}, nil
	}
	var rows []txRow
	if err := s.r.SelectContext(ctx, &rows, txSelect+`
		WHERE account_id = ? AND network = ? AND status = ? ORDER BY seq LIMIT ?`,
		accountID, network, string(engine.StatusNew), limit); err != nil {
		return nil, wrap(err, "ready transactions of %s on %s", accountID, network)
	}
	return transactions(rows)
}

// InFlight returns the account's transactions on the network in status
// submitted, by nonce.
func (s *Store) InFlight(ctx context.Context, accountID, network string) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := s.r.SelectContext(ctx, &rows, txSelect+`
		WHERE account_id = ? AND network = ? AND status = ? ORDER BY nonce, seq`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return nil, wrap(err, "in-flight transactions of %s on %s", accountID, network)
	}
	return transactions(rows)
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
	u, err := uint64Of("nonce", n.Int64)
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: max nonce of %s on %s: %w", accountID, network, err)
	}
	return u, true, nil
}

// MarkSubmitted records tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx and
// tx.Submitted (all required but the gas limit) and moves the row from new
// to submitted. It fails with engine.ErrConflict if the row is no longer new
// and engine.ErrNotFound if there is none. tx.Status is not modified.
func (s *Store) MarkSubmitted(ctx context.Context, tx *engine.Transaction) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error { return s.markSubmitted(ctx, dbtx, tx) })
}

// MarkSubmittedMany implements engine.TxStore: MarkSubmitted of every tx
// in one database transaction, all or none.
func (s *Store) MarkSubmittedMany(ctx context.Context, txs []*engine.Transaction) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		for _, tx := range txs {
			if err := s.markSubmitted(ctx, dbtx, tx); err != nil {
				return err
			}
		}
		return nil
	})
}

// markSubmitted is MarkSubmitted inside dbtx.
func (s *Store) markSubmitted(ctx context.Context, dbtx *sqlx.Tx, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Submitted == nil {
		return fmt.Errorf("sqlite: mark %s submitted: nonce, hash and submitted time are required", tx.ID)
	}
	nonce, err := nullUint("nonce", tx.Nonce)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s submitted: %w", tx.ID, err)
	}
	gasLimit, err := gasLimitOf(tx.GasLimit)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s submitted: %w", tx.ID, err)
	}
	res, err := dbtx.ExecContext(ctx, `UPDATE transactions
		SET status = ?, nonce = ?, gas_limit = ?, hash = ?, raw_tx = ?, submitted = ?
		WHERE id = ? AND status = ?`,
		string(engine.StatusSubmitted), nonce, gasLimit, nullHash(tx.Hash), nullBytes(tx.RawTx),
		nullMillis(tx.Submitted), tx.ID, string(engine.StatusNew))
	if err != nil {
		return wrap(err, "mark %s submitted", tx.ID)
	}
	if err := s.checkUpdated(ctx, dbtx, res, tx.ID, "mark %s submitted", "not new"); err != nil {
		return err
	}
	return insertAttempt(ctx, dbtx, tx)
}

// insertAttempt records the hash of a broadcast version of tx.
func insertAttempt(ctx context.Context, dbtx *sqlx.Tx, tx *engine.Transaction) error {
	if _, err := dbtx.ExecContext(ctx, `INSERT INTO tx_attempts (network, hash, tx_id) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, tx.Network, tx.Hash.Hex(), tx.ID); err != nil {
		return wrap(err, "record hash of %s", tx.ID)
	}
	return nil
}

// MarkReplaced implements engine.TxStore.
func (s *Store) MarkReplaced(ctx context.Context, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Replaced == nil {
		return fmt.Errorf("sqlite: mark %s replaced: nonce, hash and replaced time are required", tx.ID)
	}
	nonce, err := nullUint("nonce", tx.Nonce)
	if err != nil {
		return fmt.Errorf("sqlite: mark %s replaced: %w", tx.ID, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET hash = ?, raw_tx = ?, replaced = ?
			WHERE id = ? AND status = ? AND nonce = ?`,
			nullHash(tx.Hash), nullBytes(tx.RawTx), nullMillis(tx.Replaced), tx.ID, string(engine.StatusSubmitted), nonce)
		if err != nil {
			return wrap(err, "mark %s replaced", tx.ID)
		}
		if err := s.checkUpdated(ctx, dbtx, res, tx.ID, "mark %s replaced", "not submitted with this nonce"); err != nil {
			return err
		}
		return insertAttempt(ctx, dbtx, tx)
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
	errJSON, err := nullJSON("error", txErr, txErr == nil)
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
		if err := s.r.SelectContext(ctx, &rows, `SELECT t.seq, `+prefixed("t.", txColumns)+`, a.hash AS matched_hash
			FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
			WHERE a.network = ? AND t.status = ? AND a.hash IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`)
			ORDER BY t.seq`, args...); err != nil {
			return nil, wrap(err, "submitted transactions by hash on %s", network)
		}
		ts, err := transactions(rows)
		if err != nil {
			return nil, err
		}
		for i, r := range rows {
			if r.MatchedHash.Valid {
				h := common.HexToHash(r.MatchedHash.String)
				ts[i].Hash = &h
			}
		}
		out = append(out, ts...)
	}
	return out, nil
}

// MarkMined applies the outcomes in one database transaction: status, block
// number and hash, gas used, events, error and ended of each, and the
// callback outbox rows of each transaction that was not terminal before.
// If one transaction does not exist, nothing is applied and the error wraps
// engine.ErrNotFound.
func (s *Store) MarkMined(ctx context.Context, outcomes []engine.Mined) error {
	if len(outcomes) == 0 {
		return nil
	}
	type encoded struct {
		blockNumber, gasUsed int64
		events, txErr        sql.NullString
	}
	enc := make([]encoded, len(outcomes))
	for i, o := range outcomes {
		var (
			e   encoded
			err error
		)
		if e.blockNumber, err = int64Of("blockNumber", o.BlockNumber); err != nil {
			return fmt.Errorf("sqlite: mark %s mined: %w", o.ID, err)
		}
		if e.gasUsed, err = int64Of("gasUsed", o.GasUsed); err != nil {
			return fmt.Errorf("sqlite: mark %s mined: %w", o.ID, err)
		}
		if e.events, err = nullJSON("events", o.Events, o.Events == nil); err != nil {
			return fmt.Errorf("sqlite: mark %s mined: %w", o.ID, err)
		}
		if e.txErr, err = nullJSON("error", o.Error, o.Error == nil); err != nil {
			return fmt.Errorf("sqlite: mark %s mined: %w", o.ID, err)
		}
		enc[i] = e
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		stmt, err := dbtx.PreparexContext(ctx, `UPDATE transactions
			SET status = ?, block_number = ?, block_hash = ?, gas_used = ?, events = ?, error = ?, ended = ?,
				hash = COALESCE(?, hash)
			WHERE id = ?`)
		if err != nil {
			return wrap(err, "mark mined: prepare")
		}
		defer stmt.Close()
		for i, o := range outcomes {
			e := enc[i]
			var mined sql.NullString
			if o.Hash != (common.Hash{}) {
				mined = sql.NullString{String: o.Hash.Hex(), Valid: true}
			}
			var before struct {
				Status    string         `db:"status"`
				Callbacks sql.NullString `db:"callbacks"`
			}
			if err := dbtx.GetContext(ctx, &before, `SELECT status, callbacks FROM transactions WHERE id = ?`, o.ID); err != nil {
				return wrap(err, "mark %s mined", o.ID)
			}
			if !engine.TxStatus(before.Status).Terminal() && o.Status.Terminal() {
				if err := insertCallbacks(ctx, dbtx, o.ID, before.Callbacks, o.Ended); err != nil {
					return err
				}
			}
			res, err := stmt.ExecContext(ctx, string(o.Status), e.blockNumber, o.BlockHash.Hex(), e.gasUsed,
				e.events, e.txErr, millis(o.Ended), mined, o.ID)
			if err != nil {
				return wrap(err, "mark %s mined", o.ID)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return wrap(err, "mark %s mined", o.ID)
			}
			if n == 0 {
				return notFound("mark %s mined: no such transaction", o.ID)
			}
		}
		return nil
	})
}

// ReleaseNonce implements engine.TxStore.
func (s *Store) ReleaseNonce(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) error {
	status, errJSON, endedAt := string(engine.StatusNew), sql.NullString{}, sql.NullInt64{}
	if txErr != nil {
		j, err := nullJSON("error", txErr, false)
		if err != nil {
			return fmt.Errorf("sqlite: release nonce of %s: %w", id, err)
		}
		status, errJSON, endedAt = string(engine.StatusFailed), j, sql.NullInt64{Int64: millis(ended), Valid: true}
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
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
	from, err := nullUint("fromBlock", &fromBlock)
	if err != nil {
		return nil, fmt.Errorf("sqlite: unmine: %w", err)
	}
	var accounts []string
	err = s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		accounts = nil
		if err := dbtx.SelectContext(ctx, &accounts, `SELECT DISTINCT account_id FROM transactions
			WHERE network = ? AND block_number >= ? ORDER BY account_id`, network, from); err != nil {
			return wrap(err, "unmine %s from %d", network, fromBlock)
		}
		if _, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = ?, block_number = NULL,
			block_hash = NULL, gas_used = NULL, events = NULL, error = NULL, ended = NULL
			WHERE network = ? AND block_number >= ?`, string(engine.StatusSubmitted), network, from); err != nil {
			return wrap(err, "unmine %s from %d", network, fromBlock)
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

// MarkWaiting implements engine.TxStore.
func (s *Store) MarkWaiting(ctx context.Context, id string) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
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
		if err := s.r.SelectContext(ctx, &rows, `SELECT seq, `+prefixed("t.", txColumns)+` FROM transactions t
			WHERE t.status IN (?, ?) AND t.id IN (
				SELECT tx_id FROM tx_dependencies WHERE depends_on IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`))
			ORDER BY t.seq`, args...); err != nil {
			return nil, wrap(err, "dependents")
		}
		ts, err := transactions(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}

// Statuses implements engine.TxStore.
func (s *Store) Statuses(ctx context.Context, ids []string) (map[string]engine.TxStatus, error) {
	out := make(map[string]engine.TxStatus, len(ids))
	for start := 0; start < len(ids); start += hashChunk {
		chunk := ids[start:min(start+hashChunk, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		var rows []struct {
			ID     string `db:"id"`
			Status string `db:"status"`
		}
		if err := s.r.SelectContext(ctx, &rows, `SELECT id, status FROM transactions
			WHERE id IN (?`+strings.Repeat(`, ?`, len(chunk)-1)+`)`, args...); err != nil {
			return nil, wrap(err, "statuses")
		}
		for _, r := range rows {
			out[r.ID] = engine.TxStatus(r.Status)
		}
	}
	return out, nil
}

// Waiting implements engine.TxStore.
func (s *Store) Waiting(ctx context.Context, network string, limit int) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := s.r.SelectContext(ctx, &rows, txSelect+` WHERE network = ? AND status = ? ORDER BY seq LIMIT ?`,
		network, string(engine.StatusWaiting), limit); err != nil {
		return nil, wrap(err, "waiting transactions of %s", network)
	}
	return transactions(rows)
}

// prefixed qualifies every column of a comma-separated list with p.
func prefixed(p, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

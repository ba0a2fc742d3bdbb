package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// InsertTransactions inserts txs in one database transaction: all or none
// (the group commit of the account actor). Rows get their acceptance order
// in slice order. Every field is stored as given; an empty Status is stored
// as new. The Idempotency records of txs (those not nil) are stored in the
// same database transaction. A taken id or a live idempotency key is
// engine.ErrConflict; an owner or account that does not exist is
// engine.ErrNotFound. txs is not modified.
//
// A batch of at most maxSingleInsert rows without idempotency records or
// dependencies (the group commits of a busy account) is one prepared
// INSERT of a JSON document, in its own implicit transaction: one round
// trip in all (insertRows). Other batches stream their rows with COPY in a
// transaction: one round trip for the rows and no bind-parameter limit.
// Measured against multi-row INSERTs of 500 rows
// (BenchmarkInsertTransactions, batches of 500 ERC-20 transfers, on the
// pgtest cluster with fsync off, loopback, 2 CPUs): about 11-12 ms per
// batch (40-47k rows/s) against 23-27 ms (18-21k rows/s), and no slower for
// a batch of one (0.4 ms each). The idempotency records follow the COPY
// on the same connection and in the same transaction, as one INSERT of
// arrays (plus the deletion of expired records): two statements per batch
// that carries any, none otherwise; so do the dependencies (DependsOn, one
// INSERT of arrays into tx_dependencies).
func (s *Store) InsertTransactions(ctx context.Context, txs []*engine.Transaction) error {
	if len(txs) == 0 {
		return nil
	}
	// Encode before a connection is taken.
	rows := make([][]any, len(txs))
	var (
		idems        []*engine.IdempotencyRecord
		depTx, depOn pq.StringArray
	)
	for i, t := range txs {
		a, err := sqlrow.TxArgs(t, timeValue)
		if err != nil {
			return fmt.Errorf("postgres: insert transaction %s: %w", t.ID, err)
		}
		rows[i] = a
		if t.Idempotency != nil {
			idems = append(idems, t.Idempotency)
		}
		for _, dep := range t.DependsOn {
			depTx, depOn = append(depTx, t.ID), append(depOn, dep)
		}
	}
	if len(idems) == 0 && len(depTx) == 0 && len(rows) <= maxSingleInsert {
		err := s.insertRows(ctx, rows, txs[0].ID)
		if errors.Is(err, syscall.ECONNREFUSED) || pq.As(err) != nil {
			// Not even connected, or the server answered with an error: a
			// statement in its own transaction that fails commits nothing.
			// Only a connection lost before the answer leaves it unknown.
			return engine.NotCommitted(err)
		}
		return err
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := copyRows(ctx, tx, rows); err != nil {
			return wrap(err, "insert %d transactions (first %s)", len(txs), txs[0].ID)
		}
		if err := insertIdempotency(ctx, tx, idems...); err != nil {
			return fmt.Errorf("insert %d transactions (first %s): %w", len(txs), txs[0].ID, err)
		}
		if len(depTx) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tx_dependencies (tx_id, depends_on)
				SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`, depTx, depOn); err != nil {
				return wrap(err, "insert dependencies of %d transactions (first %s)", len(txs), txs[0].ID)
			}
		}
		return nil
	})
}

// maxSingleInsert bounds the batches that InsertTransactions writes with
// insertStatement (one round trip) rather than COPY in a transaction (four:
// BEGIN, COPY, end of COPY, COMMIT). PostgreSQL reads JSON more slowly
// than COPY's text, so the round trips saved pay only for small batches.
// BenchmarkInsertTransactionsDurable, 10 interleaved runs on a shared
// 2-core machine: 1 row 751 -> 341 us, 32 rows 1.49 -> 1.37 ms (p=0.17),
// 500 rows 12.3 -> 15.9 ms (+29 %).
const maxSingleInsert = 64

// insertStatement inserts the rows of a JSON array of objects keyed by
// column (rowsJSON), in array order: seq is taken above the sort.
const insertStatement = `INSERT INTO transactions (` + sqlrow.TxColumns + `)
	SELECT ` + sqlrow.TxColumns + `
	FROM json_populate_recordset(NULL::transactions, $1::json) WITH ORDINALITY AS r
	ORDER BY r.ordinality`

// insertRows inserts rows (values of TxColumns) with insertStatement, a
// prepared statement run on its own: its implicit transaction commits
// with it, so the whole group commit is one round trip (BEGIN, COPY,
// end of COPY and COMMIT are four).
func (s *Store) insertRows(ctx context.Context, rows [][]any, first string) error {
	doc, err := rowsJSON(rows)
	if err != nil {
		return fmt.Errorf("postgres: insert %d transactions (first %s): %w", len(rows), first, err)
	}
	stmt, err := s.insertStmt(ctx)
	if err != nil {
		return wrap(err, "insert %d transactions (first %s): prepare", len(rows), first)
	}
	if _, err := stmt.ExecContext(ctx, doc); err != nil {
		return wrap(err, "insert %d transactions (first %s)", len(rows), first)
	}
	return nil
}

// insertStmt returns the prepared insertStatement, preparing it on first
// use (database/sql prepares it again on each connection that runs it).
func (s *Store) insertStmt(ctx context.Context) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if s.insert != nil {
		return s.insert, nil
	}
	stmt, err := s.db.PrepareContext(ctx, insertStatement)
	if err != nil {
		return nil, err
	}
	s.insert = stmt
	return stmt, nil
}

// txColumnNames are the names of sqlrow.TxColumns, in order.
var txColumnNames = func() []string {
	parts := strings.Split(sqlrow.TxColumns, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}()

// rowsJSON encodes rows (values of TxColumns as sqlrow.TxArgs returns
// them) as a JSON array of objects keyed by column, for
// json_populate_recordset: each value is the text PostgreSQL reads for
// the column's type (a BYTEA as \x and hex, a TIMESTAMPTZ in ISO 8601),
// NULL as null.
func rowsJSON(rows [][]any) (string, error) {
	buf := make([]byte, 0, 1024*len(rows))
	buf = append(buf, '[')
	for i, row := range rows {
		if len(row) != len(txColumnNames) {
			return "", fmt.Errorf("%d values for %d columns", len(row), len(txColumnNames))
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		for j, v := range row {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '"')
			buf = append(buf, txColumnNames[j]...)
			buf = append(buf, '"', ':')
			var err error
			if buf, err = appendJSONValue(buf, v); err != nil {
				return "", fmt.Errorf("column %s: %w", txColumnNames[j], err)
			}
		}
		buf = append(buf, '}')
	}
	buf = append(buf, ']')
	return string(buf), nil
}

// appendJSONValue appends v (a value of sqlrow.TxArgs) as JSON.
func appendJSONValue(buf []byte, v any) ([]byte, error) {
	if vr, ok := v.(driver.Valuer); ok {
		var err error
		if v, err = vr.Value(); err != nil {
			return buf, err
		}
	}
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return appendJSONString(buf, x), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case []byte: // BYTEA
		buf = append(buf, `"\\x`...)
		buf = hex.AppendEncode(buf, x)
		return append(buf, '"'), nil
	case time.Time:
		buf = append(buf, '"')
		buf = x.AppendFormat(buf, "2006-01-02T15:04:05.999999Z07:00")
		return append(buf, '"'), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	}
	return buf, fmt.Errorf("unexpected value of type %T", v)
}

// appendJSONString appends s as a JSON string. Bytes that are not valid
// UTF-8 are passed as they are: PostgreSQL refuses them, as it refuses
// them in COPY.
func appendJSONString(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// copyStatement streams rows into transactions (COPY FROM STDIN). COPY
// processes rows in order, so seq follows the slice.
const copyStatement = `COPY transactions (` + sqlrow.TxColumns + `) FROM STDIN`

// copyRows writes rows with COPY: lib/pq buffers them and sends them in
// 64 KiB messages; the final Exec without arguments ends the stream and
// returns the server's verdict (constraint violations surface there).
func copyRows(ctx context.Context, tx *sqlx.Tx, rows [][]any) (err error) {
	stmt, err := tx.PrepareContext(ctx, copyStatement)
	if err != nil {
		return fmt.Errorf("start copy: %w", err)
	}
	defer func() {
		if cerr := stmt.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("end copy: %w", cerr)
		}
	}()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r...); err != nil {
			return err
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return err
	}
	return nil
}

// TransactionByID returns the transaction with this id (any owner), or
// engine.ErrNotFound.
func (s *Store) TransactionByID(ctx context.Context, id string) (*engine.Transaction, error) {
	var r txRow
	if err := s.db.GetContext(ctx, &r, sqlrow.TxSelect+` WHERE id = $1`, id); err != nil {
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
	var rows []txRow
	if err := s.db.SelectContext(ctx, &rows, sqlrow.TxSelect+`
		WHERE account_id = $1 AND network = $2 AND status = 'new' ORDER BY seq LIMIT $3`,
		accountID, network, limit); err != nil {
		return nil, wrap(err, "ready transactions of %s on %s", accountID, network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// InFlight returns the account's transactions on the network in status
// submitted, by nonce.
func (s *Store) InFlight(ctx context.Context, accountID, network string) ([]*engine.Transaction, error) {
	var rows []txRow
	if err := s.db.SelectContext(ctx, &rows, sqlrow.TxSelect+`
		WHERE account_id = $1 AND network = $2 AND status = $3 ORDER BY nonce, seq`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return nil, wrap(err, "in-flight transactions of %s on %s", accountID, network)
	}
	return decoded(sqlrow.Transactions(rows))
}

// InFlightSummary implements engine.TxStore.
func (s *Store) InFlightSummary(ctx context.Context, accountID, network string) (engine.InFlightSummary, error) {
	var r sqlrow.InFlightRow
	if err := s.db.GetContext(ctx, &r, `SELECT COUNT(*) AS n, MIN(nonce) AS lowest
		FROM transactions WHERE account_id = $1 AND network = $2 AND status = $3`,
		accountID, network, string(engine.StatusSubmitted)); err != nil {
		return engine.InFlightSummary{}, wrap(err, "in-flight summary of %s on %s", accountID, network)
	}
	return r.Summary(), nil
}

// MaxNonce returns the highest nonce ever assigned to the account on the
// network (whatever the status of its transaction), and false when none was.
func (s *Store) MaxNonce(ctx context.Context, accountID, network string) (uint64, bool, error) {
	var n sql.NullInt64
	if err := s.db.GetContext(ctx, &n, `SELECT MAX(nonce) FROM transactions
		WHERE account_id = $1 AND network = $2 AND nonce IS NOT NULL`, accountID, network); err != nil {
		return 0, false, wrap(err, "max nonce of %s on %s", accountID, network)
	}
	if !n.Valid {
		return 0, false, nil
	}
	u, err := sqlrow.Uint64Of("nonce", n.Int64)
	if err != nil {
		return 0, false, fmt.Errorf("postgres: max nonce of %s on %s: %w", accountID, network, err)
	}
	return u, true, nil
}

// MarkSubmittedMany implements engine.TxStore: for every tx, it records
// tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx and tx.Submitted (all required
// but the gas limit), moves the row from new to submitted and records the
// version in tx_attempts, in one database transaction, all or none. It
// fails with engine.ErrConflict if a row is no longer new, engine.ErrNotFound
// if there is none, and engine.ErrFenced if f is not current (the lease row
// is locked FOR SHARE first, so an acquisition waits for the commit).
// tx.Status is not modified. It is MarkSubmittedGroups of one group.
func (s *Store) MarkSubmittedMany(ctx context.Context, f engine.Fence, txs []*engine.Transaction) error {
	return s.MarkSubmittedGroups(ctx, []engine.SubmitGroup{{Fence: f, Txs: txs}})
}

// markSubmitted marks one transaction submitted inside dbtx.
func (s *Store) markSubmitted(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence, tx *engine.Transaction) error {
	if tx.Nonce == nil || tx.Hash == nil || tx.Submitted == nil {
		return fmt.Errorf("postgres: mark %s submitted: nonce, hash and submitted time are required", tx.ID)
	}
	nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
	if err != nil {
		return fmt.Errorf("postgres: mark %s submitted: %w", tx.ID, err)
	}
	gasLimit, err := sqlrow.GasLimit(tx.GasLimit)
	if err != nil {
		return fmt.Errorf("postgres: mark %s submitted: %w", tx.ID, err)
	}
	res, err := dbtx.ExecContext(ctx, `UPDATE transactions
		SET status = $1, nonce = $2, gas_limit = $3, hash = $4, raw_tx = $5, submitted = $6, error = NULL
		WHERE id = $7 AND status = $8`,
		string(engine.StatusSubmitted), nonce, gasLimit, sqlrow.NullHash(tx.Hash), sqlrow.NullBytes(tx.RawTx),
		nullTS(tx.Submitted), tx.ID, string(engine.StatusNew))
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
		return fmt.Errorf("postgres: mark %s replaced: nonce, hash and replaced time are required", tx.ID)
	}
	nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
	if err != nil {
		return fmt.Errorf("postgres: mark %s replaced: %w", tx.ID, err)
	}
	errJSON, err := sqlrow.NullJSON("error", tx.Error, tx.Error == nil)
	if err != nil {
		return fmt.Errorf("postgres: mark %s replaced: %w", tx.ID, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET hash = $1, raw_tx = $2, replaced = $3, error = $4
			WHERE id = $5 AND status = $6 AND nonce = $7`,
			sqlrow.NullHash(tx.Hash), sqlrow.NullBytes(tx.RawTx), nullTS(tx.Replaced), errJSON, tx.ID, string(engine.StatusSubmitted), nonce)
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
	err = dbtx.GetContext(ctx, &status, `SELECT status FROM transactions WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what+": no such transaction", id)
	}
	if err != nil {
		return wrap(err, what, id)
	}
	return conflict(what+": status is %s, %s", id, status, why)
}

// MarkFailed moves a transaction that is not terminal to failed with txErr
// and ended. It fails with engine.ErrConflict if the transaction is already
// completed or failed and engine.ErrNotFound if there is none.
func (s *Store) MarkFailed(ctx context.Context, id string, txErr *engine.TxError, ended time.Time) error {
	errJSON, err := sqlrow.NullJSON("error", txErr, txErr == nil)
	if err != nil {
		return fmt.Errorf("postgres: mark %s failed: %w", id, err)
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = $1, error = $2, ended = $3
			WHERE id = $4 AND status NOT IN ($5, $6)`,
			string(engine.StatusFailed), errJSON, ts(ended),
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
// from new, with the fence checked as in MarkSubmittedMany (the lease row
// is locked FOR SHARE first). The callbacks are enqueued in the same
// database transaction.
func (s *Store) FailQueued(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	return s.failFrom(ctx, f, engine.StatusNew, id, txErr, ended)
}

// SubmittedByHash returns the transactions in status submitted on the
// network whose hash is one of hashes, in acceptance order. The hashes
// travel as one array parameter, however many there are.
func (s *Store) SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*engine.Transaction, error) {
	if len(hashes) == 0 {
		return []*engine.Transaction{}, nil
	}
	hexes := make(pq.StringArray, len(hashes))
	for i, h := range hashes {
		hexes[i] = h.Hex()
	}
	var rows []txRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT t.seq, `+sqlrow.Prefixed("t.", sqlrow.TxColumns)+`, a.hash AS matched_hash
		FROM tx_attempts a JOIN transactions t ON t.id = a.tx_id
		WHERE a.network = $1 AND t.status = $2 AND a.hash = ANY($3)
		ORDER BY t.seq`, network, string(engine.StatusSubmitted), hexes); err != nil {
		return nil, wrap(err, "submitted transactions by hash on %s", network)
	}
	return decoded(sqlrow.Transactions(rows))
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
// take a fixed number of statements per chunk (markMinedBulk); when a
// transaction has several, they are applied one after the other, in order.
func (s *Store) markMined(ctx context.Context, f engine.NetworkFence, outcomes []engine.Mined, strict bool) ([]string, error) {
	if len(outcomes) == 0 {
		return nil, nil // nothing to write
	}
	enc := make([]sqlrow.MinedValues, len(outcomes))
	for i, o := range outcomes {
		e, err := sqlrow.EncodeMined(o)
		if err != nil {
			return nil, fmt.Errorf("postgres: mark %s mined: %w", o.ID, err)
		}
		enc[i] = e
	}
	distinct := uniqueIDs(len(outcomes), func(i int) string { return outcomes[i].ID })
	var skipped []string
	err := s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		skipped = nil
		if err := s.lockNetworkFence(ctx, dbtx, f); err != nil {
			return err
		}
		if distinct {
			var err error
			skipped, err = markMinedBulk(ctx, dbtx, outcomes, enc, strict)
			return err
		}
		for i := range outcomes {
			sk, err := markMinedBulk(ctx, dbtx, outcomes[i:i+1], enc[i:i+1], strict)
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

// ReleaseNonce implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) ReleaseNonce(ctx context.Context, f engine.Fence, id string, txErr *engine.TxError, ended time.Time) error {
	status, errJSON, endedAt := string(engine.StatusNew), sql.NullString{}, sql.NullTime{}
	if txErr != nil {
		j, err := sqlrow.NullJSON("error", txErr, false)
		if err != nil {
			return fmt.Errorf("postgres: release nonce of %s: %w", id, err)
		}
		status, errJSON, endedAt = string(engine.StatusFailed), j, sql.NullTime{Time: ts(ended), Valid: true}
	}
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = $1, error = $2, ended = $3,
			nonce = NULL, gas_limit = NULL, hash = NULL, raw_tx = NULL, submitted = NULL
			WHERE id = $4 AND status = $5`,
			status, errJSON, endedAt, id, string(engine.StatusSubmitted))
		if err != nil {
			return wrap(err, "release nonce of %s", id)
		}
		if err := s.checkUpdated(ctx, dbtx, res, id, "release nonce of %s", "not submitted"); err != nil {
			return err
		}
		if _, err := dbtx.ExecContext(ctx, `DELETE FROM tx_attempts WHERE tx_id = $1`, id); err != nil {
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

// UnmineFenced implements engine.FencedFollowerStore. One UPDATE both moves
// the rows back and names their accounts, so no row mined meanwhile slips
// between a read and the write; only completed and failed rows move.
func (s *Store) UnmineFenced(ctx context.Context, f engine.NetworkFence, fromBlock uint64) ([]string, error) {
	from, err := sqlrow.NullUint("fromBlock", &fromBlock)
	if err != nil {
		return nil, fmt.Errorf("postgres: unmine: %w", err)
	}
	var touched []string
	err = s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		touched = nil
		if err := s.lockNetworkFence(ctx, dbtx, f); err != nil {
			return err
		}
		if err := dbtx.SelectContext(ctx, &touched, `UPDATE transactions SET status = $1, block_number = NULL,
			block_hash = NULL, gas_used = NULL, events = NULL, error = NULL, ended = NULL
			WHERE network = $2 AND block_number >= $3 AND status IN ($4, $5)
			RETURNING account_id`, string(engine.StatusSubmitted), f.Network, from,
			string(engine.StatusCompleted), string(engine.StatusFailed)); err != nil {
			return wrap(err, "unmine %s from %d", f.Network, fromBlock)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(touched)
	return slices.Compact(touched), nil
}

// PendingAccounts implements engine.TxStore.
func (s *Store) PendingAccounts(ctx context.Context, network string) ([]string, error) {
	accounts := []string{}
	if err := s.db.SelectContext(ctx, &accounts, `SELECT DISTINCT account_id FROM transactions
		WHERE network = $1 AND status IN ($2, $3, $4) ORDER BY account_id`, network,
		string(engine.StatusNew), string(engine.StatusWaiting), string(engine.StatusSubmitted)); err != nil {
		return nil, wrap(err, "pending accounts of %s", network)
	}
	return accounts, nil
}

// MarkWaiting implements engine.TxStore; the fence is checked as in
// MarkSubmittedMany.
func (s *Store) MarkWaiting(ctx context.Context, f engine.Fence, id string) error {
	return s.inTx(ctx, func(dbtx *sqlx.Tx) error {
		if err := s.lockFence(ctx, dbtx, f); err != nil {
			return err
		}
		res, err := dbtx.ExecContext(ctx, `UPDATE transactions SET status = $1 WHERE id = $2 AND status = $3`,
			string(engine.StatusWaiting), id, string(engine.StatusNew))
		if err != nil {
			return wrap(err, "mark %s waiting", id)
		}
		return s.checkUpdated(ctx, dbtx, res, id, "mark %s waiting", "not new")
	})
}

// MarkReady implements engine.TxStore: one UPDATE of all ids. The ids moved
// are returned in the order of ids, each once.
func (s *Store) MarkReady(ctx context.Context, ids []string) ([]string, error) {
	moved := []string{}
	if len(ids) == 0 {
		return moved, nil
	}
	var updated []string
	if err := s.db.SelectContext(ctx, &updated, `UPDATE transactions SET status = $1
		WHERE id = ANY($2::text[]) AND status = $3 RETURNING id`,
		string(engine.StatusNew), pq.StringArray(ids), string(engine.StatusWaiting)); err != nil {
		return nil, wrap(err, "mark %d transactions ready", len(ids))
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

// Dependents implements engine.TxStore.
func (s *Store) Dependents(ctx context.Context, ids []string) ([]*engine.Transaction, error) {
	if len(ids) == 0 {
		return []*engine.Transaction{}, nil
	}
	var rows []txRow
	if err := s.db.SelectContext(ctx, &rows, sqlrow.TxSelect+`
		WHERE status IN ($1, $2) AND id IN (
			SELECT tx_id FROM tx_dependencies WHERE depends_on = ANY($3::text[]))
		ORDER BY seq`, string(engine.StatusNew), string(engine.StatusWaiting), pq.StringArray(ids)); err != nil {
		return nil, wrap(err, "dependents")
	}
	return decoded(sqlrow.Transactions(rows))
}

// Statuses implements engine.TxStore.
func (s *Store) Statuses(ctx context.Context, ids []string) (map[string]engine.TxStatus, error) {
	out := make(map[string]engine.TxStatus, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID     string `db:"id"`
		Status string `db:"status"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, status FROM transactions WHERE id = ANY($1::text[])`,
		pq.StringArray(ids)); err != nil {
		return nil, wrap(err, "statuses")
	}
	for _, r := range rows {
		out[r.ID] = engine.TxStatus(r.Status)
	}
	return out, nil
}

// Waiting implements engine.TxStore. A negative limit means no limit, as
// with SQLite's LIMIT.
func (s *Store) Waiting(ctx context.Context, network string, limit int) ([]*engine.Transaction, error) {
	lim := sql.NullInt64{Int64: int64(limit), Valid: limit >= 0}
	var rows []txRow
	if err := s.db.SelectContext(ctx, &rows, sqlrow.TxSelect+` WHERE network = $1 AND status = $2 ORDER BY seq LIMIT $3`,
		network, string(engine.StatusWaiting), lim); err != nil {
		return nil, wrap(err, "waiting transactions of %s", network)
	}
	return decoded(sqlrow.Transactions(rows))
}

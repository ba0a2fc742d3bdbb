package postgres

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// Bulk writes: the hot writes of many rows (MarkSubmittedGroups, MarkMined
// and the callback outbox rows they add) as a fixed number of statements
// per chunk of bulkChunk rows, the rows' values as one array parameter per
// column, instead of statements per row.

// bulkChunk is the most rows one bulk statement carries.
const bulkChunk = 5000

// errRowByRow tells that a bulk write did not apply every row (a row was
// not in the status it needed, or a constraint refused one): the caller
// rolls back and redoes the call row by row, which stops at the first
// failing row in input order and returns its error as it always did.
var errRowByRow = errors.New("postgres: redo row by row")

// inChunks calls fn with the bounds of consecutive chunks of at most
// bulkChunk of n items, in order, until one fails.
func inChunks(n int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += bulkChunk {
		if err := fn(lo, min(lo+bulkChunk, n)); err != nil {
			return err
		}
	}
	return nil
}

// uniqueIDs reports whether no id is repeated.
func uniqueIDs(n int, id func(i int) string) bool {
	seen := make(map[string]struct{}, n)
	for i := range n {
		if _, dup := seen[id(i)]; dup {
			return false
		}
		seen[id(i)] = struct{}{}
	}
	return true
}

// rowsNamed names the rows of ids in an error: the id of one row, as the
// writes of one row name it, or their number.
func rowsNamed(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	return fmt.Sprintf("%d transactions", len(ids))
}

// tsArray encodes times as a timestamptz[] parameter (tsText).
func tsArray(ts []time.Time) pq.StringArray {
	out := make(pq.StringArray, len(ts))
	for i, t := range ts {
		out[i] = tsText(t)
	}
	return out
}

// nullArray encodes optional values as an array parameter whose invalid
// elements are NULL.
func nullArray[T any](vs []sql.Null[T]) pq.GenericArray { return pq.GenericArray{A: vs} }

// submitRow is one transaction of MarkSubmittedGroups, encoded, with the
// fence of its group.
type submitRow struct {
	id, hash  string
	nonce     int64
	gasLimit  sql.NullInt64
	rawHex    sql.Null[string] // hex of the signed bytes, NULL for none
	submitted time.Time
	node      string
	epoch     int64
}

// submitRows encodes the transactions of groups for markSubmittedBulk, and
// false when the bulk write could not return what markSubmitted returns
// row by row: a transaction lacks a required value or does not encode, or
// an id is repeated (the second time is a conflict).
func submitRows(groups []engine.SubmitGroup) ([]submitRow, bool) {
	var rows []submitRow
	for _, g := range groups {
		for _, tx := range g.Txs {
			if tx.Nonce == nil || tx.Hash == nil || tx.Submitted == nil {
				return nil, false
			}
			nonce, err := sqlrow.NullUint("nonce", tx.Nonce)
			if err != nil {
				return nil, false
			}
			gasLimit, err := sqlrow.GasLimit(tx.GasLimit)
			if err != nil {
				return nil, false
			}
			r := submitRow{id: tx.ID, hash: tx.Hash.Hex(), nonce: nonce.Int64, gasLimit: gasLimit,
				submitted: *tx.Submitted, node: g.Fence.Node, epoch: g.Fence.Epoch}
			if tx.RawTx != nil {
				r.rawHex = sql.Null[string]{V: hex.EncodeToString(tx.RawTx), Valid: true}
			}
			rows = append(rows, r)
		}
	}
	return rows, uniqueIDs(len(rows), func(i int) string { return rows[i].id })
}

// markSubmittedStatement is markSubmitted of many rows in one statement:
// the UPDATE moves the rows still new to submitted, the INSERT records
// each version in tx_attempts from the updated rows (as insertAttempt
// reads them), and the ids updated are returned.
const markSubmittedStatement = `WITH v AS (
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[],
			$7::text[], $8::bigint[]) AS v(id, nonce, gas_limit, hash, raw_hex, submitted, node, epoch)
	), u AS (
		UPDATE transactions t SET status = $9, nonce = v.nonce, gas_limit = v.gas_limit, hash = v.hash,
			raw_tx = decode(v.raw_hex, 'hex'), submitted = v.submitted, error = NULL
		FROM v WHERE t.id = v.id AND t.status = $10
		RETURNING t.id, t.network, t.account_id, t.nonce
	), a AS (
		INSERT INTO tx_attempts (network, hash, tx_id, account_id, nonce, node, epoch, created)
		SELECT u.network, v.hash, u.id, u.account_id, u.nonce, v.node, v.epoch, v.submitted
		FROM u JOIN v ON v.id = u.id
		ON CONFLICT DO NOTHING
	)
	SELECT id FROM u`

// markSubmittedBulk marks rows submitted in dbtx with one statement per
// chunk. It returns errRowByRow (and the caller rolls back) unless every
// row was new and stored.
func markSubmittedBulk(ctx context.Context, dbtx *sqlx.Tx, rows []submitRow) error {
	return inChunks(len(rows), func(lo, hi int) error {
		chunk := rows[lo:hi]
		var (
			ids, hashes, nodes pq.StringArray
			nonces, epochs     pq.Int64Array
			gasLimits          = make([]sql.Null[int64], 0, len(chunk))
			raws               = make([]sql.Null[string], 0, len(chunk))
			submitted          = make([]time.Time, 0, len(chunk))
		)
		for _, r := range chunk {
			ids, hashes, nodes = append(ids, r.id), append(hashes, r.hash), append(nodes, r.node)
			nonces, epochs = append(nonces, r.nonce), append(epochs, r.epoch)
			gasLimits = append(gasLimits, sql.Null[int64]{V: r.gasLimit.Int64, Valid: r.gasLimit.Valid})
			raws = append(raws, r.rawHex)
			submitted = append(submitted, r.submitted)
		}
		var updated []string
		err := dbtx.SelectContext(ctx, &updated, markSubmittedStatement, ids, nonces, nullArray(gasLimits),
			hashes, nullArray(raws), tsArray(submitted), nodes, epochs,
			string(engine.StatusSubmitted), string(engine.StatusNew))
		if pe := pq.As(err); pe != nil && pe.Code.Class() == "23" {
			return errRowByRow // a constraint refused a row: which one, row by row tells
		}
		if err != nil {
			return wrap(err, "mark %s submitted", rowsNamed(ids))
		}
		if len(updated) != len(chunk) {
			return errRowByRow
		}
		return nil
	})
}

// outboxRow is one callback_outbox row to insert: a callback of
// transaction txID to url, due at at.
type outboxRow struct {
	txID, url string
	at        time.Time
}

// outboxRows returns the outbox rows of transaction id whose callbacks
// column holds raw, due at ended: one per URL, in order.
func outboxRows(id string, raw sql.NullString, ended time.Time) ([]outboxRow, error) {
	var urls []string
	if err := sqlrow.FromNullJSON("callbacks", raw, &urls); err != nil {
		return nil, fmt.Errorf("postgres: callbacks of %s: %w", id, err)
	}
	rows := make([]outboxRow, len(urls))
	for i, u := range urls {
		rows[i] = outboxRow{txID: id, url: u, at: ended}
	}
	return rows, nil
}

// insertOutbox inserts rows, pending and due at once (next attempt and
// creation at their time), each with a fresh id, in order (their seq
// follows it), one statement per chunk.
func insertOutbox(ctx context.Context, dbtx *sqlx.Tx, rows []outboxRow) error {
	return inChunks(len(rows), func(lo, hi int) error {
		chunk := rows[lo:hi]
		ids := make(pq.StringArray, len(chunk))
		txIDs := make(pq.StringArray, len(chunk))
		urls := make(pq.StringArray, len(chunk))
		ats := make([]time.Time, len(chunk))
		for i, r := range chunk {
			ids[i], txIDs[i], urls[i], ats[i] = uuid.NewString(), r.txID, r.url, r.at
		}
		if _, err := dbtx.ExecContext(ctx, `INSERT INTO callback_outbox
			(id, tx_id, url, status, attempts, next_attempt, last_error, created)
			SELECT v.id, v.tx_id, v.url, $5, 0, v.at, '', v.at
			FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS v(id, tx_id, url, at, ord)
			ORDER BY v.ord`,
			ids, txIDs, urls, tsArray(ats), string(engine.CallbackPending)); err != nil {
			if chunk[0].txID == chunk[len(chunk)-1].txID {
				return wrap(err, "enqueue callback of %s", chunk[0].txID)
			}
			return wrap(err, "enqueue %d callbacks", len(chunk))
		}
		return nil
	})
}

// minedBefore is what markMined reads of a transaction, locked, before
// applying its outcome.
type minedBefore struct {
	ID        string         `db:"id"`
	Status    string         `db:"status"`
	Callbacks sql.NullString `db:"callbacks"`
}

// minedStep decides the outcome o of a transaction in state before (nil:
// no such transaction): whether it applies, and the outbox rows it adds;
// an error (engine.ErrNotFound, or engine.ErrConflict when strict) stops
// the call with nothing applied.
func minedStep(o engine.Mined, before *minedBefore, strict bool) (bool, []outboxRow, error) {
	if before == nil {
		return false, nil, notFound("mark %s mined: no such transaction", o.ID)
	}
	if engine.TxStatus(before.Status) != engine.StatusSubmitted {
		if strict {
			return false, nil, conflict("mark %s mined: status is %s, not submitted", o.ID, before.Status)
		}
		return false, nil, nil
	}
	if !o.Status.Terminal() {
		return true, nil, nil
	}
	rows, err := outboxRows(o.ID, before.Callbacks, o.Ended)
	return true, rows, err
}

// markMinedStatement applies outcomes to the rows still submitted, one
// array parameter per column.
const markMinedStatement = `UPDATE transactions t
	SET status = v.status, block_number = v.block_number, block_hash = v.block_hash, gas_used = v.gas_used,
		events = v.events, error = v.error, ended = v.ended, hash = COALESCE(v.hash, t.hash)
	FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[],
		$8::timestamptz[], $9::text[]) AS v(id, status, block_number, block_hash, gas_used, events, error, ended, hash)
	WHERE t.id = v.id AND t.status = $10`

// markMinedBulk is markMined's work in dbtx for outcomes of distinct
// transactions, whatever their number in a fixed number of statements per
// chunk: the rows are read and locked in id order (SELECT ... FOR UPDATE),
// the outcomes decided in input order as row by row (minedStep, so the
// first failing one is the error returned), then the outbox rows inserted
// and the applied outcomes written.
func markMinedBulk(ctx context.Context, dbtx *sqlx.Tx, outcomes []engine.Mined, enc []sqlrow.MinedValues, strict bool) ([]string, error) {
	before := make(map[string]*minedBefore, len(outcomes))
	if err := inChunks(len(outcomes), func(lo, hi int) error {
		ids := make(pq.StringArray, 0, hi-lo)
		for _, o := range outcomes[lo:hi] {
			ids = append(ids, o.ID)
		}
		var rows []minedBefore
		if err := dbtx.SelectContext(ctx, &rows, `SELECT id, status, callbacks FROM transactions
			WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`, ids); err != nil {
			return wrap(err, "mark %s mined", rowsNamed(ids))
		}
		for i := range rows {
			before[rows[i].ID] = &rows[i]
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var (
		skipped []string
		outbox  []outboxRow
		applied []int
	)
	for i, o := range outcomes {
		apply, rows, err := minedStep(o, before[o.ID], strict)
		if err != nil {
			return nil, err
		}
		if !apply {
			skipped = append(skipped, o.ID)
			continue
		}
		outbox = append(outbox, rows...)
		applied = append(applied, i)
	}
	if err := insertOutbox(ctx, dbtx, outbox); err != nil {
		return nil, err
	}
	// The rows are locked: their status cannot have changed since read.
	err := inChunks(len(applied), func(lo, hi int) error {
		n := hi - lo
		var (
			ids, statuses, blockHashes = make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
			blockNumbers, gasUsed      = make(pq.Int64Array, n), make(pq.Int64Array, n)
			events, errs, hashes       = make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n)
			ended                      = make([]time.Time, n)
		)
		for j, i := range applied[lo:hi] {
			o, e := outcomes[i], enc[i]
			ids[j], statuses[j], blockHashes[j] = o.ID, string(o.Status), o.BlockHash.Hex()
			blockNumbers[j], gasUsed[j] = e.BlockNumber, e.GasUsed
			events[j], errs[j], hashes[j] = e.Events, e.Error, e.Hash
			ended[j] = o.Ended
		}
		if _, err := dbtx.ExecContext(ctx, markMinedStatement, ids, statuses, blockNumbers, blockHashes, gasUsed,
			pq.GenericArray{A: events}, pq.GenericArray{A: errs}, tsArray(ended), pq.GenericArray{A: hashes},
			string(engine.StatusSubmitted)); err != nil {
			return wrap(err, "mark %s mined", rowsNamed(ids))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return skipped, nil
}

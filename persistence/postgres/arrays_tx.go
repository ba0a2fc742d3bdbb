package postgres

import (
	"context"
	"database/sql"
	"encoding/hex"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// The hot writes of many transactions (MarkSubmittedGroups, MarkMined and
// the callback outbox rows they add) as a fixed number of statements per
// chunk of bulkChunk rows, the rows' values as one array parameter per
// column, instead of statements per row.

var (
	_ sqlstore.SubmitWriter = dialect{}
	_ sqlstore.MinedWriter  = dialect{}
	_ sqlstore.OutboxWriter = dialect{}
)

// bulkChunk is the most rows one bulk statement carries.
const bulkChunk = 5000

// chunked calls fn with the bounds of consecutive chunks of at most
// bulkChunk of n items, in order, until one fails.
func chunked(n int, fn func(lo, hi int) error) error {
	for lo := 0; lo < n; lo += bulkChunk {
		if err := fn(lo, min(lo+bulkChunk, n)); err != nil {
			return err
		}
	}
	return nil
}

// tsArray encodes times as a timestamptz[] parameter (tsText).
func tsArray(ts []time.Time) pq.StringArray {
	out := make(pq.StringArray, len(ts))
	for i, t := range ts {
		out[i] = tsText(t)
	}
	return out
}

// markSubmittedStatement marks many rows submitted in one statement: the
// UPDATE moves the rows still new to submitted, the INSERT records each
// version in tx_attempts from the updated rows (as insertAttempt reads
// them), and the ids updated are returned. Its last placeholders are the
// condition on t.status.
const markSubmittedStatement = `WITH v AS (
		SELECT * FROM unnest(?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::timestamptz[],
			?::text[], ?::bigint[]) AS v(id, nonce, gas_limit, hash, raw_hex, submitted, node, epoch)
	), u AS (
		UPDATE transactions t SET status = ?, nonce = v.nonce, gas_limit = v.gas_limit, hash = v.hash,
			raw_tx = decode(v.raw_hex, 'hex'), submitted = v.submitted, error = NULL
		FROM v WHERE t.id = v.id AND %s
		RETURNING t.id, t.network, t.account_id, t.nonce
	), a AS (
		INSERT INTO tx_attempts (network, hash, tx_id, account_id, nonce, node, epoch, created)
		SELECT u.network, v.hash, u.id, u.account_id, u.nonce, v.node, v.epoch, v.submitted
		FROM u JOIN v ON v.id = u.id
		ON CONFLICT DO NOTHING
	)
	SELECT id FROM u`

// MarkSubmitted implements sqlstore.SubmitWriter: markSubmittedStatement
// per chunk.
func (dialect) MarkSubmitted(ctx context.Context, tx sqlstore.Conn, rows []sqlstore.SubmitRow, from sqlstore.Chunk) (bool, error) {
	for lo := 0; lo < len(rows); lo += bulkChunk {
		if all, err := markSubmittedChunk(ctx, tx, rows[lo:min(lo+bulkChunk, len(rows))], from); !all || err != nil {
			return false, err
		}
	}
	return true, nil
}

// markSubmittedChunk runs markSubmittedStatement on chunk and reports
// whether it updated every row. A constraint that refuses a row (class
// 23) is not an error here: which row, row by row tells.
func markSubmittedChunk(ctx context.Context, tx sqlstore.Conn, chunk []sqlstore.SubmitRow, from sqlstore.Chunk) (bool, error) {
	var (
		ids, hashes, nodes pq.StringArray
		nonces, epochs     pq.Int64Array
		gasLimits          = make([]sql.Null[int64], 0, len(chunk))
		raws               = make([]sql.Null[string], 0, len(chunk))
		submitted          = make([]time.Time, 0, len(chunk))
	)
	for _, r := range chunk {
		ids, hashes, nodes = append(ids, r.ID), append(hashes, r.Hash), append(nodes, r.Node)
		nonces, epochs = append(nonces, r.Nonce), append(epochs, r.Epoch)
		gasLimits = append(gasLimits, sql.Null[int64]{V: r.GasLimit.Int64, Valid: r.GasLimit.Valid})
		raws = append(raws, sql.Null[string]{V: hex.EncodeToString(r.RawTx), Valid: r.RawTx != nil})
		submitted = append(submitted, r.Submitted)
	}
	var updated []string
	err := tx.Select(ctx, &updated, strings.Replace(markSubmittedStatement, "%s", from.Cond, 1),
		append([]any{ids, nonces, pq.GenericArray{A: gasLimits}, hashes, pq.GenericArray{A: raws}, tsArray(submitted),
			nodes, epochs, string(engine.StatusSubmitted)}, from.Args...)...)
	if pe := pq.As(err); pe != nil && pe.Code.Class() == "23" {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return len(updated) == len(chunk), nil
}

// InsertOutbox implements sqlstore.OutboxWriter: one INSERT of arrays per
// chunk, in order (seq follows it). The empty string of an id and the 0 of
// event_seq of a row without event_id are NULL.
func (dialect) InsertOutbox(ctx context.Context, tx sqlstore.Conn, rows []sqlstore.OutboxRow) error {
	return chunked(len(rows), func(lo, hi int) error {
		chunk := rows[lo:hi]
		n := len(chunk)
		ids, txIDs, eventIDs, subIDs, urls := make(pq.StringArray, n), make(pq.StringArray, n),
			make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
		seqs := make(pq.Int64Array, n)
		held := make(pq.BoolArray, n)
		ats := make([]time.Time, n)
		for i, r := range chunk {
			ids[i], txIDs[i], eventIDs[i], subIDs[i], seqs[i], held[i], urls[i], ats[i] =
				r.ID, r.TxID, r.EventID, r.SubscriptionID, r.EventSeq, r.Held, r.URL, r.At
		}
		_, err := tx.Exec(ctx, `INSERT INTO callback_outbox
			(id, tx_id, event_id, subscription_id, event_seq, held, url, status, attempts, next_attempt, last_error, created)
			SELECT v.id, NULLIF(v.tx_id, ''), NULLIF(v.event_id, ''), NULLIF(v.subscription_id, ''),
				CASE WHEN v.event_id = '' THEN NULL ELSE v.event_seq END, v.held, v.url, ?, 0, v.at, '', v.at
			FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::boolean[], ?::text[], ?::timestamptz[])
				WITH ORDINALITY AS v(id, tx_id, event_id, subscription_id, event_seq, held, url, at, ord)
			ORDER BY v.ord`,
			string(engine.CallbackPending), ids, txIDs, eventIDs, subIDs, seqs, held, urls, tsArray(ats))
		return err
	})
}

// markMinedStatement applies outcomes to the rows still submitted, one
// array parameter per column; its last placeholders are the condition on
// t.status.
const markMinedStatement = `UPDATE transactions t
	SET status = v.status, block_number = v.block_number, block_hash = v.block_hash, gas_used = v.gas_used,
		events = v.events, error = v.error, ended = v.ended, hash = COALESCE(v.hash, t.hash)
	FROM unnest(?::text[], ?::text[], ?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::text[],
		?::timestamptz[], ?::text[]) AS v(id, status, block_number, block_hash, gas_used, events, error, ended, hash)
	WHERE t.id = v.id AND %s`

// MarkMined implements sqlstore.MinedWriter: markMinedStatement per chunk.
func (dialect) MarkMined(ctx context.Context, tx sqlstore.Conn, rows []sqlstore.MinedRow, from sqlstore.Chunk) error {
	return chunked(len(rows), func(lo, hi int) error {
		n := hi - lo
		var (
			ids, statuses, blockHashes = make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
			blockNumbers, gasUsed      = make(pq.Int64Array, n), make(pq.Int64Array, n)
			events, errs, hashes       = make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n)
			ended                      = make([]time.Time, n)
		)
		for j, r := range rows[lo:hi] {
			ids[j], statuses[j], blockHashes[j] = r.ID, r.Status, r.BlockHash
			blockNumbers[j], gasUsed[j] = r.BlockNumber, r.GasUsed
			events[j], errs[j], hashes[j] = r.Events, r.Error, r.Hash
			ended[j] = r.Ended
		}
		_, err := tx.Exec(ctx, strings.Replace(markMinedStatement, "%s", from.Cond, 1),
			append([]any{ids, statuses, blockNumbers, blockHashes, gasUsed,
				pq.GenericArray{A: events}, pq.GenericArray{A: errs}, tsArray(ended), pq.GenericArray{A: hashes}}, from.Args...)...)
		return err
	})
}

// InsertDeliveries implements sqlstore.DeliveryWriter: one INSERT of arrays
// per chunk.
func (dialect) InsertDeliveries(ctx context.Context, tx sqlstore.Conn, rows []sqlstore.DeliveryRow) error {
	return chunked(len(rows), func(lo, hi int) error {
		chunk := rows[lo:hi]
		n := len(chunk)
		ids, subs, blockHashes, txHashes, bodies := make(pq.StringArray, n), make(pq.StringArray, n),
			make(pq.StringArray, n), make(pq.StringArray, n), make(pq.StringArray, n)
		seqs, blocks, logIndexes := make(pq.Int64Array, n), make(pq.Int64Array, n), make(pq.Int64Array, n)
		removed := make(pq.BoolArray, n)
		created := make([]time.Time, n)
		for i, r := range chunk {
			ids[i], subs[i], seqs[i], blocks[i], blockHashes[i], txHashes[i] =
				r.ID, r.SubscriptionID, r.Seq, r.BlockNumber, r.BlockHash, r.TxHash
			logIndexes[i], removed[i], bodies[i], created[i] = r.LogIndex, r.Removed, r.Body, r.Created
		}
		_, err := tx.Exec(ctx, `INSERT INTO subscription_events
			(id, subscription_id, seq, block_number, block_hash, tx_hash, log_index, removed, body, created)
			SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::bigint[],
				?::boolean[], ?::text[], ?::timestamptz[])`,
			ids, subs, seqs, blocks, blockHashes, txHashes, logIndexes, removed, bodies, tsArray(created))
		return err
	})
}

package postgres

// TRANSITION: what stage.go's MarkSubmittedGroups still calls until stage.go
// moves to sqlstore (whose submitGroups, with the fences sorted, is its
// body): delete this file then.

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// errRowByRow tells that markSubmittedBulk did not apply every row.
var errRowByRow = errors.New("postgres: redo row by row")

// markSubmitted marks one transaction submitted inside dbtx (sqlstore's).
func (s *Store) markSubmitted(ctx context.Context, dbtx *sqlx.Tx, f engine.Fence, tx *engine.Transaction) error {
	return s.MarkSubmittedIn(ctx, dbtx, f, tx)
}

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
	seen := map[string]bool{}
	for _, g := range groups {
		for _, tx := range g.Txs {
			if tx.Nonce == nil || tx.Hash == nil || tx.Submitted == nil || seen[tx.ID] {
				return nil, false
			}
			seen[tx.ID] = true
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
	return rows, true
}

// markSubmittedBulk marks rows submitted in dbtx with one statement per
// chunk (markSubmittedStatement). It returns errRowByRow (and the caller
// rolls back) unless every row was new and stored.
func markSubmittedBulk(ctx context.Context, dbtx *sqlx.Tx, rows []submitRow) error {
	query := sqlx.Rebind(sqlx.DOLLAR, strings.Replace(markSubmittedStatement, "%s", "t.status = ?", 1))
	return chunked(len(rows), func(lo, hi int) error {
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
		err := dbtx.SelectContext(ctx, &updated, query, ids, nonces, pq.GenericArray{A: gasLimits},
			hashes, pq.GenericArray{A: raws}, tsArray(submitted), nodes, epochs,
			string(engine.StatusSubmitted), string(engine.StatusNew))
		if pe := pq.As(err); pe != nil && pe.Code.Class() == "23" {
			return errRowByRow // a constraint refused a row: which one, row by row tells
		}
		if err != nil {
			name := fmt.Sprintf("%d transactions", len(ids))
			if len(ids) == 1 {
				name = ids[0]
			}
			return wrap(err, "mark %s submitted", name)
		}
		if len(updated) != len(chunk) {
			return errRowByRow
		}
		return nil
	})
}

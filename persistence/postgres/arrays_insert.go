package postgres

import (
	"context"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/txengine/txengine/persistence/internal/sqlrow"
	"github.com/txengine/txengine/persistence/sqlstore"
)

// The insert of transactions (sqlstore.TxInserter). A batch of at most
// maxSingleInsert rows without idempotency records or dependencies (the
// group commits of a busy account) is one prepared INSERT of a JSON
// document, in its own implicit transaction: one round trip in all. Other
// batches stream their rows with COPY in a transaction: one round trip for
// the rows and no bind-parameter limit. Measured against multi-row INSERTs
// of 500 rows (BenchmarkInsertTransactions, batches of 500 ERC-20
// transfers, on the pgtest cluster with fsync off, loopback, 2 CPUs): about
// 11-12 ms per batch (40-47k rows/s) against 23-27 ms (18-21k rows/s), and
// no slower for a batch of one (0.4 ms each). The idempotency records
// (sqlstore.IdempotencyWriter) and the dependencies follow the COPY on the
// same connection and in the same transaction, as INSERTs of arrays.

var _ sqlstore.TxInserter = dialect{}

// maxSingleInsert bounds the batches that InsertTxsAlone writes with
// insertStatement (one round trip) rather than COPY in a transaction (four:
// BEGIN, COPY, end of COPY, COMMIT). PostgreSQL reads JSON more slowly
// than COPY's text, so the round trips saved pay only for small batches.
// BenchmarkInsertTransactionsDurable, 10 interleaved runs on a shared
// 2-core machine: 1 row 751 -> 341 us, 32 rows 1.49 -> 1.37 ms (p=0.17),
// 500 rows 12.3 -> 15.9 ms (+29 %).
const maxSingleInsert = 64

// insertStatement returns the statement that inserts the rows of a JSON
// array of objects keyed by column (rowsJSON) into columns, in array
// order: seq is taken above the sort.
func insertStatement(columns string) string {
	return `INSERT INTO transactions (` + columns + `)
	SELECT ` + columns + `
	FROM json_populate_recordset(NULL::transactions, ?::json) WITH ORDINALITY AS r
	ORDER BY r.ordinality`
}

// The statements of the rows of a batch through a pool (every column) and
// of the others (sqlrow.TxBaseColumns).
var (
	insertPooled = insertStatement(sqlrow.TxColumns)
	insertBase   = insertStatement(sqlrow.TxBaseColumns)
	copyPooled   = `COPY transactions (` + sqlrow.TxColumns + `) FROM STDIN`
	copyBase     = `COPY transactions (` + sqlrow.TxBaseColumns + `) FROM STDIN`
)

// statementOf returns pooled, or base when rows hold only the values of
// sqlrow.TxBaseColumns.
func statementOf(rows [][]any, pooled, base string) string {
	if len(rows) > 0 && len(rows[0]) == sqlrow.TxBaseCount {
		return base
	}
	return pooled
}

// InsertTxsAlone implements sqlstore.TxInserter: insertStatement, prepared
// once on the pool, run on its own (its implicit transaction commits with
// it: BEGIN, COPY, end of COPY and COMMIT are four round trips).
func (dialect) InsertTxsAlone(ctx context.Context, db sqlstore.Conn, rows [][]any) (bool, error) {
	if len(rows) > maxSingleInsert {
		return false, nil
	}
	doc, err := rowsJSON(rows)
	if err != nil {
		return true, err
	}
	stmt, err := db.Prepared(ctx, statementOf(rows, insertPooled, insertBase))
	if err != nil {
		return true, fmt.Errorf("prepare: %w", err)
	}
	_, err = stmt.ExecContext(ctx, doc)
	return true, err
}

// copyPooled and copyBase stream rows into transactions (COPY FROM
// STDIN). COPY processes rows in order, so seq follows the slice.

// InsertTxs implements sqlstore.TxInserter with COPY: lib/pq buffers the
// rows and sends them in 64 KiB messages; the final Exec without arguments
// ends the stream and returns the server's verdict (constraint violations
// surface there).
func (dialect) InsertTxs(ctx context.Context, tx sqlstore.Conn, rows [][]any) (err error) {
	stmt, err := tx.Prepare(ctx, statementOf(rows, copyPooled, copyBase))
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
	_, err = stmt.ExecContext(ctx)
	return err
}

// InsertDependencies implements sqlstore.TxInserter: one INSERT of arrays.
func (dialect) InsertDependencies(ctx context.Context, tx sqlstore.Conn, txIDs, dependsOn []string) error {
	_, err := tx.Exec(ctx, `INSERT INTO tx_dependencies (tx_id, depends_on)
		SELECT * FROM unnest(?::text[], ?::text[]) ON CONFLICT DO NOTHING`,
		pq.StringArray(txIDs), pq.StringArray(dependsOn))
	return err
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
// them, or of their first TxBaseCount) as a JSON array of objects keyed by column, for
// json_populate_recordset: each value is the text PostgreSQL reads for
// the column's type (a BYTEA as \x and hex, a TIMESTAMPTZ in ISO 8601),
// NULL as null.
func rowsJSON(rows [][]any) (string, error) {
	buf := make([]byte, 0, 1024*len(rows))
	buf = append(buf, '[')
	for i, row := range rows {
		if len(row) != len(txColumnNames) && len(row) != sqlrow.TxBaseCount {
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

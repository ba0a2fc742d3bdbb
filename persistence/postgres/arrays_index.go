package postgres

import (
	"context"

	"github.com/lib/pq"

	"github.com/txengine/txengine/persistence/internal/sqlrow"
	"github.com/txengine/txengine/persistence/sqlstore"
)

var _ sqlstore.IndexWriter = dialect{}

// WriteIndex implements sqlstore.IndexWriter: each set is one statement on
// array parameters (unnest).
func (dialect) WriteIndex(ctx context.Context, tx sqlstore.Conn, network string, next int64, rows sqlstore.IndexRows) error {
	if len(rows.Transfers) > 0 {
		var (
			tokens, blockHashes, txHashes, froms, tos, values pq.StringArray
			blockNumbers, logIndexes                          pq.Int64Array
		)
		for _, t := range rows.Transfers {
			tokens, blockNumbers = append(tokens, t.Token), append(blockNumbers, t.BlockNumber)
			blockHashes, txHashes = append(blockHashes, t.BlockHash), append(txHashes, t.TxHash)
			logIndexes, froms = append(logIndexes, t.LogIndex), append(froms, t.From)
			tos, values = append(tos, t.To), append(values, t.Value)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO token_transfers (`+sqlrow.TransferColumns+`)
			SELECT ?::text, * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::text[], ?::bigint[],
				?::text[], ?::text[], ?::numeric[])
			ON CONFLICT (network, tx_hash, log_index) DO NOTHING`,
			network, tokens, blockNumbers, blockHashes, txHashes, logIndexes, froms, tos, values); err != nil {
			return err
		}
	}
	if len(rows.Streams) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO token_index_streams (network, address, next_block)
			SELECT ?::text, a, ?::bigint FROM unnest(?::text[]) AS a
			ON CONFLICT (network, address) DO UPDATE SET next_block = excluded.next_block`,
			network, next, pq.StringArray(rows.Streams)); err != nil {
			return err
		}
	}
	if len(rows.Blocks) > 0 {
		numbers := make(pq.Int64Array, len(rows.Blocks))
		hashes := make(pq.StringArray, len(rows.Blocks))
		for i, b := range rows.Blocks {
			numbers[i], hashes[i] = b.Number, b.Hash
		}
		if _, err := tx.Exec(ctx, `INSERT INTO token_index_blocks (network, number, hash)
			SELECT ?::text, * FROM unnest(?::bigint[], ?::text[])
			ON CONFLICT (network, number) DO UPDATE SET hash = excluded.hash`,
			network, numbers, hashes); err != nil {
			return err
		}
	}
	return nil
}

var _ sqlstore.LatestTransfersQuery = dialect{}

// LatestTransfers implements sqlstore.LatestTransfersQuery: DISTINCT ON
// keeps the first row of each (token, token id) in the order given, its
// latest transfer, from one index scan.
func (dialect) LatestTransfers(in string) string {
	return `SELECT DISTINCT ON (token, value) to_address
		FROM token_transfers WHERE network = ? AND ` + in + `
		ORDER BY token, value, block_number DESC, log_index DESC`
}

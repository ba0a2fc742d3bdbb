package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// IndexStreams returns the next block to read of every indexed contract of
// the network.
func (s *Store) IndexStreams(ctx context.Context, network string) (map[common.Address]uint64, error) {
	var rows []sqlrow.Stream
	if err := s.db.SelectContext(ctx, &rows, `SELECT address, next_block FROM token_index_streams WHERE network = $1`, network); err != nil {
		return nil, wrap(err, "index streams of %s", network)
	}
	out, err := sqlrow.Streams(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: index streams of %s: %w", network, err)
	}
	return out, nil
}

// SaveIndex stores one indexer step in one database transaction: the
// transfers (those stored before are skipped), the streams' next block, the
// block hashes, and the pruning of hashes older than KeepBlocks. Each of
// the three sets is one statement on array parameters, however large the
// batch (a backfill range may hold thousands of transfers).
func (s *Store) SaveIndex(ctx context.Context, b engine.IndexBatch) error {
	next, err := sqlrow.Int64Of("next", b.Next)
	if err != nil {
		return fmt.Errorf("postgres: save index of %s: %w", b.Network, err)
	}
	var (
		tokens, blockHashes, txHashes, froms, tos, values pq.StringArray
		blockNumbers, logIndexes                          pq.Int64Array
	)
	for _, t := range b.Transfers {
		bn, err := sqlrow.Int64Of("blockNumber", t.BlockNumber)
		if err != nil {
			return fmt.Errorf("postgres: save index of %s: %w", b.Network, err)
		}
		li, err := sqlrow.Int64Of("logIndex", uint64(t.LogIndex))
		if err != nil {
			return fmt.Errorf("postgres: save index of %s: %w", b.Network, err)
		}
		value := "0"
		if t.Value != nil {
			value = t.Value.String()
		}
		tokens = append(tokens, sqlrow.Address(t.Token))
		blockNumbers = append(blockNumbers, bn)
		blockHashes = append(blockHashes, t.BlockHash.Hex())
		txHashes = append(txHashes, t.TxHash.Hex())
		logIndexes = append(logIndexes, li)
		froms = append(froms, sqlrow.Address(t.From))
		tos = append(tos, sqlrow.Address(t.To))
		values = append(values, value)
	}
	// An upsert may not touch a row twice in one statement: streams are
	// deduplicated, and of blocks with the same number the last one wins,
	// as it would with one statement per block.
	var streams pq.StringArray
	seen := map[common.Address]bool{}
	for _, a := range b.Streams {
		if !seen[a] {
			seen[a] = true
			streams = append(streams, sqlrow.Address(a))
		}
	}
	var (
		numbers pq.Int64Array
		hashes  pq.StringArray
	)
	pos := map[int64]int{}
	for _, blk := range b.Blocks {
		n, err := sqlrow.Int64Of("number", blk.Number)
		if err != nil {
			return fmt.Errorf("postgres: save index of %s: %w", b.Network, err)
		}
		if i, ok := pos[n]; ok {
			hashes[i] = blk.Hash.Hex()
			continue
		}
		pos[n] = len(numbers)
		numbers = append(numbers, n)
		hashes = append(hashes, blk.Hash.Hex())
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		if len(tokens) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_transfers (`+sqlrow.TransferColumns+`)
				SELECT $1::text, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[],
					$7::text[], $8::text[], $9::numeric[])
				ON CONFLICT (network, tx_hash, log_index) DO NOTHING`,
				b.Network, tokens, blockNumbers, blockHashes, txHashes, logIndexes, froms, tos, values); err != nil {
				return wrap(err, "save %d transfers of %s", len(tokens), b.Network)
			}
		}
		if len(streams) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_index_streams (network, address, next_block)
				SELECT $1::text, a, $3::bigint FROM unnest($2::text[]) AS a
				ON CONFLICT (network, address) DO UPDATE SET next_block = excluded.next_block`,
				b.Network, streams, next); err != nil {
				return wrap(err, "save index streams of %s", b.Network)
			}
		}
		if len(numbers) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_index_blocks (network, number, hash)
				SELECT $1::text, * FROM unnest($2::bigint[], $3::text[])
				ON CONFLICT (network, number) DO UPDATE SET hash = excluded.hash`,
				b.Network, numbers, hashes); err != nil {
				return wrap(err, "save indexed blocks of %s", b.Network)
			}
		}
		if b.KeepBlocks > 0 && b.Next > b.KeepBlocks {
			if _, err := tx.ExecContext(ctx, `DELETE FROM token_index_blocks WHERE network = $1 AND number < $2`,
				b.Network, next-int64(b.KeepBlocks)); err != nil {
				return wrap(err, "prune indexed blocks of %s", b.Network)
			}
		}
		return nil
	})
}

// IndexedBlocks returns up to limit stored block hashes, highest first.
func (s *Store) IndexedBlocks(ctx context.Context, network string, limit int) ([]engine.IndexedBlock, error) {
	var rows []sqlrow.Block
	if err := s.db.SelectContext(ctx, &rows, `SELECT number, hash FROM token_index_blocks WHERE network = $1
		ORDER BY number DESC LIMIT $2`, network, limit); err != nil {
		return nil, wrap(err, "indexed blocks of %s", network)
	}
	out, err := sqlrow.Blocks(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: indexed blocks of %s: %w", network, err)
	}
	return out, nil
}

// RewindIndex forgets blocks fromBlock and later of the network.
func (s *Store) RewindIndex(ctx context.Context, network string, fromBlock uint64) error {
	from, err := sqlrow.Int64Of("fromBlock", fromBlock)
	if err != nil {
		return fmt.Errorf("postgres: rewind index of %s: %w", network, err)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, q := range []string{
			`DELETE FROM token_transfers WHERE network = $1 AND block_number >= $2`,
			`DELETE FROM token_index_blocks WHERE network = $1 AND number >= $2`,
			`UPDATE token_index_streams SET next_block = $2 WHERE network = $1 AND next_block > $2`,
		} {
			if _, err := tx.ExecContext(ctx, q, network, from); err != nil {
				return wrap(err, "rewind index of %s from %d", network, fromBlock)
			}
		}
		return nil
	})
}

// ListTransfers returns up to f.Limit transfers of f.Token matching f,
// newest first, and the cursor of the next page. The position is a row
// comparison on (block_number, log_index), which every index of
// token_transfers a listing may use ends with.
func (s *Store) ListTransfers(ctx context.Context, f engine.TransferFilter) ([]engine.TokenTransfer, *engine.TransferCursor, error) {
	if f.Limit <= 0 {
		return nil, nil, fmt.Errorf("postgres: list transfers: limit must be positive")
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := []string{"network = " + arg(f.Network), "token = " + arg(sqlrow.Address(f.Token))}
	if f.From != nil {
		where = append(where, "from_address = "+arg(sqlrow.Address(*f.From)))
	}
	if f.To != nil {
		where = append(where, "to_address = "+arg(sqlrow.Address(*f.To)))
	}
	if f.Address != nil {
		p := arg(sqlrow.Address(*f.Address))
		where = append(where, "(from_address = "+p+" OR to_address = "+p+")")
	}
	for _, b := range []struct {
		v  *uint64
		op string
	}{{f.FromBlock, ">="}, {f.ToBlock, "<="}} {
		if b.v == nil {
			continue
		}
		n, err := sqlrow.Int64Of("block", *b.v)
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: list transfers: %w", err)
		}
		where = append(where, "block_number "+b.op+" "+arg(n))
	}
	if f.After != nil {
		n, err := sqlrow.Int64Of("cursor block", f.After.BlockNumber)
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: list transfers: %w", err)
		}
		li, err := sqlrow.Int64Of("cursor log index", uint64(f.After.LogIndex))
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: list transfers: %w", err)
		}
		where = append(where, "(block_number, log_index) < ("+arg(n)+", "+arg(li)+")")
	}
	var rows []sqlrow.Transfer
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+sqlrow.TransferColumns+` FROM token_transfers WHERE `+
		strings.Join(where, " AND ")+` ORDER BY block_number DESC, log_index DESC LIMIT `+arg(f.Limit+1), args...); err != nil {
		return nil, nil, wrap(err, "list transfers of %s", f.Token.Hex())
	}
	out, next, err := sqlrow.TransferPage(rows, f.Limit)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: list transfers: %w", err)
	}
	return out, next, nil
}

// NFTOwners returns the recipients of the latest transfer of every token id
// of the contracts, each once, without the zero address, ordered as the
// SQLite store orders them (byte order of the EIP-55 text, whatever the
// database's collation).
func (s *Store) NFTOwners(ctx context.Context, network string, contracts []common.Address) ([]common.Address, error) {
	if len(contracts) == 0 {
		return []common.Address{}, nil
	}
	addrs := make(pq.StringArray, len(contracts))
	for i, c := range contracts {
		addrs[i] = sqlrow.Address(c)
	}
	// DISTINCT ON keeps the first row of each (token, token id) in the
	// order given: its latest transfer.
	var owners []string
	if err := s.db.SelectContext(ctx, &owners, `SELECT DISTINCT to_address COLLATE "C" FROM (
		SELECT DISTINCT ON (token, value) to_address
		FROM token_transfers WHERE network = $1 AND token = ANY($2::text[])
		ORDER BY token, value, block_number DESC, log_index DESC
	) AS latest ORDER BY 1`, network, addrs); err != nil {
		return nil, wrap(err, "NFT owners on %s", network)
	}
	out, err := sqlrow.Owners(owners)
	if err != nil {
		return nil, fmt.Errorf("postgres: NFT owners on %s: %w", network, err)
	}
	return out, nil
}

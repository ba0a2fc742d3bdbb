package sqlstore

import (
	"context"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// The index of Transfer logs (engine.TransferIndexStore): token_transfers,
// the next block of each indexed contract (token_index_streams) and the
// hashes of the blocks read, to detect reorgs (token_index_blocks).

// IndexStreams returns the next block to read of every indexed contract of
// the network.
func (s *Store) IndexStreams(ctx context.Context, network string) (map[common.Address]uint64, error) {
	var rows []sqlrow.Stream
	if err := s.r.Select(ctx, &rows, `SELECT address, next_block FROM token_index_streams WHERE network = ?`, network); err != nil {
		return nil, s.wrap(err, "index streams of %s", network)
	}
	out, err := sqlrow.Streams(rows)
	if err != nil {
		return nil, s.errorf("index streams of %s: %w", network, err)
	}
	return out, nil
}

// IndexRows are the rows of an indexer step (engine.IndexBatch) in the
// columns' encodings: the transfers, the streams' addresses (each once)
// and the blocks (each number once, with the last hash of the batch).
type IndexRows struct {
	Transfers []sqlrow.Transfer
	Streams   []string
	Blocks    []sqlrow.Block
}

// IndexWriter is the optional bulk statements of a Dialect that store the
// rows of an indexer step in tx, one statement per set whatever its size (a
// backfill range may hold thousands of transfers): the transfers (those
// stored before skipped), the streams' next block (next), the blocks'
// hashes (upserted). Without it, the store runs a prepared statement per
// row.
type IndexWriter interface {
	WriteIndex(ctx context.Context, tx Conn, network string, next int64, rows IndexRows) error
}

// indexRows encodes the rows of b.
func indexRows(b engine.IndexBatch) (IndexRows, error) {
	var out IndexRows
	for _, t := range b.Transfers {
		bn, err := sqlrow.Int64Of("blockNumber", t.BlockNumber)
		if err != nil {
			return out, err
		}
		li, err := sqlrow.Int64Of("logIndex", uint64(t.LogIndex))
		if err != nil {
			return out, err
		}
		value := "0"
		if t.Value != nil {
			value = t.Value.String()
		}
		out.Transfers = append(out.Transfers, sqlrow.Transfer{Network: b.Network, Token: sqlrow.Address(t.Token),
			BlockNumber: bn, BlockHash: t.BlockHash.Hex(), TxHash: t.TxHash.Hex(), LogIndex: li,
			From: sqlrow.Address(t.From), To: sqlrow.Address(t.To), Value: value})
	}
	// An upsert may not touch a row twice in one statement: streams are
	// deduplicated, and of blocks with the same number the last one wins,
	// as it does with one statement per block.
	seen := map[common.Address]bool{}
	for _, a := range b.Streams {
		if !seen[a] {
			seen[a] = true
			out.Streams = append(out.Streams, sqlrow.Address(a))
		}
	}
	pos := map[int64]int{}
	for _, blk := range b.Blocks {
		n, err := sqlrow.Int64Of("number", blk.Number)
		if err != nil {
			return out, err
		}
		if i, ok := pos[n]; ok {
			out.Blocks[i].Hash = blk.Hash.Hex()
			continue
		}
		pos[n] = len(out.Blocks)
		out.Blocks = append(out.Blocks, sqlrow.Block{Number: n, Hash: blk.Hash.Hex()})
	}
	return out, nil
}

// SaveIndex stores one indexer step in one database transaction: the
// transfers (those stored before are skipped), the streams' next block, the
// block hashes (IndexWriter, or writeIndex), and the pruning of hashes
// older than KeepBlocks.
func (s *Store) SaveIndex(ctx context.Context, b engine.IndexBatch) error {
	next, err := sqlrow.Int64Of("next", b.Next)
	if err != nil {
		return s.errorf("save index of %s: %w", b.Network, err)
	}
	rows, err := indexRows(b)
	if err != nil {
		return s.errorf("save index of %s: %w", b.Network, err)
	}
	return s.inTx(ctx, func(tx Conn) error {
		if w, ok := s.d.(IndexWriter); ok {
			if err := w.WriteIndex(ctx, tx, b.Network, next, rows); err != nil {
				return s.wrap(err, "save index of %s (%d transfers)", b.Network, len(rows.Transfers))
			}
		} else if err := s.writeIndex(ctx, tx, b.Network, next, rows); err != nil {
			return err
		}
		if b.KeepBlocks > 0 && b.Next > b.KeepBlocks {
			if _, err := tx.Exec(ctx, `DELETE FROM token_index_blocks WHERE network = ? AND number < ?`,
				b.Network, next-int64(b.KeepBlocks)); err != nil {
				return s.wrap(err, "prune indexed blocks of %s", b.Network)
			}
		}
		return nil
	})
}

// writeIndex is the portable IndexWriter: each set with a statement
// prepared once and run per row.
func (s *Store) writeIndex(ctx context.Context, tx Conn, network string, next int64, rows IndexRows) error {
	err := eachRow(ctx, tx, `INSERT INTO token_transfers (`+sqlrow.TransferColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (network, tx_hash, log_index) DO NOTHING`,
		rows.Transfers, func(t sqlrow.Transfer) []any {
			return []any{t.Network, t.Token, t.BlockNumber, t.BlockHash, t.TxHash, t.LogIndex, t.From, t.To, t.Value}
		})
	if err != nil {
		return s.wrap(err, "save %d transfers of %s", len(rows.Transfers), network)
	}
	err = eachRow(ctx, tx, `INSERT INTO token_index_streams (network, address, next_block) VALUES (?, ?, ?)
		ON CONFLICT (network, address) DO UPDATE SET next_block = excluded.next_block`,
		rows.Streams, func(a string) []any { return []any{network, a, next} })
	if err != nil {
		return s.wrap(err, "save index streams of %s", network)
	}
	return s.wrap(putBlocks(ctx, tx, "token_index_blocks", network, rows.Blocks), "save indexed blocks of %s", network)
}

// putBlocks stores block hashes of the network in table (a table of
// (network, number, hash)); a number stored again takes the new hash.
func putBlocks(ctx context.Context, tx Conn, table, network string, blocks []sqlrow.Block) error {
	return eachRow(ctx, tx, `INSERT INTO `+table+` (network, number, hash) VALUES (?, ?, ?)
		ON CONFLICT (network, number) DO UPDATE SET hash = excluded.hash`,
		blocks, func(b sqlrow.Block) []any { return []any{network, b.Number, b.Hash} })
}

// eachRow prepares query in tx and runs it with the arguments of each row
// (nothing when there is none).
func eachRow[R any](ctx context.Context, tx Conn, query string, rows []R, args func(r R) []any) error {
	if len(rows) == 0 {
		return nil
	}
	stmt, err := tx.Prepare(ctx, query)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, args(r)...); err != nil {
			return err
		}
	}
	return nil
}

// IndexedBlocks returns up to limit stored block hashes, highest first.
func (s *Store) IndexedBlocks(ctx context.Context, network string, limit int) ([]engine.IndexedBlock, error) {
	return s.blocks(ctx, "token_index_blocks", "indexed blocks", network, limit)
}

// blocks returns up to limit block hashes of the network stored in table
// (a table of (network, number, hash): what, in errors), highest first.
func (s *Store) blocks(ctx context.Context, table, what, network string, limit int) ([]engine.IndexedBlock, error) {
	var rows []sqlrow.Block
	if err := s.r.Select(ctx, &rows, `SELECT number, hash FROM `+table+` WHERE network = ?
		ORDER BY number DESC LIMIT ?`, network, limit); err != nil {
		return nil, s.wrap(err, "%s of %s", what, network)
	}
	out, err := sqlrow.Blocks(rows)
	if err != nil {
		return nil, s.errorf("%s of %s: %w", what, network, err)
	}
	return out, nil
}

// RewindIndex forgets blocks fromBlock and later of the network.
func (s *Store) RewindIndex(ctx context.Context, network string, fromBlock uint64) error {
	from, err := sqlrow.Int64Of("fromBlock", fromBlock)
	if err != nil {
		return s.errorf("rewind index of %s: %w", network, err)
	}
	return s.inTx(ctx, func(tx Conn) error {
		for _, st := range []struct {
			query string
			args  []any
		}{
			{`DELETE FROM token_transfers WHERE network = ? AND block_number >= ?`, []any{network, from}},
			{`DELETE FROM token_index_blocks WHERE network = ? AND number >= ?`, []any{network, from}},
			{`UPDATE token_index_streams SET next_block = ? WHERE network = ? AND next_block > ?`, []any{from, network, from}},
		} {
			if _, err := tx.Exec(ctx, st.query, st.args...); err != nil {
				return s.wrap(err, "rewind index of %s from %d", network, fromBlock)
			}
		}
		return nil
	})
}

// ListTransfers returns up to f.Limit transfers of f.Token matching f,
// newest first, and the cursor of the next page. The position is a row
// comparison on (block_number, log_index), which every index of
// token_transfers a listing may use ends with (or, on SQLite, with
// block_number), and which both databases read as one index range.
func (s *Store) ListTransfers(ctx context.Context, f engine.TransferFilter) ([]engine.TokenTransfer, *engine.TransferCursor, error) {
	if f.Limit <= 0 {
		return nil, nil, s.errorf("list transfers: limit must be positive")
	}
	where, args, err := transferWhere(f)
	if err != nil {
		return nil, nil, s.errorf("list transfers: %w", err)
	}
	var rows []sqlrow.Transfer
	if err := s.r.Select(ctx, &rows, `SELECT `+sqlrow.TransferColumns+` FROM token_transfers WHERE `+where+`
		ORDER BY block_number DESC, log_index DESC LIMIT ?`, append(args, f.Limit+1)...); err != nil {
		return nil, nil, s.wrap(err, "list transfers of %s", f.Token.Hex())
	}
	out, next, err := sqlrow.TransferPage(rows, f.Limit)
	if err != nil {
		return nil, nil, s.errorf("list transfers: %w", err)
	}
	return out, next, nil
}

// transferWhere is the condition of the transfers that f selects (its
// limit aside), with its arguments.
func transferWhere(f engine.TransferFilter) (string, []any, error) {
	where := []string{"network = ?", "token = ?"}
	args := []any{f.Network, sqlrow.Address(f.Token)}
	if f.From != nil {
		where, args = append(where, "from_address = ?"), append(args, sqlrow.Address(*f.From))
	}
	if f.To != nil {
		where, args = append(where, "to_address = ?"), append(args, sqlrow.Address(*f.To))
	}
	if f.Address != nil {
		a := sqlrow.Address(*f.Address)
		where, args = append(where, "(from_address = ? OR to_address = ?)"), append(args, a, a)
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
			return "", nil, err
		}
		where, args = append(where, "block_number "+b.op+" ?"), append(args, n)
	}
	if f.After != nil {
		n, err := sqlrow.Int64Of("cursor block", f.After.BlockNumber)
		if err != nil {
			return "", nil, err
		}
		li, err := sqlrow.Int64Of("cursor log index", uint64(f.After.LogIndex))
		if err != nil {
			return "", nil, err
		}
		where, args = append(where, "(block_number, log_index) < (?, ?)"), append(args, n, li)
	}
	return strings.Join(where, " AND "), args, nil
}

// LatestTransfersQuery is the optional form of a Dialect for the inner
// query of NFTOwners: the recipient of the latest transfer of each (token,
// token id) among the rows of condition in, a SELECT of to_address whose
// first placeholder is the network. Without it, the store ranks the rows
// with ROW_NUMBER(), which PostgreSQL runs 15-20 % slower than DISTINCT ON
// (100,000 transfers of one contract).
type LatestTransfersQuery interface {
	LatestTransfers(in string) string
}

// NFTOwners returns the recipients of the latest transfer of every token id
// of the contracts, each once, without the zero address, in the byte order
// of their EIP-55 text (sorted here: PostgreSQL's collation may order text
// otherwise).
func (s *Store) NFTOwners(ctx context.Context, network string, contracts []common.Address) ([]common.Address, error) {
	if len(contracts) == 0 {
		return []common.Address{}, nil
	}
	addrs := make([]string, len(contracts))
	for i, c := range contracts {
		addrs[i] = sqlrow.Address(c)
	}
	in, args := s.in("token", addrs)
	latest := `SELECT to_address FROM (
		SELECT to_address, ROW_NUMBER() OVER (PARTITION BY token, value ORDER BY block_number DESC, log_index DESC) AS rn
		FROM token_transfers WHERE network = ? AND ` + in + `
	) AS ranked WHERE rn = 1`
	if q, ok := s.d.(LatestTransfersQuery); ok {
		latest = q.LatestTransfers(in)
	}
	var owners []string
	if err := s.r.Select(ctx, &owners, `SELECT DISTINCT to_address FROM (`+latest+`) AS latest`,
		append([]any{network}, args...)...); err != nil {
		return nil, s.wrap(err, "NFT owners on %s", network)
	}
	slices.Sort(owners)
	out, err := sqlrow.Owners(owners)
	if err != nil {
		return nil, s.errorf("NFT owners on %s: %w", network, err)
	}
	return out, nil
}

package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/internal/sqlrow"
)

// IndexStreams returns the next block to read of every indexed contract of
// the network.
func (s *Store) IndexStreams(ctx context.Context, network string) (map[common.Address]uint64, error) {
	var rows []sqlrow.Stream
	if err := s.r.SelectContext(ctx, &rows, `SELECT address, next_block FROM token_index_streams WHERE network = ?`, network); err != nil {
		return nil, wrap(err, "index streams of %s", network)
	}
	out, err := sqlrow.Streams(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: index streams of %s: %w", network, err)
	}
	return out, nil
}

// SaveIndex stores one indexer step in one database transaction: the
// transfers (those stored before are skipped), the streams' next block, the
// block hashes, and the pruning of hashes older than KeepBlocks.
func (s *Store) SaveIndex(ctx context.Context, b engine.IndexBatch) error {
	next, err := sqlrow.Int64Of("next", b.Next)
	if err != nil {
		return fmt.Errorf("sqlite: save index of %s: %w", b.Network, err)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, t := range b.Transfers {
			bn, err := sqlrow.Int64Of("blockNumber", t.BlockNumber)
			if err != nil {
				return fmt.Errorf("sqlite: save index of %s: %w", b.Network, err)
			}
			value := "0"
			if t.Value != nil {
				value = t.Value.String()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_transfers (`+sqlrow.TransferColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (network, tx_hash, log_index) DO NOTHING`,
				b.Network, sqlrow.Address(t.Token), bn, t.BlockHash.Hex(), t.TxHash.Hex(), int64(t.LogIndex),
				sqlrow.Address(t.From), sqlrow.Address(t.To), value); err != nil {
				return wrap(err, "save transfer %s/%d", t.TxHash.Hex(), t.LogIndex)
			}
		}
		for _, a := range b.Streams {
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_index_streams (network, address, next_block) VALUES (?, ?, ?)
				ON CONFLICT (network, address) DO UPDATE SET next_block = excluded.next_block`,
				b.Network, sqlrow.Address(a), next); err != nil {
				return wrap(err, "save index stream %s", a.Hex())
			}
		}
		for _, blk := range b.Blocks {
			n, err := sqlrow.Int64Of("number", blk.Number)
			if err != nil {
				return fmt.Errorf("sqlite: save index of %s: %w", b.Network, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_index_blocks (network, number, hash) VALUES (?, ?, ?)
				ON CONFLICT (network, number) DO UPDATE SET hash = excluded.hash`, b.Network, n, blk.Hash.Hex()); err != nil {
				return wrap(err, "save indexed block %d", blk.Number)
			}
		}
		if b.KeepBlocks > 0 && b.Next > b.KeepBlocks {
			if _, err := tx.ExecContext(ctx, `DELETE FROM token_index_blocks WHERE network = ? AND number < ?`,
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
	if err := s.r.SelectContext(ctx, &rows, `SELECT number, hash FROM token_index_blocks WHERE network = ?
		ORDER BY number DESC LIMIT ?`, network, limit); err != nil {
		return nil, wrap(err, "indexed blocks of %s", network)
	}
	out, err := sqlrow.Blocks(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: indexed blocks of %s: %w", network, err)
	}
	return out, nil
}

// RewindIndex forgets blocks fromBlock and later of the network.
func (s *Store) RewindIndex(ctx context.Context, network string, fromBlock uint64) error {
	from, err := sqlrow.Int64Of("fromBlock", fromBlock)
	if err != nil {
		return fmt.Errorf("sqlite: rewind index of %s: %w", network, err)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, q := range []string{
			`DELETE FROM token_transfers WHERE network = ? AND block_number >= ?`,
			`DELETE FROM token_index_blocks WHERE network = ? AND number >= ?`,
			`UPDATE token_index_streams SET next_block = ? WHERE network = ? AND next_block > ?`,
		} {
			args := []any{network, from}
			if strings.HasPrefix(q, "UPDATE") {
				args = []any{from, network, from}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return wrap(err, "rewind index of %s from %d", network, fromBlock)
			}
		}
		return nil
	})
}

// ListTransfers returns up to f.Limit transfers of f.Token matching f,
// newest first, and the cursor of the next page.
func (s *Store) ListTransfers(ctx context.Context, f engine.TransferFilter) ([]engine.TokenTransfer, *engine.TransferCursor, error) {
	if f.Limit <= 0 {
		return nil, nil, fmt.Errorf("sqlite: list transfers: limit must be positive")
	}
	where := []string{"network = ?", "token = ?"}
	args := []any{f.Network, sqlrow.Address(f.Token)}
	if f.From != nil {
		where, args = append(where, "from_address = ?"), append(args, sqlrow.Address(*f.From))
	}
	if f.To != nil {
		where, args = append(where, "to_address = ?"), append(args, sqlrow.Address(*f.To))
	}
	if f.Address != nil {
		where, args = append(where, "(from_address = ? OR to_address = ?)"), append(args, sqlrow.Address(*f.Address), sqlrow.Address(*f.Address))
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
			return nil, nil, fmt.Errorf("sqlite: list transfers: %w", err)
		}
		where, args = append(where, "block_number "+b.op+" ?"), append(args, n)
	}
	if f.After != nil {
		n, err := sqlrow.Int64Of("cursor block", f.After.BlockNumber)
		if err != nil {
			return nil, nil, fmt.Errorf("sqlite: list transfers: %w", err)
		}
		where = append(where, "(block_number < ? OR (block_number = ? AND log_index < ?))")
		args = append(args, n, n, int64(f.After.LogIndex))
	}
	args = append(args, f.Limit+1)
	var rows []sqlrow.Transfer
	if err := s.r.SelectContext(ctx, &rows, `SELECT `+sqlrow.TransferColumns+` FROM token_transfers WHERE `+
		strings.Join(where, " AND ")+` ORDER BY block_number DESC, log_index DESC LIMIT ?`, args...); err != nil {
		return nil, nil, wrap(err, "list transfers of %s", f.Token.Hex())
	}
	out, next, err := sqlrow.TransferPage(rows, f.Limit)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: list transfers: %w", err)
	}
	return out, next, nil
}

// NFTOwners returns the recipients of the latest transfer of every token id
// of the contracts, each once, without the zero address.
func (s *Store) NFTOwners(ctx context.Context, network string, contracts []common.Address) ([]common.Address, error) {
	if len(contracts) == 0 {
		return []common.Address{}, nil
	}
	args := []any{network}
	for _, c := range contracts {
		args = append(args, sqlrow.Address(c))
	}
	var owners []string
	q := `SELECT DISTINCT to_address FROM (
		SELECT to_address, ROW_NUMBER() OVER (PARTITION BY token, value ORDER BY block_number DESC, log_index DESC) AS rn
		FROM token_transfers WHERE network = ? AND token IN (?` + strings.Repeat(", ?", len(contracts)-1) + `)
	) WHERE rn = 1 ORDER BY to_address`
	if err := s.r.SelectContext(ctx, &owners, q, args...); err != nil {
		return nil, wrap(err, "NFT owners on %s", network)
	}
	out, err := sqlrow.Owners(owners)
	if err != nil {
		return nil, fmt.Errorf("sqlite: NFT owners on %s: %w", network, err)
	}
	return out, nil
}

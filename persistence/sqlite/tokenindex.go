package sqlite

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
)

// transferRow is a row of token_transfers.
type transferRow struct {
	Network     string `db:"network"`
	Token       string `db:"token"`
	BlockNumber int64  `db:"block_number"`
	BlockHash   string `db:"block_hash"`
	TxHash      string `db:"tx_hash"`
	LogIndex    int64  `db:"log_index"`
	From        string `db:"from_address"`
	To          string `db:"to_address"`
	Value       string `db:"value"`
}

const transferColumns = `network, token, block_number, block_hash, tx_hash, log_index, from_address, to_address, value`

func (r *transferRow) transfer() (engine.TokenTransfer, error) {
	t := engine.TokenTransfer{Network: r.Network, LogIndex: uint(r.LogIndex)}
	var err error
	fail := func(err error) (engine.TokenTransfer, error) {
		return engine.TokenTransfer{}, fmt.Errorf("sqlite: transfer %s/%d: %w", r.TxHash, r.LogIndex, err)
	}
	if t.Token, err = fromAddress("token", r.Token); err != nil {
		return fail(err)
	}
	if t.From, err = fromAddress("from", r.From); err != nil {
		return fail(err)
	}
	if t.To, err = fromAddress("to", r.To); err != nil {
		return fail(err)
	}
	if t.BlockNumber, err = uint64Of("blockNumber", r.BlockNumber); err != nil {
		return fail(err)
	}
	bh, err := hexBytes(r.BlockHash)
	if err != nil {
		return fail(err)
	}
	th, err := hexBytes(r.TxHash)
	if err != nil {
		return fail(err)
	}
	t.BlockHash, t.TxHash = common.BytesToHash(bh), common.BytesToHash(th)
	v, ok := new(big.Int).SetString(r.Value, 10)
	if !ok {
		return fail(fmt.Errorf("value %q is not a decimal number", r.Value))
	}
	t.Value = v
	return t, nil
}

// IndexStreams returns the next block to read of every indexed contract of
// the network.
func (s *Store) IndexStreams(ctx context.Context, network string) (map[common.Address]uint64, error) {
	var rows []struct {
		Address string `db:"address"`
		Next    int64  `db:"next_block"`
	}
	if err := s.r.SelectContext(ctx, &rows, `SELECT address, next_block FROM token_index_streams WHERE network = ?`, network); err != nil {
		return nil, wrap(err, "index streams of %s", network)
	}
	out := make(map[common.Address]uint64, len(rows))
	for _, r := range rows {
		a, err := fromAddress("address", r.Address)
		if err != nil {
			return nil, fmt.Errorf("sqlite: index streams of %s: %w", network, err)
		}
		n, err := uint64Of("next_block", r.Next)
		if err != nil {
			return nil, fmt.Errorf("sqlite: index streams of %s: %w", network, err)
		}
		out[a] = n
	}
	return out, nil
}

// SaveIndex stores one indexer step in one database transaction: the
// transfers (those stored before are skipped), the streams' next block, the
// block hashes, and the pruning of hashes older than KeepBlocks.
func (s *Store) SaveIndex(ctx context.Context, b engine.IndexBatch) error {
	next, err := int64Of("next", b.Next)
	if err != nil {
		return fmt.Errorf("sqlite: save index of %s: %w", b.Network, err)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, t := range b.Transfers {
			bn, err := int64Of("blockNumber", t.BlockNumber)
			if err != nil {
				return fmt.Errorf("sqlite: save index of %s: %w", b.Network, err)
			}
			value := "0"
			if t.Value != nil {
				value = t.Value.String()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_transfers (`+transferColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (network, tx_hash, log_index) DO NOTHING`,
				b.Network, address(t.Token), bn, t.BlockHash.Hex(), t.TxHash.Hex(), int64(t.LogIndex),
				address(t.From), address(t.To), value); err != nil {
				return wrap(err, "save transfer %s/%d", t.TxHash.Hex(), t.LogIndex)
			}
		}
		for _, a := range b.Streams {
			if _, err := tx.ExecContext(ctx, `INSERT INTO token_index_streams (network, address, next_block) VALUES (?, ?, ?)
				ON CONFLICT (network, address) DO UPDATE SET next_block = excluded.next_block`,
				b.Network, address(a), next); err != nil {
				return wrap(err, "save index stream %s", a.Hex())
			}
		}
		for _, blk := range b.Blocks {
			n, err := int64Of("number", blk.Number)
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
	var rows []struct {
		Number int64  `db:"number"`
		Hash   string `db:"hash"`
	}
	if err := s.r.SelectContext(ctx, &rows, `SELECT number, hash FROM token_index_blocks WHERE network = ?
		ORDER BY number DESC LIMIT ?`, network, limit); err != nil {
		return nil, wrap(err, "indexed blocks of %s", network)
	}
	out := make([]engine.IndexedBlock, 0, len(rows))
	for _, r := range rows {
		n, err := uint64Of("number", r.Number)
		if err != nil {
			return nil, fmt.Errorf("sqlite: indexed blocks of %s: %w", network, err)
		}
		h, err := hexBytes(r.Hash)
		if err != nil {
			return nil, fmt.Errorf("sqlite: indexed block %d of %s: %w", n, network, err)
		}
		out = append(out, engine.IndexedBlock{Number: n, Hash: common.BytesToHash(h)})
	}
	return out, nil
}

// RewindIndex forgets blocks fromBlock and later of the network.
func (s *Store) RewindIndex(ctx context.Context, network string, fromBlock uint64) error {
	from, err := int64Of("fromBlock", fromBlock)
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
	args := []any{f.Network, address(f.Token)}
	if f.From != nil {
		where, args = append(where, "from_address = ?"), append(args, address(*f.From))
	}
	if f.To != nil {
		where, args = append(where, "to_address = ?"), append(args, address(*f.To))
	}
	if f.Address != nil {
		where, args = append(where, "(from_address = ? OR to_address = ?)"), append(args, address(*f.Address), address(*f.Address))
	}
	for _, b := range []struct {
		v  *uint64
		op string
	}{{f.FromBlock, ">="}, {f.ToBlock, "<="}} {
		if b.v == nil {
			continue
		}
		n, err := int64Of("block", *b.v)
		if err != nil {
			return nil, nil, fmt.Errorf("sqlite: list transfers: %w", err)
		}
		where, args = append(where, "block_number "+b.op+" ?"), append(args, n)
	}
	if f.After != nil {
		n, err := int64Of("cursor block", f.After.BlockNumber)
		if err != nil {
			return nil, nil, fmt.Errorf("sqlite: list transfers: %w", err)
		}
		where = append(where, "(block_number < ? OR (block_number = ? AND log_index < ?))")
		args = append(args, n, n, int64(f.After.LogIndex))
	}
	args = append(args, f.Limit+1)
	var rows []transferRow
	if err := s.r.SelectContext(ctx, &rows, `SELECT `+transferColumns+` FROM token_transfers WHERE `+
		strings.Join(where, " AND ")+` ORDER BY block_number DESC, log_index DESC LIMIT ?`, args...); err != nil {
		return nil, nil, wrap(err, "list transfers of %s", f.Token.Hex())
	}
	more := len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	out := make([]engine.TokenTransfer, 0, len(rows))
	for i := range rows {
		t, err := rows[i].transfer()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, t)
	}
	if !more {
		return out, nil, nil
	}
	last := out[len(out)-1]
	return out, &engine.TransferCursor{BlockNumber: last.BlockNumber, LogIndex: last.LogIndex}, nil
}

// NFTOwners returns the recipients of the latest transfer of every token id
// of the contracts, each once, without the zero address.
func (s *Store) NFTOwners(ctx context.Context, network string, contracts []common.Address) ([]common.Address, error) {
	if len(contracts) == 0 {
		return []common.Address{}, nil
	}
	args := []any{network}
	for _, c := range contracts {
		args = append(args, address(c))
	}
	var owners []string
	q := `SELECT DISTINCT to_address FROM (
		SELECT to_address, ROW_NUMBER() OVER (PARTITION BY token, value ORDER BY block_number DESC, log_index DESC) AS rn
		FROM token_transfers WHERE network = ? AND token IN (?` + strings.Repeat(", ?", len(contracts)-1) + `)
	) WHERE rn = 1 ORDER BY to_address`
	if err := s.r.SelectContext(ctx, &owners, q, args...); err != nil {
		return nil, wrap(err, "NFT owners on %s", network)
	}
	out := make([]common.Address, 0, len(owners))
	for _, o := range owners {
		a, err := fromAddress("owner", o)
		if err != nil {
			return nil, fmt.Errorf("sqlite: NFT owners on %s: %w", network, err)
		}
		if a != (common.Address{}) {
			out = append(out, a)
		}
	}
	return out, nil
}

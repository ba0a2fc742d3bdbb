package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"slices"
	"sort"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine/internal/chaintest"
)

// memIndexStore is an in-memory IndexerStore.
type memIndexStore struct {
	contracts []*Contract
	streams   map[common.Address]uint64
	transfers map[string]TokenTransfer
	blocks    map[uint64]common.Hash
}

func newMemIndexStore() *memIndexStore {
	return &memIndexStore{streams: map[common.Address]uint64{}, transfers: map[string]TokenTransfer{}, blocks: map[uint64]common.Hash{}}
}

func (s *memIndexStore) ListContracts(_ context.Context, f ContractFilter) ([]*Contract, error) {
	var out []*Contract
	for _, c := range s.contracts {
		if c.Network == f.Network && slices.Contains(f.Types, c.BWType) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *memIndexStore) IndexStreams(context.Context, string) (map[common.Address]uint64, error) {
	return maps(s.streams), nil
}

func maps(m map[common.Address]uint64) map[common.Address]uint64 {
	out := map[common.Address]uint64{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *memIndexStore) SaveIndex(_ context.Context, b IndexBatch) error {
	for _, t := range b.Transfers {
		key := fmt.Sprintf("%s/%d", t.TxHash.Hex(), t.LogIndex)
		if _, ok := s.transfers[key]; !ok {
			s.transfers[key] = t
		}
	}
	for _, a := range b.Streams {
		s.streams[a] = b.Next
	}
	for _, blk := range b.Blocks {
		s.blocks[blk.Number] = blk.Hash
	}
	return nil
}

func (s *memIndexStore) IndexedBlocks(_ context.Context, _ string, limit int) ([]IndexedBlock, error) {
	var out []IndexedBlock
	for n, h := range s.blocks {
		out = append(out, IndexedBlock{Number: n, Hash: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (s *memIndexStore) RewindIndex(_ context.Context, _ string, from uint64) error {
	for k, t := range s.transfers {
		if t.BlockNumber >= from {
			delete(s.transfers, k)
		}
	}
	for n := range s.blocks {
		if n >= from {
			delete(s.blocks, n)
		}
	}
	for a, n := range s.streams {
		if n > from {
			s.streams[a] = from
		}
	}
	return nil
}

func (s *memIndexStore) ListTransfers(context.Context, TransferFilter) ([]TokenTransfer, *TransferCursor, error) {
	return nil, nil, nil
}

func (s *memIndexStore) NFTOwners(context.Context, string, []common.Address) ([]common.Address, error) {
	return nil, nil
}

// values returns the indexed values of token, by block then log index.
func (s *memIndexStore) values(token common.Address) []string {
	var ts []TokenTransfer
	for _, t := range s.transfers {
		if t.Token == token {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].BlockNumber != ts[j].BlockNumber {
			return ts[i].BlockNumber < ts[j].BlockNumber
		}
		return ts[i].LogIndex < ts[j].LogIndex
	})
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%d:%s", t.BlockNumber, t.Value)
	}
	return out
}

func pollAll(t *testing.T, ix *Indexer) IndexResult {
	t.Helper()
	for i := 0; i < 100; i++ {
		res, err := ix.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !res.More {
			return res
		}
	}
	t.Fatal("indexer never caught up")
	return IndexResult{}
}

func TestIndexerBackfillFollowAndReorg(t *testing.T) {
	tokA, tokB, nft := common.HexToAddress("0xA"), common.HexToAddress("0xB"), common.HexToAddress("0xC")
	x, y := common.HexToAddress("0x1111"), common.HexToAddress("0x2222")
	chain := chaintest.New(30)
	chain.Transfer(3, tokA, x, y, 1)  // before A's registration: not indexed
	chain.Transfer(5, tokA, x, y, 2)  // A registered at 5
	chain.Transfer(7, tokB, y, x, 10) // B registered at 20: not indexed yet
	chain.Transfer(21, tokB, y, x, 11)
	chain.Transfer(22, tokA, y, x, 3)
	chain.Transfer(22, tokA, x, y, 4)
	chain.Transfer(2, nft, common.Address{}, x, 1)
	store := newMemIndexStore()
	store.contracts = []*Contract{
		{ID: "a", Network: "dev", Address: tokA, BWType: TypeERC20, Block: 5},
		{ID: "a2", Network: "dev", Address: tokA, BWType: TypeERC20, Block: 9}, // same token, another user
		{ID: "b", Network: "dev", Address: tokB, BWType: TypeERC20Security, Block: 20},
		{ID: "n", Network: "dev", Address: common.HexToAddress("0xD"), BWType: TypeERC721, Block: 0},
	}
	net := &Network{Name: "dev", SystemNFTs: []common.Address{nft}}
	ix := NewIndexer(net, chain, store, IndexerConfig{Range: 4, MaxCalls: 3}, slog.New(slog.NewTextHandler(io.Discard, nil)))

	res, err := ix.Poll(context.Background())
	if err != nil || !res.More || res.Head != 29 {
		t.Fatalf("first poll: %+v, %v", res, err)
	}
	pollAll(t, ix)
	if got := store.values(tokA); !slices.Equal(got, []string{"5:2", "22:3", "22:4"}) {
		t.Errorf("token A: %v", got)
	}
	if got := store.values(tokB); !slices.Equal(got, []string{"21:11"}) {
		t.Errorf("token B: %v", got)
	}
	if got := store.values(nft); !slices.Equal(got, []string{"2:1"}) {
		t.Errorf("NFT: %v", got)
	}
	if _, ok := store.streams[common.HexToAddress("0xD")]; ok {
		t.Error("an erc721 contract that is not a System NFT is indexed")
	}
	for _, q := range chain.Calls {
		if n := q.ToBlock.Uint64() - q.FromBlock.Uint64() + 1; n > 4 {
			t.Errorf("a call covers %d blocks", n)
		}
	}
	// Caught up: one call per poll for all streams together.
	chain.Extend(1, 0)
	chain.Transfer(30, tokB, x, y, 12)
	chain.Calls = nil
	pollAll(t, ix)
	if len(chain.Calls) != 1 || len(chain.Calls[0].Addresses) != 3 {
		t.Errorf("follow calls: %+v", chain.Calls)
	}
	if got := store.values(tokB); !slices.Equal(got, []string{"21:11", "30:12"}) {
		t.Errorf("token B after follow: %v", got)
	}

	// Reorg: blocks 22 and later are replaced; the new branch moves A's
	// transfer to block 24 with another value.
	chain.Reorg(22, 32)
	chain.Transfer(24, tokA, y, x, 5)
	res = pollAll(t, ix)
	if got := store.values(tokA); !slices.Equal(got, []string{"5:2", "24:5"}) {
		t.Errorf("token A after reorg: %v", got)
	}
	if got := store.values(tokB); !slices.Equal(got, []string{"21:11"}) {
		t.Errorf("token B after reorg: %v", got)
	}
	// A chain that got shorter (a dev chain back from a hard kill).
	chain.Reorg(23, 23)
	if _, err := ix.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := store.values(tokA); !slices.Equal(got, []string{"5:2"}) {
		t.Errorf("token A after the chain shrank: %v", got)
	}
	for a, n := range store.streams {
		if n != 23 {
			t.Errorf("stream %s next %d, want 23", a.Hex(), n)
		}
	}
}

func TestParseTransferLog(t *testing.T) {
	from, to := common.HexToAddress("0x1"), common.HexToAddress("0x2")
	topics := []common.Hash{TransferTopic, common.BytesToHash(from.Bytes()), common.BytesToHash(to.Bytes())}
	erc20 := &types.Log{Topics: topics, Data: common.LeftPadBytes([]byte{7}, 32)}
	if tr, ok := ParseTransferLog("dev", erc20); !ok || tr.Value.Int64() != 7 || tr.From != from || tr.To != to {
		t.Errorf("erc20: %+v %v", tr, ok)
	}
	nft := &types.Log{Topics: append(slices.Clone(topics), common.BigToHash(big.NewInt(42)))}
	if tr, ok := ParseTransferLog("dev", nft); !ok || tr.Value.Int64() != 42 {
		t.Errorf("erc721: %+v %v", tr, ok)
	}
	for _, l := range []*types.Log{
		{Topics: topics[:2], Data: erc20.Data},
		{Topics: topics, Data: []byte{1}},
		{Topics: []common.Hash{{1}, topics[1], topics[2]}, Data: erc20.Data},
	} {
		if _, ok := ParseTransferLog("dev", l); ok {
			t.Errorf("parsed %+v", l)
		}
	}
}

func TestFormatUnits(t *testing.T) {
	e18 := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	mul := func(a int64, b *big.Int) *big.Int { return new(big.Int).Mul(big.NewInt(a), b) }
	for _, tt := range []struct {
		v    *big.Int
		dec  uint8
		want string
	}{
		{mul(1_000_000, e18), 18, "1000000"},
		{mul(12345, new(big.Int).Exp(big.NewInt(10), big.NewInt(17), nil)), 18, "1234.5"},
		{big.NewInt(1), 18, "0.000000000000000001"},
		{big.NewInt(0), 18, "0"},
		{big.NewInt(1500), 3, "1.5"},
		{big.NewInt(1000), 3, "1"},
		{big.NewInt(10), 0, "10"},
		{big.NewInt(120), 2, "1.2"},
		{big.NewInt(5), 1, "0.5"},
		{big.NewInt(-25), 1, "-2.5"},
		{nil, 18, "0"},
		{new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)), 18,
			"115792089237316195423570985008687907853269984665640564039457.584007913129639935"},
	} {
		if got := FormatUnits(tt.v, tt.dec); got != tt.want {
			t.Errorf("FormatUnits(%v, %d) = %s, want %s", tt.v, tt.dec, got, tt.want)
		}
	}
}

// TestIndexerReorgBetweenStoredBlocks: a reorg that replaces blocks
// between two stored hashes (a range read at once stores only its blocks
// with logs and its last) is undone from the block after the highest one
// still on the chain, not from the lowest stored one that left it: a
// transfer the new branch has in between is indexed.
func TestIndexerReorgBetweenStoredBlocks(t *testing.T) {
	tok, x, y := common.HexToAddress("0xA"), common.HexToAddress("0x1111"), common.HexToAddress("0x2222")
	chain := chaintest.New(30)
	chain.Transfer(5, tok, x, y, 1)
	store := newMemIndexStore()
	store.contracts = []*Contract{{ID: "a", Network: "dev", Address: tok, BWType: TypeERC20, Block: 0}}
	ix := NewIndexer(&Network{Name: "dev"}, chain, store, IndexerConfig{Range: 100}, slog.New(slog.DiscardHandler))
	pollAll(t, ix)
	chain.Reorg(15, 30)
	chain.Transfer(20, tok, y, x, 2)
	pollAll(t, ix)
	if got := store.values(tok); !slices.Equal(got, []string{"5:1", "20:2"}) {
		t.Fatalf("after a reorg between stored blocks 5 and 29: %v, want [5:1 20:2]", got)
	}
}

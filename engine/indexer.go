package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"slices"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// TransferTopic is topic 0 of Transfer(address,address,uint256), the event
// of ERC-20 (value in the data) and ERC-721 (token id as a fourth topic).
var TransferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

// TokenTransfer is one Transfer log in the service's own index. For an
// ERC-721 contract Value is the token id.
type TokenTransfer struct {
	Network     string
	Token       common.Address
	BlockNumber uint64
	BlockHash   common.Hash
	TxHash      common.Hash
	LogIndex    uint
	From        common.Address
	To          common.Address
	Value       *big.Int
}

// TransferCursor is a position in a newest-first transfer listing: the
// (block number, log index) of the last row of a page.
type TransferCursor struct {
	BlockNumber uint64
	LogIndex    uint
}

// TransferFilter selects indexed transfers of one token, newest first
// (block number, then log index, descending).
type TransferFilter struct {
	Network string
	Token   common.Address
	From    *common.Address
	To      *common.Address
	// Address matches From or To.
	Address *common.Address
	// FromBlock and ToBlock bound the block number, inclusive.
	FromBlock, ToBlock *uint64
	// After continues a listing after this position (exclusive).
	After *TransferCursor
	// Limit bounds the page; it must be positive.
	Limit int
}

// IndexedBlock is the hash of a block the indexer read, kept to detect
// reorgs.
type IndexedBlock struct {
	Number uint64
	Hash   common.Hash
}

// IndexBatch is what one indexer step stores in one database transaction.
type IndexBatch struct {
	Network string
	// Streams are the contracts whose logs were read; their next block
	// becomes Next.
	Streams []common.Address
	Next    uint64
	// Transfers are stored once each: (network, tx hash, log index) is
	// unique, and a transfer stored before is skipped.
	Transfers []TokenTransfer
	// Blocks are the hashes of blocks read (those with logs and the last
	// of the range); hashes below Next-KeepBlocks are pruned.
	Blocks     []IndexedBlock
	KeepBlocks uint64
}

// TransferIndexStore keeps the index of Transfer logs.
type TransferIndexStore interface {
	// IndexStreams returns the next block to read of every indexed
	// contract of the network.
	IndexStreams(ctx context.Context, network string) (map[common.Address]uint64, error)
	// SaveIndex stores b in one database transaction.
	SaveIndex(ctx context.Context, b IndexBatch) error
	// IndexedBlocks returns up to limit stored block hashes of the
	// network, highest first.
	IndexedBlocks(ctx context.Context, network string, limit int) ([]IndexedBlock, error)
	// RewindIndex forgets what was indexed from block fromBlock on, in one
	// database transaction: transfers and block hashes of those blocks are
	// deleted and every stream's next block becomes at most fromBlock.
	RewindIndex(ctx context.Context, network string, fromBlock uint64) error
	// ListTransfers returns up to f.Limit transfers matching f, newest
	// first, and the cursor of the next page (nil when no row follows).
	ListTransfers(ctx context.Context, f TransferFilter) ([]TokenTransfer, *TransferCursor, error)
	// NFTOwners returns the current owners (each once, never the zero
	// address) of every token id of the ERC-721 contracts, as the index
	// knows them: the recipient of each id's latest transfer.
	NFTOwners(ctx context.Context, network string, contracts []common.Address) ([]common.Address, error)
}

// IndexChain is what the indexer needs of a node: headers and eth_getLogs.
// *ethclient.Client (and so evm.Client) implements it.
type IndexChain interface {
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	FilterLogs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error)
}

// IndexerStore is what an Indexer needs of the store.
type IndexerStore interface {
	TransferIndexStore
	ListContracts(ctx context.Context, f ContractFilter) ([]*Contract, error)
}

// IndexerConfig tunes an Indexer; zero fields take the values of
// DefaultIndexerConfig.
type IndexerConfig struct {
	// Range is the most blocks one eth_getLogs call covers (default 2000).
	Range uint64
	// MaxCalls bounds the eth_getLogs calls of one Poll (default 8), so a
	// long backfill does not starve the actor's mailbox.
	MaxCalls int
	// KeepBlocks is how many recent block hashes are kept for reorg
	// detection (default 256); a reorg deeper than that is not undone.
	KeepBlocks uint64
	// MaxAddresses bounds the contracts of one eth_getLogs call (default 200).
	MaxAddresses int
}

// Indexer keeps the index of Transfer logs of one network: every registered
// token (erc20, erc20-security of any user) from its registration block, and
// the network's System NFTs from block 0. Contracts at the same next block
// are read together with one address-list eth_getLogs per range, so a
// caught-up network costs one call per poll. Before reading, the stored
// hash of the highest indexed block is compared with the chain (a hash
// commits to all ancestors); on a mismatch the indexer walks down to the
// highest block still on the chain and rewinds the index above it. It is not
// safe for concurrent use; the indexer actor owns it.
type Indexer struct {
	net   *Network
	chain IndexChain
	store IndexerStore
	cfg   IndexerConfig
	log   *slog.Logger
}

// NewIndexer returns the indexer of net reading through chain.
func NewIndexer(net *Network, chain IndexChain, store IndexerStore, cfg IndexerConfig, log *slog.Logger) *Indexer {
	cfg = cfg.withDefaults()
	return &Indexer{net: net, chain: chain, store: store, cfg: cfg, log: log.With("network", net.Name, "component", "indexer")}
}

// IndexResult tells the actor what a Poll did.
type IndexResult struct {
	Head uint64
	// Rewound is the block the index was rewound to after a reorg, if any.
	Rewound *uint64
	// More is true when blocks remain to be read.
	More bool
}

// Poll checks for a reorg, then reads up to MaxCalls ranges of logs.
func (ix *Indexer) Poll(ctx context.Context) (IndexResult, error) {
	var res IndexResult
	head, err := ix.chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("indexer %s: head: %w", ix.net.Name, err)
	}
	res.Head = head.Number.Uint64()
	if res.Rewound, err = ix.checkReorg(ctx, res.Head); err != nil {
		return res, err
	}
	next, err := ix.streams(ctx)
	if err != nil {
		return res, err
	}
	for calls := 0; ; calls++ {
		group, from := lowestGroup(next, res.Head, ix.cfg.MaxAddresses)
		if group == nil {
			return res, nil
		}
		if calls == ix.cfg.MaxCalls {
			res.More = true
			return res, nil
		}
		to := min(from+ix.cfg.Range-1, res.Head)
		if err := ix.read(ctx, group, from, to); err != nil {
			return res, err
		}
		for _, a := range group {
			next[a] = to + 1
		}
	}
}

// streams returns the next block of every contract to index, adding the
// contracts registered since the last poll at their start block.
func (ix *Indexer) streams(ctx context.Context) (map[common.Address]uint64, error) {
	next, err := ix.store.IndexStreams(ctx, ix.net.Name)
	if err != nil {
		return nil, fmt.Errorf("indexer %s: streams: %w", ix.net.Name, err)
	}
	want := map[common.Address]uint64{}
	for _, nft := range ix.net.SystemNFTs {
		want[nft] = 0
	}
	tokens, err := ix.store.ListContracts(ctx, ContractFilter{Network: ix.net.Name, Types: []string{TypeERC20, TypeERC20Security}})
	if err != nil {
		return nil, fmt.Errorf("indexer %s: tokens: %w", ix.net.Name, err)
	}
	for _, c := range tokens {
		if start, ok := want[c.Address]; !ok || c.Block < start {
			want[c.Address] = c.Block
		}
	}
	for a, start := range want {
		if _, ok := next[a]; !ok {
			next[a] = start
		}
	}
	return next, nil
}

// lowestGroup returns the contracts (at most max) whose next block is the
// lowest one not above head, and that block; nil when all are caught up.
func lowestGroup(next map[common.Address]uint64, head uint64, max int) ([]common.Address, uint64) {
	var low uint64
	found := false
	for _, n := range next {
		if n <= head && (!found || n < low) {
			low, found = n, true
		}
	}
	if !found {
		return nil, 0
	}
	var group []common.Address
	for a, n := range next {
		if n == low {
			group = append(group, a)
		}
	}
	slices.SortFunc(group, func(a, b common.Address) int { return a.Cmp(b) })
	if len(group) > max {
		group = group[:max]
	}
	return group, low
}

// read indexes the Transfer logs of group in blocks from..to.
func (ix *Indexer) read(ctx context.Context, group []common.Address, from, to uint64) error {
	logs, err := ix.chain.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from),
		ToBlock:   new(big.Int).SetUint64(to),
		Addresses: group,
		Topics:    [][]common.Hash{{TransferTopic}},
	})
	if err != nil {
		return fmt.Errorf("indexer %s: logs of blocks %d-%d: %w", ix.net.Name, from, to, err)
	}
	last, err := ix.chain.HeaderByNumber(ctx, new(big.Int).SetUint64(to))
	if err != nil {
		return fmt.Errorf("indexer %s: header %d: %w", ix.net.Name, to, err)
	}
	b := IndexBatch{Network: ix.net.Name, Streams: group, Next: to + 1, KeepBlocks: ix.cfg.KeepBlocks}
	seen := map[uint64]bool{to: true}
	b.Blocks = append(b.Blocks, IndexedBlock{Number: to, Hash: last.Hash()})
	for i := range logs {
		l := &logs[i]
		if l.Removed {
			continue
		}
		t, ok := ParseTransferLog(ix.net.Name, l)
		if !ok {
			continue
		}
		b.Transfers = append(b.Transfers, t)
		if !seen[l.BlockNumber] {
			seen[l.BlockNumber] = true
			b.Blocks = append(b.Blocks, IndexedBlock{Number: l.BlockNumber, Hash: l.BlockHash})
		}
	}
	if err := ix.store.SaveIndex(ctx, b); err != nil {
		return fmt.Errorf("indexer %s: save blocks %d-%d: %w", ix.net.Name, from, to, err)
	}
	return nil
}

// ParseTransferLog decodes an ERC-20 Transfer (two indexed addresses, the
// value as data) or an ERC-721 Transfer (the token id as a third indexed
// topic). Other logs are not transfers.
func ParseTransferLog(network string, l *types.Log) (TokenTransfer, bool) {
	if len(l.Topics) < 3 || l.Topics[0] != TransferTopic {
		return TokenTransfer{}, false
	}
	t := TokenTransfer{
		Network: network, Token: l.Address, BlockNumber: l.BlockNumber, BlockHash: l.BlockHash,
		TxHash: l.TxHash, LogIndex: l.Index,
		From: common.BytesToAddress(l.Topics[1].Bytes()), To: common.BytesToAddress(l.Topics[2].Bytes()),
	}
	switch {
	case len(l.Topics) == 3 && len(l.Data) == 32:
		t.Value = new(big.Int).SetBytes(l.Data)
	case len(l.Topics) == 4 && len(l.Data) == 0:
		t.Value = new(big.Int).SetBytes(l.Topics[3].Bytes())
	default:
		return TokenTransfer{}, false
	}
	return t, true
}

// checkReorg rewinds the index to the ReorgPoint of the stored block
// hashes, if any.
func (ix *Indexer) checkReorg(ctx context.Context, head uint64) (*uint64, error) {
	blocks, err := ix.store.IndexedBlocks(ctx, ix.net.Name, int(ix.cfg.KeepBlocks))
	if err != nil {
		return nil, fmt.Errorf("indexer %s: indexed blocks: %w", ix.net.Name, err)
	}
	orphan, err := ReorgPoint(ctx, ix.chain, blocks, head)
	if err != nil || orphan == nil {
		if err != nil {
			err = fmt.Errorf("indexer %s: %w", ix.net.Name, err)
		}
		return nil, err
	}
	ix.log.Warn("reorg: rewinding the transfer index", "from_block", *orphan)
	if err := ix.store.RewindIndex(ctx, ix.net.Name, *orphan); err != nil {
		return nil, fmt.Errorf("indexer %s: rewind from %d: %w", ix.net.Name, *orphan, err)
	}
	return orphan, nil
}

package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/txengine/txengine/engine/abicodec"
)

// FollowerStore is what a Follower needs of the store.
type FollowerStore interface {
	Cursor(ctx context.Context, network string) (uint64, bool, error)
	SetCursor(ctx context.Context, network string, block uint64, hash common.Hash) error
	ProcessedHash(ctx context.Context, network string, number uint64) (common.Hash, bool, error)
	SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*Transaction, error)
	MarkMined(ctx context.Context, outcomes []Mined) error
	Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error)
	ContractByID(ctx context.Context, id string) (*Contract, error)
}

// followerChain is what a Follower calls on its network's node: headers
// and the receipts of whole blocks.
type followerChain interface {
	HeaderReader
	// BlockReceipts returns the receipts of every transaction of block
	// number.
	BlockReceipts(ctx context.Context, number uint64) ([]*types.Receipt, error)
}

// chain returns the network's node as the follower uses it.
func (f *Follower) chain() followerChain { return f.net.Chain }

// Follower is the logic of a network watcher: it walks the chain block by
// block from its stored cursor, reads each block's receipts in one call,
// and completes or fails the submitted transactions found there. Before
// walking on, it checks that the blocks it processed are still on the
// chain; when they are not (a reorg, or a dev chain that came back from a
// hard kill at an older head), their transactions go back to submitted.
// It is not safe for concurrent use; the watcher actor owns it.
type Follower struct {
	net   *Network
	store FollowerStore
	clock Clock
	log   *slog.Logger
	// maxBlocks bounds the blocks handled by one Poll, so a long catch-up
	// does not starve the actor's mailbox.
	maxBlocks uint64
	metrics   Metrics
	// badParent is the block that last did not follow the processed one
	// below it (0: none), so that the same one twice waits for a poll.
	badParent uint64
	// unsure is set while rows above the cursor may be marked mined: a
	// block's outcomes are stored (MarkMined) before the cursor moves past
	// it, and a poll that failed (or a process that died) in between leaves
	// them in a block no later poll checks for a reorg. The next poll moves
	// them back first (true at start: the previous process may have died
	// so). Only a failure after MarkMined sets it: the move back reads the
	// network's mined rows, not to be done at every rate-limited poll.
	unsure bool
}

// NewFollower returns the follower of net.
func NewFollower(net *Network, store FollowerStore, clock Clock, log *slog.Logger) *Follower {
	return &Follower{net: net, store: store, clock: clock, log: log.With("network", net.Name), maxBlocks: 64, metrics: NopMetrics{}, unsure: true}
}

// SetMetrics makes the follower report heads, reorgs and the outcomes of
// mined transactions to m (NopMetrics when nil).
func (f *Follower) SetMetrics(m Metrics) {
	if m == nil {
		m = NopMetrics{}
	}
	f.metrics = m
}

// PollResult tells the watcher what a Poll did.
type PollResult struct {
	// Head is the chain's latest block number.
	Head uint64
	// Accounts are the ids of accounts whose transactions were mined
	// (their actors should pump: the in-flight window has room).
	Accounts []string
	// Settled are the ids of the transactions that turned completed or
	// failed: their dependents must be resolved.
	Settled []string
	// Reorged are the ids of accounts whose mined transactions left the
	// chain: their actors must broadcast their signed transactions again.
	Reorged []string
	// Depth is how many processed blocks left the chain (0: none).
	Depth uint64
	// More is true when blocks remain to be handled.
	More bool
}

// Poll handles the blocks between the stored cursor and the head minus the
// confirmation depth.
func (f *Follower) Poll(ctx context.Context) (PollResult, error) {
	var res PollResult
	head, err := f.chain().HeaderByNumber(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("head: %w", err)
	}
	res.Head = head.Number.Uint64()
	f.net.ObserveHead(res.Head)
	f.metrics.Head(f.net.Name, res.Head, time.Unix(int64(head.Time), 0))
	cursor, ok, err := f.store.Cursor(ctx, f.net.Name)
	if err != nil {
		return res, err
	}
	if !ok {
		// First run on this network: nothing of ours can be in older blocks.
		return res, f.store.SetCursor(ctx, f.net.Name, res.Head, head.Hash())
	}
	if cursor, err = f.checkCursor(ctx, cursor, res.Head, &res); err != nil {
		return res, err
	}
	if err := f.settleAbove(ctx, cursor, &res); err != nil {
		return res, err
	}
	if res.Head < f.net.Confirmations {
		return res, nil
	}
	last := res.Head - f.net.Confirmations
	if last > cursor+f.maxBlocks {
		last, res.More = cursor+f.maxBlocks, true
	}
	accounts := map[string]bool{}
	abis := map[string]*abi.ABI{}
	// prev is the hash of the block at the cursor: read once, then the hash
	// of each block handled here.
	prev, known, err := f.store.ProcessedHash(ctx, f.net.Name, cursor)
	if err != nil {
		return res, err
	}
	for n := cursor + 1; n <= last; n++ {
		header, err := f.chain().HeaderByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			return res, fmt.Errorf("header %d: %w", n, err)
		}
		if known && header.ParentHash != prev {
			// The chain changed under us since the check: look again at
			// once. When the same block fails again, the node serves a
			// block that does not follow the one below it (Hardhat after
			// evm_revert): wait for the next poll rather than asking for
			// the same headers in a loop.
			if f.badParent != n {
				f.badParent = n
				res.More = true
				break
			}
			f.log.Warn("block does not follow the processed block below it; looking again at the next poll",
				"block", n, "parent", header.ParentHash, "processed", prev)
			break
		}
		f.badParent = 0
		touched, settled, err := f.block(ctx, header, abis)
		if err != nil {
			return res, fmt.Errorf("block %d: %w", n, err)
		}
		res.Settled = append(res.Settled, settled...)
		for _, a := range touched {
			accounts[a] = true
		}
		prev, known = header.Hash(), true
		if err := f.store.SetCursor(ctx, f.net.Name, n, prev); err != nil {
			return res, err
		}
		f.unsure = false
		f.net.ObserveProcessed(n)
	}
	for a := range accounts {
		res.Accounts = append(res.Accounts, a)
	}
	return res, nil
}

// settleAbove moves back to submitted, when the follower is unsure, the
// rows marked mined above the cursor: they go through the walk again, in
// the blocks the chain has now.
func (f *Follower) settleAbove(ctx context.Context, cursor uint64, res *PollResult) error {
	if !f.unsure {
		return nil
	}
	ids, err := f.store.Unmine(ctx, f.net.Name, cursor+1)
	if err != nil {
		return fmt.Errorf("unmine above cursor %d: %w", cursor, err)
	}
	f.unsure = false
	if len(ids) > 0 {
		f.log.Warn("transactions marked mined above the cursor by an interrupted poll are pending again", "cursor", cursor, "accounts", len(ids))
		res.Reorged = append(res.Reorged, ids...)
	}
	return nil
}

// checkCursor makes sure the processed blocks up to cursor are still on
// the chain. When some are not, it finds the newest processed block that
// still is (the fork point), moves the transactions of the blocks above it
// back to submitted and returns the fork point as the new cursor.
func (f *Follower) checkCursor(ctx context.Context, cursor, head uint64, res *PollResult) (uint64, error) {
	fork := cursor
	for fork > 0 && cursor-fork < ProcessedRetention {
		stored, ok, err := f.store.ProcessedHash(ctx, f.net.Name, fork)
		if err != nil {
			return cursor, err
		}
		if !ok {
			break // older than what we remember: assume it is settled
		}
		if fork <= head {
			h, err := f.chain().HeaderByNumber(ctx, new(big.Int).SetUint64(fork))
			if err != nil {
				return cursor, fmt.Errorf("header %d: %w", fork, err)
			}
			if h.Hash() == stored {
				break
			}
		}
		fork--
	}
	if fork == cursor {
		return cursor, nil
	}
	ids, err := f.store.Unmine(ctx, f.net.Name, fork+1)
	if err != nil {
		return cursor, fmt.Errorf("unmine from %d: %w", fork+1, err)
	}
	hash, known, err := f.store.ProcessedHash(ctx, f.net.Name, fork)
	if err != nil {
		return cursor, err
	}
	if !known {
		// Older than what we remember (the watcher started above it):
		// taken as settled, with the chain's hash of it. A zero hash here
		// would make no block follow it, and the watcher stop for good.
		h, err := f.chain().HeaderByNumber(ctx, new(big.Int).SetUint64(fork))
		if err != nil {
			return cursor, fmt.Errorf("header %d: %w", fork, err)
		}
		hash = h.Hash()
	}
	if err := f.store.SetCursor(ctx, f.net.Name, fork, hash); err != nil {
		return cursor, err
	}
	res.Depth = cursor - fork
	res.Reorged = ids
	f.metrics.Reorg(f.net.Name, res.Depth)
	f.log.Warn("processed blocks left the chain; their transactions are pending again",
		"cursor", cursor, "head", head, "fork", fork, "depth", res.Depth, "accounts", len(ids))
	return fork, nil
}

// block completes the transactions of the block of header and returns
// their accounts and ids.
func (f *Follower) block(ctx context.Context, header *types.Header, abis map[string]*abi.ABI) ([]string, []string, error) {
	receipts, err := f.chain().BlockReceipts(ctx, header.Number.Uint64())
	if err != nil {
		return nil, nil, fmt.Errorf("receipts: %w", err)
	}
	if len(receipts) == 0 {
		return nil, nil, nil
	}
	if receipts[0].BlockHash != header.Hash() {
		return nil, nil, fmt.Errorf("receipts of block %d changed while reading (reorg)", header.Number.Uint64())
	}
	hashes := make([]common.Hash, len(receipts))
	byHash := make(map[common.Hash]*types.Receipt, len(receipts))
	for i, r := range receipts {
		hashes[i] = r.TxHash
		byHash[r.TxHash] = r
	}
	txs, err := f.store.SubmittedByHash(ctx, f.net.Name, hashes)
	if err != nil {
		return nil, nil, err
	}
	if len(txs) == 0 {
		return nil, nil, nil
	}
	now := f.clock.Now()
	outcomes := make([]Mined, 0, len(txs))
	accounts := make([]string, 0, len(txs))
	ids := make([]string, 0, len(txs))
	for _, tx := range txs {
		m := minedOutcome(ctx, f.store, tx, byHash[*tx.Hash], abis, now)
		if m.Status == StatusFailed && m.Error.Code != TxReverted {
			f.log.Info("a filler took the nonce of a failing transaction", "tx", tx.ID, "code", m.Error.Code)
		}
		outcomes = append(outcomes, m)
		accounts = append(accounts, tx.AccountID)
		ids = append(ids, tx.ID)
	}
	// Until the cursor is past this block, its rows may be marked mined
	// in a block no later poll checks (see unsure).
	f.unsure = true
	if err := f.store.MarkMined(ctx, outcomes); err != nil {
		return nil, nil, err
	}
	for i, m := range outcomes {
		if m.Status == StatusCompleted {
			f.metrics.TxCompleted(MetricAccount{ID: txs[i].AccountID, Address: txs[i].From}, f.net.Name, m.Ended.Sub(txs[i].Created))
		} else {
			f.metrics.TxFailed(MetricAccount{ID: txs[i].AccountID, Address: txs[i].From}, f.net.Name, m.Error.Code)
		}
	}
	return accounts, ids, nil
}

// isFillerOf reports whether r (a filler's receipt: IsFillerReceipt) is
// that of one of tx's fillers (0-value transfers of the account to itself).
// When tx's own call carries call data, none of its versions but a filler
// uses only the intrinsic gas without logs, so r is a filler's whichever
// one was mined: an older filler, replaced by one the node refused, may be
// the one the chain takes. Otherwise r must be the filler stored as tx's
// newest version (RawTx).
func isFillerOf(tx *Transaction, r *types.Receipt) bool {
	if len(tx.Data) > 0 {
		return true
	}
	var stored types.Transaction
	if len(tx.RawTx) == 0 || stored.UnmarshalBinary(tx.RawTx) != nil {
		return false
	}
	if stored.Hash() != r.TxHash || stored.To() == nil {
		return false
	}
	from, err := types.Sender(types.LatestSignerForChainID(stored.ChainId()), &stored)
	return err == nil && IsFiller(&stored, from)
}

// contractReader reads contracts, for their ABIs.
type contractReader interface {
	ContractByID(ctx context.Context, id string) (*Contract, error)
}

// minedOutcome is the outcome of tx (submitted; Hash is the mined version)
// from its receipt r: completed with its decoded events, failed reverted,
// or, when the mined version is a filler of a transaction that was to fail
// (abandoned, refused by the node), failed with its noted error.
func minedOutcome(ctx context.Context, store contractReader, tx *Transaction, r *types.Receipt, abis map[string]*abi.ABI, now time.Time) Mined {
	m := Mined{
		ID: tx.ID, Hash: r.TxHash, BlockNumber: r.BlockNumber.Uint64(), BlockHash: r.BlockHash,
		GasUsed: r.GasUsed, Ended: now, Events: []Event{},
	}
	switch {
	case IsFillerReceipt(r) && isFillerOf(tx, r):
		// The version mined is the filler that took the nonce.
		m.Status, m.Error = StatusFailed, tx.Error
		if m.Error == nil { // noted before a reorg that cleared it
			m.Error = &TxError{Code: TxInvalid, Message: "the transaction's nonce was filled by a 0-value transfer of the account to itself"}
		}
	case r.Status == types.ReceiptStatusSuccessful:
		m.Status = StatusCompleted
		m.Events = decodeEvents(ctx, store, tx, r, abis)
	default:
		m.Status = StatusFailed
		m.Error = &TxError{Code: TxReverted, Message: "execution reverted on chain"}
	}
	return m
}

// decodeEvents turns the receipt's logs into events with the ABI of the
// transaction's contract (or the transaction's own ABI when it has no
// contract id); logs it cannot decode are left out.
func decodeEvents(ctx context.Context, store contractReader, tx *Transaction, r *types.Receipt, abis map[string]*abi.ABI) []Event {
	events := []Event{}
	if tx.ContractID == "" {
		// A direct send: the transaction carries its own ABI.
		a, err := abicodec.ParseABI(tx.ABI)
		if err != nil {
			return events
		}
		for _, l := range r.Logs {
			if ev, ok := DecodeLog(a, l); ok {
				events = append(events, ev)
			}
		}
		return events
	}
	a, ok := abis[tx.ContractID]
	if !ok {
		if c, err := store.ContractByID(ctx, tx.ContractID); err == nil {
			if parsed, err := abicodec.ParseABI(c.ABI); err == nil {
				a = parsed
			}
		}
		abis[tx.ContractID] = a
	}
	if a == nil {
		return events
	}
	for _, l := range r.Logs {
		if ev, ok := DecodeLog(a, l); ok {
			events = append(events, ev)
		}
	}
	return events
}

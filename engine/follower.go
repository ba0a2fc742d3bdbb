package engine

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// FollowerStore is what a Follower needs of the store.
type FollowerStore interface {
	Cursor(ctx context.Context, network string) (uint64, bool, error)
	SetCursor(ctx context.Context, network string, block uint64) error
	SubmittedByHash(ctx context.Context, network string, hashes []common.Hash) ([]*Transaction, error)
	MarkMined(ctx context.Context, outcomes []Mined) error
	Unmine(ctx context.Context, network string, fromBlock uint64) ([]string, error)
	ContractByID(ctx context.Context, id string) (*Contract, error)
}

// Follower is the logic of a network watcher: it walks the chain block by
// block from its stored cursor, reads each block's receipts in one call,
// and completes or fails the submitted transactions found there. It is not
// safe for concurrent use; the watcher actor owns it.
type Follower struct {
	net   *Network
	store FollowerStore
	clock Clock
	log   *slog.Logger
	// maxBlocks bounds the blocks handled by one Poll, so a long catch-up
	// does not starve the actor's mailbox.
	maxBlocks uint64
}

// NewFollower returns the follower of net.
func NewFollower(net *Network, store FollowerStore, clock Clock, log *slog.Logger) *Follower {
	return &Follower{net: net, store: store, clock: clock, log: log.With("network", net.Name), maxBlocks: 64}
}

// PollResult tells the watcher what a Poll did.
type PollResult struct {
	// Head is the chain's latest block number.
	Head uint64
	// Accounts are the ids of accounts whose transactions changed state
	// (their actors should pump: the in-flight window has room).
	Accounts []string
	// More is true when blocks remain to be handled.
	More bool
}

// Poll handles the blocks between the stored cursor and the head minus the
// confirmation depth.
func (f *Follower) Poll(ctx context.Context) (PollResult, error) {
	var res PollResult
	head, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("head: %w", err)
	}
	res.Head = head.Number.Uint64()
	cursor, ok, err := f.store.Cursor(ctx, f.net.Name)
	if err != nil {
		return res, err
	}
	if !ok {
		// First run on this network: nothing of ours can be in older blocks.
		return res, f.store.SetCursor(ctx, f.net.Name, res.Head)
	}
	accounts := map[string]bool{}
	if res.Head < cursor {
		// The chain lost blocks we handled (a reorg to a shorter chain, or
		// a dev chain that came back from a hard kill at an older head):
		// what they held goes back to submitted and is re-broadcast.
		ids, err := f.store.Unmine(ctx, f.net.Name, res.Head+1)
		if err != nil {
			return res, fmt.Errorf("unmine from %d: %w", res.Head+1, err)
		}
		f.log.Warn("chain head went back; transactions of lost blocks are pending again", "cursor", cursor, "head", res.Head, "transactions", len(ids))
		if err := f.store.SetCursor(ctx, f.net.Name, res.Head); err != nil {
			return res, err
		}
		cursor = res.Head
		res.Accounts = append(res.Accounts, ids...)
	}
	if res.Head < f.net.Confirmations {
		return res, nil
	}
	last := res.Head - f.net.Confirmations
	if last > cursor+f.maxBlocks {
		last, res.More = cursor+f.maxBlocks, true
	}
	abis := map[string]*abi.ABI{}
	for n := cursor + 1; n <= last; n++ {
		touched, err := f.block(ctx, n, abis)
		if err != nil {
			return res, fmt.Errorf("block %d: %w", n, err)
		}
		for _, a := range touched {
			accounts[a] = true
		}
		if err := f.store.SetCursor(ctx, f.net.Name, n); err != nil {
			return res, err
		}
	}
	for a := range accounts {
		res.Accounts = append(res.Accounts, a)
	}
	return res, nil
}

// block completes the transactions of block n and returns their accounts.
func (f *Follower) block(ctx context.Context, n uint64, abis map[string]*abi.ABI) ([]string, error) {
	receipts, err := f.net.Chain.BlockReceipts(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("receipts: %w", err)
	}
	if len(receipts) == 0 {
		return nil, nil
	}
	hashes := make([]common.Hash, len(receipts))
	byHash := make(map[common.Hash]*types.Receipt, len(receipts))
	for i, r := range receipts {
		hashes[i] = r.TxHash
		byHash[r.TxHash] = r
	}
	txs, err := f.store.SubmittedByHash(ctx, f.net.Name, hashes)
	if err != nil {
		return nil, err
	}
	if len(txs) == 0 {
		return nil, nil
	}
	now := f.clock.Now()
	outcomes := make([]Mined, 0, len(txs))
	accounts := make([]string, 0, len(txs))
	for _, tx := range txs {
		r := byHash[*tx.Hash]
		m := Mined{
			ID: tx.ID, BlockNumber: r.BlockNumber.Uint64(), BlockHash: r.BlockHash,
			GasUsed: r.GasUsed, Ended: now, Events: []Event{},
		}
		if r.Status == types.ReceiptStatusSuccessful {
			m.Status = StatusCompleted
			m.Events = f.decode(ctx, tx, r, abis)
		} else {
			m.Status = StatusFailed
			m.Error = &TxError{Code: TxReverted, Message: "execution reverted on chain"}
		}
		outcomes = append(outcomes, m)
		accounts = append(accounts, tx.AccountID)
	}
	if err := f.store.MarkMined(ctx, outcomes); err != nil {
		return nil, err
	}
	return accounts, nil
}

// decode turns the receipt's logs into events with the ABI of the
// transaction's contract (or the transaction's own ABI when it has no
// contract id); logs it cannot decode are left out.
func (f *Follower) decode(ctx context.Context, tx *Transaction, r *types.Receipt, abis map[string]*abi.ABI) []Event {
	events := []Event{}
	if tx.ContractID == "" {
		// A direct send: the transaction carries its own ABI.
		a, err := ParseABI(tx.ABI)
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
		if c, err := f.store.ContractByID(ctx, tx.ContractID); err == nil {
			if parsed, err := ParseABI(c.ABI); err == nil {
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

// bigOf returns n as a *big.Int.
func bigOf(n uint64) *big.Int { return new(big.Int).SetUint64(n) }

package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// flakyChain is a fakeChain behind a busy hosted provider: fee reads,
// estimates and broadcasts are answered 429 now and then, some broadcasts
// are taken with the answer lost, and the node refuses some transactions'
// estimates for good. It mines, at each block, the taken transactions of
// the account in nonce order.
type flakyChain struct {
	*fakeChain
	rng   *rand.Rand
	taken map[common.Hash]bool
}

func (c *flakyChain) limited(p float64) bool { return c.rng.Float64() < p }

func (c *flakyChain) SuggestGasTipCap(ctx context.Context) (*big.Int, error) {
	if c.limited(0.1) {
		return nil, NodeErrorSample{Status: 429}.Err()
	}
	return c.fakeChain.SuggestGasTipCap(ctx)
}

// newFlakyChain returns the chain; refused maps a transaction id (the end
// of its call data) to the node's answer to its estimates.
func newFlakyChain(seed uint64, refused map[string]error) *flakyChain {
	c := &flakyChain{fakeChain: &fakeChain{}, rng: rand.New(rand.NewPCG(seed, 27)), taken: map[common.Hash]bool{}}
	c.estimate = func(msg ethereum.CallMsg) (uint64, error) {
		for id, err := range refused {
			if bytes.HasSuffix(msg.Data, []byte(id)) {
				return 0, err
			}
		}
		if c.limited(0.1) {
			return 0, NodeErrorSample{Code: -32005, Message: "request rate exceeded"}.Err()
		}
		return 50_000, nil
	}
	c.send = func(tx *types.Transaction) error {
		switch {
		case c.limited(0.1):
			return NodeErrorSample{Status: 429}.Err()
		case tx.Nonce() < c.nonce:
			return rpcError{code: -32000, msg: "nonce too low"}
		case c.limited(0.1):
			c.taken[tx.Hash()] = true
			return fmt.Errorf(`Post "http://127.0.0.1:8545": %w`, context.DeadlineExceeded)
		}
		c.taken[tx.Hash()] = true
		return nil
	}
	return c
}

// mine completes, in nonce order, the account's submitted transactions a
// version of which the node took.
func (c *flakyChain) mine(store *memStore) {
	inflight, _ := store.InFlight(context.Background(), "acct", "dev")
	for _, tx := range inflight {
		if *tx.Nonce != c.nonce {
			return
		}
		mined := false
		for _, h := range store.hashes[tx.ID] {
			mined = mined || c.taken[h]
		}
		if !mined {
			return
		}
		tx.Status = StatusCompleted
		c.nonce++
	}
}

// TestSenderEndsEveryTransactionOnFlakyProvider is issue 27's measurement
// on the sender alone: one account sends 42 transfers through a provider
// that answers 429 to fee reads, estimates and broadcasts now and then,
// loses some answers, and refuses three transfers' estimates for good
// (two need more gas than a block allows, one is refused for a reason of
// its own). Every transfer ends: the three fail (invalid, invalid,
// node_refused) and the 39 others complete with gapless nonces, within a
// bounded number of blocks, over several seeds.
func TestSenderEndsEveryTransactionOnFlakyProvider(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		refused := map[string]error{
			"/bad1":  rpcError{code: -32000, msg: "gas required exceeds allowance (30000000)"},
			"/bad2":  rpcError{code: -32000, msg: "gas required exceeds allowance (30000000)"},
			"/park1": rpcError{code: -32000, msg: "stack limit reached 1024 (1023)"},
		}
		chain := newFlakyChain(seed, refused)
		store := newMemStore()
		s := newTestSender(t, chain.fakeChain, store, 8)
		s.net.Chain = chain
		var ids []string
		for i := 0; i < 42; i++ {
			id := fmt.Sprintf("t%02d", i)
			switch i {
			case 5:
				id += "/bad1"
			case 17:
				id += "/park1"
			case 30:
				id += "/bad2"
			}
			ids = append(ids, id)
		}
		queueDistinct(t, s, ids...)
		blocks := 0
		for head := uint64(10); head < 200 && !allEnded(store); head++ {
			observe(chain.fakeChain, s.net, head)
			for i := 0; i < 3; i++ { // the pumps of one block (retried after a failure)
				if _, err := s.Pump(context.Background()); err == nil {
					break
				}
			}
			chain.mine(store)
			blocks++
		}
		if !allEnded(store) {
			t.Fatalf("seed %d: not every transaction ended after %d blocks: %v", seed, blocks, statuses(store))
		}
		want := map[string]TxErrorCode{"t05/bad1": TxInvalid, "t30/bad2": TxInvalid, "t17/park1": TxNodeRefused}
		var held []uint64
		for _, id := range ids {
			tx := store.txs[id]
			if code, ok := want[id]; ok {
				if tx.Status != StatusFailed || tx.Error.Code != code || tx.Nonce != nil {
					t.Fatalf("seed %d: %s: %s %+v", seed, id, tx.Status, tx.Error)
				}
				continue
			}
			if tx.Status != StatusCompleted {
				t.Fatalf("seed %d: %s: %s %+v", seed, id, tx.Status, tx.Error)
			}
			held = append(held, *tx.Nonce)
		}
		sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
		if !gapless(held, 0) || len(held) != 39 {
			t.Fatalf("seed %d: nonces %v", seed, held)
		}
		t.Logf("seed %d: every transaction ended in %d blocks", seed, blocks)
	}
}

// allEnded reports whether no transaction of store is new or submitted.
func allEnded(store *memStore) bool {
	for _, tx := range store.txs {
		if tx.Status == StatusNew || tx.Status == StatusSubmitted {
			return false
		}
	}
	return true
}

// statuses counts the transactions of store by status.
func statuses(store *memStore) map[TxStatus]int {
	out := map[TxStatus]int{}
	for _, tx := range store.txs {
		out[tx.Status]++
	}
	return out
}

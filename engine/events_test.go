package engine

import (
	"context"
	"math/big"
	"strings"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// denseChain has perBlock logs of one event in every block from first to
// head, made on demand; it counts the eth_getLogs calls.
type denseChain struct {
	first, head uint64
	perBlock    uint
	topic       common.Hash
	calls       int
}

func (d *denseChain) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	return &types.Header{Number: new(big.Int).SetUint64(d.head)}, nil
}

func (d *denseChain) FilterLogs(_ context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	d.calls++
	var out []types.Log
	for b := max(q.FromBlock.Uint64(), d.first); b <= q.ToBlock.Uint64() && b <= d.head; b++ {
		for i := range d.perBlock {
			out = append(out, types.Log{Address: q.Addresses[0], BlockNumber: b, Index: i, Topics: []common.Hash{d.topic}})
		}
	}
	return out, nil
}

// TestContractEventsDensePaging: a contract with 10 events in each of 3,000
// blocks (from block 7, so that pages end inside blocks), paged by 1,000
// from block 0: every event once, in chain order, and about one eth_getLogs
// call per page once the first page has learned the density.
func TestContractEventsDensePaging(t *testing.T) {
	a, err := abi.JSON(strings.NewReader(`[{"type":"event","name":"Tick","anonymous":false,"inputs":[]}]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1000, 333} {
		chain := &denseChain{first: 7, head: 3006, perBlock: 10, topic: crypto.Keccak256Hash([]byte("Tick()"))}
		var q EventQuery
		q.Limit = limit
		var got, pages int
		next := EventCursor{Block: 0}
		for {
			page, err := ContractEvents(context.Background(), chain, common.Address{1}, &a, q)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, ev := range page.Events {
				want := EventCursor{Block: chain.first + uint64(got)/10, Index: uint(got % 10)}
				if ev.BlockNumber != want.Block || ev.LogIndex != want.Index {
					t.Fatalf("limit %d: event %d at %d/%d, want %d/%d", limit, got, ev.BlockNumber, ev.LogIndex, want.Block, want.Index)
				}
				got++
			}
			if page.Next == nil {
				break
			}
			next = *page.Next
			q.At = &next
		}
		if got != 30_000 {
			t.Fatalf("limit %d: %d events, want 30,000", limit, got)
		}
		if chain.calls > pages+4 {
			t.Fatalf("limit %d: %d eth_getLogs calls for %d pages; want about one a page", limit, chain.calls, pages)
		}
		t.Logf("limit %d: %d pages, %d eth_getLogs calls", limit, pages, chain.calls)
	}
}

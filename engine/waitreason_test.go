package engine

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

func TestWaitReason(t *testing.T) {
	from := common.HexToAddress("0x00000000000000000000000000000000000000f1")
	token := common.HexToAddress("0x00000000000000000000000000000000000000aa").Hex()
	until := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	waiting := func(mod func(*Transaction)) *Transaction {
		tx := &Transaction{ID: "t", AccountID: "m1", From: from, Status: StatusWaiting}
		mod(tx)
		return tx
	}
	pooled := func(tx *Transaction) {
		tx.PoolID, tx.WaitForAsset, tx.WaitForValue = "p", token, big.NewInt(5)
	}
	facts := func(pw PoolWait) WaitFacts { return WaitFacts{Pools: map[string]PoolWait{"p": pw}} }
	for _, c := range []struct {
		name  string
		tx    *Transaction
		facts WaitFacts
		want  []string // substrings, in order
		not   []string
	}{
		{"not waiting", &Transaction{Status: StatusNew, WaitForAsset: AssetETH, WaitForValue: big.NewInt(1)}, WaitFacts{}, nil, nil},
		{"ETH", waiting(func(tx *Transaction) { tx.WaitForAsset, tx.WaitForValue = AssetETH, big.NewInt(1000) }), WaitFacts{},
			[]string{"its sender " + from.Hex() + " holds 1000 wei of ETH (waitForAsset)"}, []string{"pool"}},
		{"token, with a deadline", waiting(func(tx *Transaction) {
			tx.WaitForAsset, tx.WaitForValue, tx.WaitUntil = strings.ToLower(token), big.NewInt(7), &until
		}), WaitFacts{}, []string{"holds 7 of token " + token, "expires at 2026-11-28T12:00:00.000Z (waitTimeout)"}, nil},
		{"dependencies", waiting(func(tx *Transaction) { tx.DependsOn = []string{"d1", "d2", "d3"} }),
			WaitFacts{Deps: map[string]TxStatus{"d1": StatusCompleted, "d2": StatusSubmitted, "d3": StatusWaiting}},
			[]string{"waits for dependencies d2 (submitted), d3 (waiting) to complete"}, []string{"d1"}},
		{"one dependency not read", waiting(func(tx *Transaction) { tx.DependsOn = []string{"d1"} }), WaitFacts{},
			[]string{"waits for dependency d1 to complete"}, nil},
		{"many dependencies", waiting(func(tx *Transaction) { tx.DependsOn = []string{"a", "b", "c", "d", "e"} }), WaitFacts{},
			[]string{"waits for dependencies a, b, c and 2 more to complete"}, nil},
		{"dependency and balance", waiting(func(tx *Transaction) {
			tx.DependsOn, tx.WaitForAsset, tx.WaitForValue = []string{"d1"}, AssetETH, big.NewInt(1)
		}), WaitFacts{Deps: map[string]TxStatus{"d1": StatusNew}}, []string{"dependency d1 (new) to complete; waits until its sender"}, nil},
		{"pool short", waiting(pooled), facts(PoolWait{Known: true, Treasury: true, Short: "treasury 0x1 holds 0 wei, too little"}),
			[]string{"pool member " + from.Hex() + " holds 5 of token " + token, "the pool cannot refill it: treasury 0x1 holds 0 wei"}, nil},
		{"pool without treasury", waiting(pooled), facts(PoolWait{Known: true}),
			[]string{"the pool has no treasury, so nothing refills its members"}, nil},
		{"top-up pending", waiting(pooled), facts(PoolWait{Known: true, Treasury: true, PendingTopUps: []string{TopUpKeyPrefix + "m1:" + token}}),
			[]string{"a top-up from the pool's treasury is pending"}, nil},
		{"batch pending", waiting(pooled), facts(PoolWait{Known: true, Treasury: true, PendingTopUps: []string{TopUpBatchKey(AssetETH), TopUpBatchKey(token)}}),
			[]string{"a batch of top-ups from the pool's treasury is pending"}, nil},
		{"another asset's batch", waiting(pooled), facts(PoolWait{Known: true, Treasury: true, PendingTopUps: []string{TopUpBatchKey(AssetETH)}}),
			[]string{"refills members when its keeper next looks"}, []string{"pending"}},
		{"another member's top-up", waiting(pooled), facts(PoolWait{Known: true, Treasury: true, PendingTopUps: []string{TopUpKeyPrefix + "m2:" + token}}),
			[]string{"refills members when its keeper next looks"}, []string{"pending"}},
		{"pool unknown", waiting(pooled), WaitFacts{}, []string{"pool member"}, []string{"treasury", "refill"}},
		{"nothing known", waiting(func(*Transaction) {}), WaitFacts{}, []string{"waits until its conditions are checked again"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := WaitReason(c.tx, c.facts)
			if c.want == nil && got != "" {
				t.Fatalf("reason %q, want none", got)
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("reason %q lacks %q (in order)", got, w)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Fatalf("reason %q names %q", got, n)
				}
			}
		})
	}
}

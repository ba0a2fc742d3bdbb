package subscribe

import (
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/txengine/txengine/engine"
)

// TestNextGroup: the subscriptions at the lowest next block that is deep
// enough for them read together, up to the lowest of their tops and at most
// Range blocks; subscriptions not deep enough yet wait.
func TestNextGroup(t *testing.T) {
	p := &Processor{cfg: Config{Range: 10}}
	nextGroup := func(subs []*engine.Subscription, head uint64) ([]*engine.Subscription, uint64, uint64) {
		groups := p.groups(subs, head, time.Time{})
		if len(groups) == 0 {
			return nil, 0, 0
		}
		return groups[0].subs, groups[0].from, groups[0].to
	}
	a := &engine.Subscription{ID: "a", Next: 5, Confirmations: 0}
	b := &engine.Subscription{ID: "b", Next: 5, Confirmations: 3}
	c := &engine.Subscription{ID: "c", Next: 3, Confirmations: 20} // not deep enough at head 20
	d := &engine.Subscription{ID: "d", Next: 21, Confirmations: 0} // caught up
	subs := []*engine.Subscription{a, b, c, d}
	group, from, to := nextGroup(subs, 20)
	if len(group) != 2 || group[0] != a || group[1] != b || from != 5 || to != 14 {
		t.Fatalf("group %v from %d to %d; want a, b from 5 to 14 (Range)", ids(group), from, to)
	}
	a.Next, b.Next = 15, 15
	group, from, to = nextGroup(subs, 20)
	if len(group) != 2 || from != 15 || to != 17 {
		t.Fatalf("group %v from %d to %d; want a, b from 15 to 17 (b's top)", ids(group), from, to)
	}
	b.Next = 18
	group, from, to = nextGroup(subs, 20)
	if len(group) != 1 || group[0] != a || from != 15 || to != 20 {
		t.Fatalf("group %v from %d to %d; want a alone from 15 to 20", ids(group), from, to)
	}
	a.Next = 21
	if group, _, _ := nextGroup(subs, 20); group != nil {
		t.Fatalf("group %v; want none: every subscription is caught up", ids(group))
	}
	if got := lag(subs, 20); got != 0 {
		t.Fatalf("lag %d, want 0", got)
	}
	a.Next = 12
	if got := lag(subs, 20); got != 9 {
		t.Fatalf("lag %d, want 9 (blocks 12..20 of a)", got)
	}
	if got := lag(subs, 2); got != 0 {
		t.Fatalf("lag at head 2 is %d, want 0", got)
	}
}

func ids(subs []*engine.Subscription) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.ID
	}
	return out
}

// TestMergeLogs: logs two queries both return count once, in chain order,
// removed ones are left out, and logs of the last block that are not of
// the header read with them (the chain moved) fail the step.
func TestMergeLogs(t *testing.T) {
	h5, h6, other := common.HexToHash("0x05"), common.HexToHash("0x06"), common.HexToHash("0x66")
	log := func(block uint64, hash common.Hash, index uint) types.Log {
		return types.Log{BlockNumber: block, BlockHash: hash, Index: index, Address: common.BigToAddress(big.NewInt(int64(index)))}
	}
	removed := log(5, h5, 9)
	removed.Removed = true
	got, err := mergeLogs([][]types.Log{
		{log(6, h6, 0), log(5, h5, 2)},
		{log(5, h5, 1), log(5, h5, 2), removed},
	}, 6, h6)
	if err != nil {
		t.Fatal(err)
	}
	var order []uint
	for _, l := range got {
		order = append(order, uint(l.BlockNumber)*10+l.Index)
	}
	if len(order) != 3 || order[0] != 51 || order[1] != 52 || order[2] != 60 {
		t.Fatalf("merged %v, want [51 52 60]", order)
	}
	if _, err := mergeLogs([][]types.Log{{log(6, other, 0)}}, 6, h6); err == nil {
		t.Fatal("logs of block 6 from another branch than its header: want an error")
	}
}

package actors_test

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
)

// TestPoolTopUpsInBatches: a pool of five members without gas nor token,
// in three waves of transfers that each outgrow the last top-ups. The
// treasury first tops up one member at a time and deploys its disperser
// (an ordinary transaction of the treasury, a contract creation); then it
// approves the disperser for the token; then it refills the members of a
// wave in one batch of the token. (The gas batch, disperseEther, is
// TestDisperse's and the keeper's unit tests': the members' gas outlasts
// these waves.) Every transfer completes, and each
// member's token balance on chain is exactly what its completed top-ups
// (one by one and in batches) gave it less what it sent: no top-up paid
// twice, none lost.
func TestPoolTopUpsInBatches(t *testing.T) {
	f := newFixture(t, 8, time.Minute)
	f.sys.Close()
	f.cfg.PoolEvery = 500 * time.Millisecond
	f.start()
	ps := &poolStore{countingStore: f.store, owner: f.user.ID}
	p := createPool(t, f, ps, "batched", 5, f.account.ID)
	token := f.token.Address.Hex()
	sent := map[common.Address]*big.Int{}
	var ids []string
	wave := func(value int64) {
		t.Helper()
		var wids []string
		for i := 0; i < 10; i++ {
			to := randomAddress(t)
			tx, _ := sendThroughPool(t, f, p, to, value)
			wids = append(wids, tx.ID)
		}
		for _, tx := range f.waitAll(wids, 2*time.Minute) {
			if tx.Status != engine.StatusCompleted {
				t.Fatalf("transfer %s ended %s (%+v)", tx.ID, tx.Status, tx.Error)
			}
			if sent[tx.From] == nil {
				sent[tx.From] = new(big.Int)
			}
			sent[tx.From].Add(sent[tx.From], big.NewInt(value))
		}
		ids = append(ids, wids...)
	}
	// endedKeys waits until every top-up of the pool ended and returns
	// the completed ones by key (without the prefix).
	endedKeys := func() map[string][]*engine.Transaction {
		t.Helper()
		var tids []string
		for _, tx := range ps.topUps(t, p.ID) {
			tids = append(tids, tx.ID)
		}
		out := map[string][]*engine.Transaction{}
		for _, tx := range f.waitAll(tids, time.Minute) {
			if tx.Status == engine.StatusCompleted {
				k := strings.TrimPrefix(tx.OrderingKey, engine.TopUpKeyPrefix)
				out[k] = append(out[k], tx)
			}
		}
		return out
	}
	wave(10)
	if got := endedKeys(); len(got["disperser"]) != 1 {
		t.Fatalf("completed top-ups %v after the first wave, want the disperser deployed once", keysOf(got))
	}
	wave(1_000)
	if got := endedKeys(); len(got["approve:"+token]) != 1 {
		t.Fatalf("completed top-ups %v after the second wave, want the disperser approved once", keysOf(got))
	}
	wave(100_000)
	got := endedKeys()
	if len(got["batch:"+token]) == 0 {
		t.Fatalf("completed top-ups %v after the third wave, want a batch of the token", keysOf(got))
	}
	if len(got["disperser"]) != 1 || len(got["approve:"+token]) != 1 {
		t.Fatalf("completed top-ups %v: the disperser deployed or approved more than once", keysOf(got))
	}
	// What the top-ups gave each member, from the service's records.
	given := map[common.Address]*big.Int{}
	give := func(to string, v string) {
		n, ok := new(big.Int).SetString(v, 10)
		if !ok {
			t.Fatalf("top-up value %q", v)
		}
		a := common.HexToAddress(to)
		if given[a] == nil {
			given[a] = new(big.Int)
		}
		given[a].Add(given[a], n)
	}
	for k, txs := range got {
		for _, tx := range txs {
			switch {
			case k == "batch:"+token:
				rs, vs := tx.Parameters[1].([]any), tx.Parameters[2].([]any)
				for i := range rs {
					give(rs[i].(string), vs[i].(string))
				}
			case strings.HasSuffix(k, ":"+token) && !strings.HasPrefix(k, "approve:"):
				give(tx.Parameters[0].(string), tx.Parameters[1].(string))
			}
		}
	}
	for _, m := range p.Members {
		want := new(big.Int).Set(given[m.Address])
		if s := sent[m.Address]; s != nil {
			want.Sub(want, s)
		}
		if b := f.balanceOf(m.Address); b.Cmp(want) != 0 {
			t.Fatalf("member %d holds %s of the token, want %s (top-ups %s less transfers %s)", m.Slot, b, want, given[m.Address], sent[m.Address])
		}
	}
	t.Logf("completed top-ups: %v", keysOf(got))
	checkSequential(t, f, ps, p)
}

// keysOf lists the keys of m.
func keysOf(m map[string][]*engine.Transaction) []string {
	var out []string
	for k, v := range m {
		for range v {
			out = append(out, k)
		}
	}
	return out
}

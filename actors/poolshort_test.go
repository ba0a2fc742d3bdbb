package actors_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestPoolShortOnANodeWithoutTheKeeper: a node that does not run the
// network's pool keeper (cluster mode, not the leader) still says in
// PoolStatus why a pool cannot cover its members, working it out as a
// keeper would, and pays nothing: a pool without a treasury says so, a
// pool whose treasury holds nothing names the treasury's shortfall; the
// top-ups are the store's count (none here). PoolShort, which reads
// nothing, has nothing to say on such a node.
func TestPoolShortOnANodeWithoutTheKeeper(t *testing.T) {
	f := newFixture(t, 8, time.Minute)
	ps := &poolStore{countingStore: f.store, owner: f.user.ID}
	ctx := context.Background()
	newPool := func(treasury string) *engine.Pool { return createPool(t, f, ps, "dry", 1, treasury) }
	bare := newPool("")
	broke := newPool(bare.Members[0].AccountID) // a treasury with nothing
	f.sys.ForgetKeeper("dev")
	for _, p := range []*engine.Pool{bare, broke} {
		if _, a := sendThroughPool(t, f, p, randomAddress(t), 10); !a.Wait {
			t.Fatal("a member without the token covers a transfer")
		}
	}
	for _, c := range []struct {
		p    *engine.Pool
		want string
	}{{bare, "no treasury"}, {broke, "treasury " + bare.Members[0].Address.Hex() + " holds 0"}} {
		st, err := f.sys.PoolStatus(ctx, c.p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.Short, c.want) || st.TopUps != 0 {
			t.Errorf("pool %s: short %q, %d top-ups; want %q, none", c.p.ID, st.Short, st.TopUps, c.want)
		}
		if s := f.sys.PoolShort("dev", c.p.ID); s != "" {
			t.Errorf("PoolShort %q on a node without the keeper", s)
		}
	}
	if n := len(ps.topUps(t, broke.ID)); n != 0 {
		t.Errorf("%d top-ups sent, want none", n)
	}
}

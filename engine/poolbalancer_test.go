package engine

import (
	"context"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// poolNode is a node holding balances; it counts its balance batches.
type poolNode struct {
	Node // not called

	mu      sync.Mutex
	eth     map[common.Address]*big.Int
	tokens  map[common.Address]map[common.Address]*big.Int // token -> holder
	batches atomic.Int64
}

func (n *poolNode) BatchBalances(_ context.Context, qs []BalanceQuery) ([]*big.Int, []error, error) {
	n.batches.Add(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*big.Int, len(qs))
	for i, q := range qs {
		v := n.eth[q.Holder]
		if !q.ETH {
			v = n.tokens[q.Token][q.Holder]
		}
		if v == nil {
			v = new(big.Int)
		}
		out[i] = new(big.Int).Set(v)
	}
	return out, make([]error, len(qs)), nil
}

func (n *poolNode) HeaderByNumber(context.Context, *big.Int) (*types.Header, error) {
	return &types.Header{Number: big.NewInt(1), BaseFee: big.NewInt(1), GasLimit: 30_000_000}, nil
}

func (n *poolNode) SuggestGasTipCap(context.Context) (*big.Int, error) { return big.NewInt(1), nil }

// poolLoadStore is a PoolLoadReader that counts its calls.
type poolLoadStore struct {
	mu        sync.Mutex
	loads     []PoolMemberLoad
	keys      map[string]string
	loadCalls atomic.Int64
	keyCalls  atomic.Int64
}

func (s *poolLoadStore) PoolLoads(context.Context, string) ([]PoolMemberLoad, error) {
	s.loadCalls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PoolMemberLoad(nil), s.loads...), nil
}

func (s *poolLoadStore) OrderingKeyMember(_ context.Context, _, key string) (string, bool, error) {
	s.keyCalls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.keys[key]
	return m, ok, nil
}

// fakeNow is a clock the test moves.
type fakeNow struct{ ns atomic.Int64 }

func (c *fakeNow) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeNow) advance(d time.Duration) { c.ns.Add(int64(d)) }

var poolToken = common.HexToAddress("0x00000000000000000000000000000000000000aa")

// poolFixture is a pool of n members, each holding 1 ETH and no token.
type poolFixture struct {
	pool  *Pool
	node  *poolNode
	store *poolLoadStore
	clock *fakeNow
	b     *PoolBalancer
}

func newPoolFixture(t testing.TB, n int) *poolFixture {
	f := &poolFixture{
		pool:  &Pool{ID: "pool-1", Network: "dev", Size: n},
		node:  &poolNode{eth: map[common.Address]*big.Int{}, tokens: map[common.Address]map[common.Address]*big.Int{poolToken: {}}},
		store: &poolLoadStore{keys: map[string]string{}},
		clock: &fakeNow{},
	}
	f.clock.advance(time.Hour)
	for i := 0; i < n; i++ {
		m := PoolMember{AccountID: fmt.Sprintf("m%d", i), Address: common.BigToAddress(big.NewInt(int64(i + 1))), Slot: i}
		f.pool.Members = append(f.pool.Members, m)
		f.node.eth[m.Address] = big.NewInt(1e18)
	}
	net := &Network{Name: "dev", Chain: f.node}
	f.b = NewPoolBalancer(PoolBalancerConfig{Store: f.store, Networks: map[string]*Network{"dev": net}, Now: f.clock.now})
	t.Cleanup(f.b.Close)
	return f
}

// setLoad sets member i's queued count in the store.
func (f *poolFixture) setLoad(i, queued int, reserved map[string]*big.Int) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	for j := range f.store.loads {
		if f.store.loads[j].AccountID == f.pool.Members[i].AccountID {
			f.store.loads[j] = PoolMemberLoad{AccountID: f.pool.Members[i].AccountID, Queued: queued, Reserved: reserved}
			return
		}
	}
	f.store.loads = append(f.store.loads, PoolMemberLoad{AccountID: f.pool.Members[i].AccountID, Queued: queued, Reserved: reserved})
}

func (f *poolFixture) setToken(i int, v int64) {
	f.node.mu.Lock()
	f.node.tokens[poolToken][f.pool.Members[i].Address] = big.NewInt(v)
	f.node.mu.Unlock()
}

func (f *poolFixture) assign(t testing.TB, need PoolNeed) PoolAssignment {
	t.Helper()
	a, err := f.b.Assign(context.Background(), f.pool, need)
	if err != nil {
		t.Fatalf("assign: %v", err)
	}
	return a
}

var gasOnly = PoolNeed{Asset: AssetETH, Value: new(big.Int)}

func TestPoolBalancerLeastLoadedAndRotation(t *testing.T) {
	f := newPoolFixture(t, 3)
	f.setLoad(0, 5, nil)
	f.setLoad(1, 2, nil)
	f.setLoad(2, 3, nil)
	if a := f.assign(t, gasOnly); a.Member.Slot != 1 || a.Wait {
		t.Fatalf("first send went to %+v, want slot 1 (least loaded), no wait", a)
	}
	// Now 1 and 2 hold 3 each: the rotation goes past the last one given.
	if a := f.assign(t, gasOnly); a.Member.Slot != 2 {
		t.Fatalf("second send went to slot %d, want 2 (tie, rotation)", a.Member.Slot)
	}
	got := map[int]int{}
	for i := 0; i < 9; i++ {
		got[f.assign(t, gasOnly).Member.Slot]++
	}
	// Loads 5, 3, 4 after two sends: nine more even them at 7 each.
	if got[0] != 2 || got[1] != 4 || got[2] != 3 {
		t.Fatalf("nine sends spread %v, want 2, 4, 3 (the loads evened at 7)", got)
	}
}

func TestPoolBalancerRotatesAmongIdleMembers(t *testing.T) {
	f := newPoolFixture(t, 4)
	for i := 0; i < 8; i++ {
		if a := f.assign(t, gasOnly); a.Member.Slot != i%4 {
			t.Fatalf("send %d went to slot %d, want %d", i, a.Member.Slot, i%4)
		}
	}
}

func TestPoolBalancerCoversOrWaits(t *testing.T) {
	f := newPoolFixture(t, 3)
	asset := poolToken.Hex()
	f.setToken(0, 50)
	f.setToken(1, 200)
	f.setToken(2, 100)
	f.setLoad(1, 0, map[string]*big.Int{asset: big.NewInt(150)}) // 50 free
	f.setLoad(2, 10, nil)
	need := PoolNeed{Asset: asset, Value: big.NewInt(100)}
	if a := f.assign(t, need); a.Member.Slot != 2 || a.Wait {
		t.Fatalf("send of 100 went to %+v, want slot 2 (the only one covering), no wait", a)
	}
	// Slot 2's 100 is now taken by the send just assigned: nobody covers.
	a := f.assign(t, need)
	if !a.Wait || a.Member.Slot != 0 {
		t.Fatalf("uncovered send went to %+v, want the least loaded (slot 0) with Wait", a)
	}
	if a.WaitAsset != asset || a.WaitValue.Cmp(big.NewInt(100)) != 0 {
		t.Fatalf("uncovered send waits for %s %v, want the token's 100", a.WaitAsset, a.WaitValue)
	}
	// Gas: a member without ETH does not cover a 0-value send.
	f.node.mu.Lock()
	f.node.eth[f.pool.Members[0].Address] = new(big.Int)
	f.node.mu.Unlock()
	g := newPoolFixture(t, 2)
	g.node.eth[g.pool.Members[0].Address] = big.NewInt(1000) // < 200k gas at 3 wei
	g.setLoad(1, 4, nil)
	if a := g.assign(t, gasOnly); a.Member.Slot != 1 || a.Wait {
		t.Fatalf("send went to %+v, want slot 1 (slot 0 cannot pay the gas)", a)
	}
	g.node.eth[g.pool.Members[1].Address] = big.NewInt(1000)
	g.clock.advance(2 * time.Second)
	g.assign(t, gasOnly) // starts the refresh of the balances
	g.b.Close()          // waits for it
	a = g.assign(t, gasOnly)
	if !a.Wait || a.Member.Slot != 0 {
		t.Fatalf("send went to %+v, want slot 0 (least loaded) with Wait: no member pays the gas", a)
	}
	// It waits for the gas of one transaction in ETH, not for "0 ETH"
	// (which holds at once).
	if want := big.NewInt(DefaultPoolGasPerTx * 3); a.WaitAsset != AssetETH || a.WaitValue.Cmp(want) != 0 {
		t.Fatalf("gas-short send waits for %s %v, want ETH %v", a.WaitAsset, a.WaitValue, want)
	}
}

// TestPoolBalancerCoverDoesNotPileUp: a member that holds the tokens gets
// the sends while it is at most poolCoverSlack more loaded than the least
// loaded member; past that the send goes to the least loaded member, to
// wait there for its top-up. A burst so stays even across the members
// whatever they hold when it starts (a profiled burst gave the members
// that held leftovers 40 transfers more, and they drained alone at the
// end).
func TestPoolBalancerCoverDoesNotPileUp(t *testing.T) {
	f := newPoolFixture(t, 2)
	asset := poolToken.Hex()
	f.setToken(0, 1_000_000)
	need := PoolNeed{Asset: asset, Value: big.NewInt(1)}
	got, waits := map[int]int{}, 0
	for i := 0; i < 100; i++ {
		a := f.assign(t, need)
		got[a.Member.Slot]++
		if a.Wait {
			waits++
			if a.Member.Slot != 1 {
				t.Fatalf("send %d waits on slot %d, which holds the tokens", i, a.Member.Slot)
			}
		}
	}
	if d := got[0] - got[1]; d < poolCoverSlack || d > poolCoverSlack+1 {
		t.Fatalf("100 sends split %d / %d, want the covering member ahead by %d (the slack), not more", got[0], got[1], poolCoverSlack)
	}
	if waits != got[1] {
		t.Fatalf("%d of slot 1's %d sends wait, want all (it holds no tokens)", waits, got[1])
	}
}

func TestPoolBalancerOrderingKeySticks(t *testing.T) {
	f := newPoolFixture(t, 3)
	k := PoolNeed{Asset: AssetETH, Value: new(big.Int), OrderingKey: "customer-1"}
	first := f.assign(t, k)
	// The store has not seen the first send committed: the key still sticks.
	for i := 0; i < 5; i++ {
		if a := f.assign(t, k); a.Member != first.Member {
			t.Fatalf("send %d of the key went to %s, want %s", i, a.Member.AccountID, first.Member.AccountID)
		}
	}
	if n := f.store.keyCalls.Load(); n != 1 {
		t.Fatalf("store asked %d times for the key's member, want once", n)
	}
	// A key the store knows pending on slot 2 goes there, even loaded.
	f.store.mu.Lock()
	f.store.keys["customer-2"] = "m2"
	f.store.mu.Unlock()
	f.setLoad(2, 50, nil)
	if a := f.assign(t, PoolNeed{Asset: AssetETH, OrderingKey: "customer-2"}); a.Member.Slot != 2 {
		t.Fatalf("key pending on m2 went to slot %d", a.Member.Slot)
	}
	// The key's member waits rather than the key moving when it cannot cover.
	if a := f.assign(t, PoolNeed{Asset: poolToken.Hex(), Value: big.NewInt(1), OrderingKey: "customer-2"}); a.Member.Slot != 2 || !a.Wait {
		t.Fatalf("uncovered send of the key went to %+v, want slot 2 with Wait", a)
	}
	// Unused past KeyTTL, the key is asked for again.
	f.clock.advance(DefaultPoolKeyTTL + time.Second)
	f.assign(t, k)
	if n := f.store.keyCalls.Load(); n != 3 {
		t.Fatalf("store asked %d times, want 3 (the expired key asked again)", n)
	}
}

func TestPoolBalancerRefreshIsBounded(t *testing.T) {
	f := newPoolFixture(t, 8)
	need := PoolNeed{Asset: poolToken.Hex(), Value: big.NewInt(1)}
	for i := range f.pool.Members {
		f.setToken(i, 1e6)
	}
	for i := 0; i < 1000; i++ {
		f.assign(t, need)
		f.clock.advance(time.Millisecond) // 1,000 sends in one second
	}
	f.b.Close()
	// One read at the first send, then at most one per 250 ms.
	if n := f.store.loadCalls.Load(); n < 2 || n > 5 {
		t.Fatalf("%d PoolLoads calls for 1,000 sends over 1 s, want 2-5", n)
	}
	if n := f.node.batches.Load(); n > 2 {
		t.Fatalf("%d balance batches for 1,000 sends over 1 s, want at most 2", n)
	}
}

func TestPoolBalancerRefreshReplacesOwnCounts(t *testing.T) {
	f := newPoolFixture(t, 2)
	for i := 0; i < 4; i++ {
		f.assign(t, gasOnly) // 2 each, the store sees none yet
	}
	st := f.b.pools[f.pool.ID]
	if st.load(0) != 2 || st.load(1) != 2 {
		t.Fatalf("loads %d, %d before a refresh, want the own 2, 2", st.load(0), st.load(1))
	}
	// The store now holds them: m0's ended, m1's pending. The own counts
	// stay for the refresh that may not have seen them, then go.
	f.setLoad(1, 2, nil)
	for j := 0; j < 2; j++ {
		f.clock.advance(300 * time.Millisecond)
		if err := f.b.prepare(context.Background(), st, f.pool, gasOnly); err != nil {
			t.Fatal(err)
		}
		f.b.wg.Wait()
	}
	if st.load(0) != 0 || st.load(1) != 2 {
		t.Fatalf("loads %d, %d after two refreshes, want the store's 0, 2", st.load(0), st.load(1))
	}
	if a := f.assign(t, gasOnly); a.Member.Slot != 0 {
		t.Fatalf("send went to slot %d, want 0", a.Member.Slot)
	}
}

func BenchmarkPoolBalancerAssign(b *testing.B) {
	f := newPoolFixture(b, 32)
	for i := range f.pool.Members {
		f.setToken(i, 1e12)
	}
	need := PoolNeed{Asset: poolToken.Hex(), Value: big.NewInt(1)}
	f.assign(b, need)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.b.Assign(context.Background(), f.pool, need); err != nil {
			b.Fatal(err)
		}
	}
}

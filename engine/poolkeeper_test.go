package engine

import (
	"context"
	stdmaps "maps"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// keeperStore is a PoolKeeperStore over memory: a top-up's key stays
// pending until the test ends it, as the real store's PoolTopUps. It
// counts its reads by method.
type keeperStore struct {
	mu       sync.Mutex
	pool     *Pool
	loads    []PoolMemberLoad
	treasury *Account
	pending  map[string]string // key -> account
	sent     int
	reads    map[string]int
	// txs are the submitted transactions, oldest first (status new until
	// the test ends them).
	txs []*Transaction
}

// read counts a read of method.
func (s *keeperStore) read(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads == nil {
		s.reads = map[string]int{}
	}
	s.reads[method]++
}

// takeReads returns the reads counted since the last call, and forgets them.
func (s *keeperStore) takeReads() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reads
	s.reads = map[string]int{}
	return r
}

func (s *keeperStore) PoolByID(context.Context, string) (*Pool, error) {
	s.read("PoolByID")
	if s.pool == nil {
		return nil, ErrNotFound
	}
	return s.pool, nil
}

func (s *keeperStore) PoolLoads(context.Context, string) ([]PoolMemberLoad, error) {
	s.read("PoolLoads")
	return s.loads, nil
}

func (s *keeperStore) PoolTopUps(context.Context, string) (PoolTopUps, error) {
	s.read("PoolTopUps")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := PoolTopUps{Sent: s.sent, Pending: []string{}}
	if s.pool == nil || s.pool.TreasuryID == "" {
		return out, nil // as the store: a pool without a treasury has none
	}
	for key := range s.pending {
		out.Pending = append(out.Pending, key)
	}
	return out, nil
}

// ListTransactions serves the disperser's look-up: the submitted
// transactions of f.From with f.Method, newest first.
func (s *keeperStore) ListTransactions(_ context.Context, f TxFilter) ([]*Transaction, *TxCursor, error) {
	s.read("ListTransactions")
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Transaction
	for i := len(s.txs) - 1; i >= 0; i-- {
		tx := s.txs[i]
		if (f.From == nil || tx.From == *f.From) && (f.Method == "" || tx.Method == f.Method) && len(out) < f.Limit {
			c := *tx
			out = append(out, &c)
		}
	}
	return out, nil, nil
}

func (s *keeperStore) TransactionByID(_ context.Context, id string) (*Transaction, error) {
	s.read("TransactionByID")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tx := range s.txs {
		if tx.ID == id {
			c := *tx
			return &c, nil
		}
	}
	return nil, ErrNotFound
}

func (s *keeperStore) AccountByID(context.Context, string) (*Account, error) {
	s.read("AccountByID")
	return s.treasury, nil
}

// keeperSubmit records the submitted top-ups and marks their keys pending.
type keeperSubmit struct {
	store *keeperStore
	mu    sync.Mutex
	txs   []*Transaction
}

func (k *keeperSubmit) Submit(_ context.Context, tx *Transaction) (*Transaction, error) {
	k.mu.Lock()
	k.txs = append(k.txs, tx)
	k.mu.Unlock()
	k.store.mu.Lock()
	k.store.pending[tx.OrderingKey] = tx.AccountID
	k.store.sent++
	k.store.txs = append(k.store.txs, tx)
	k.store.mu.Unlock()
	return tx, nil
}

type keeperFixture struct {
	*poolFixture
	store  *keeperStore
	submit *keeperSubmit
	net    *Network
}

// newKeeperFixture: a pool of two members; m0 has gas and a pending
// transfer of 100 tokens it does not hold, m1 has no gas at all; the
// treasury holds plenty of both.
func newKeeperFixture(t *testing.T) *keeperFixture {
	pf := newPoolFixture(t, 2)
	f := &keeperFixture{poolFixture: pf, net: pf.b.cfg.Networks["dev"]}
	treasury := &Account{ID: "treasury", Address: common.HexToAddress("0x00000000000000000000000000000000000000ee")}
	f.pool.TreasuryID, f.pool.Owner = treasury.ID, "owner"
	f.node.eth[treasury.Address] = big.NewInt(1e18)
	f.node.tokens[poolToken][treasury.Address] = big.NewInt(1e6)
	f.node.eth[f.pool.Members[1].Address] = new(big.Int)
	f.store = &keeperStore{pool: f.pool, treasury: treasury, pending: map[string]string{},
		loads: []PoolMemberLoad{{AccountID: "m0", Queued: 1, Reserved: map[string]*big.Int{poolToken.Hex(): big.NewInt(100)}}}}
	f.submit = &keeperSubmit{store: f.store}
	return f
}

func (f *keeperFixture) keeper() *PoolKeeper {
	k := NewPoolKeeper(PoolKeeperConfig{Network: f.net, Store: f.store, Submit: f.submit, Clock: SystemClock{}})
	k.Add(f.pool.ID)
	return k
}

func TestPoolKeeperTopsUpOncePerMemberAndAsset(t *testing.T) {
	f := newKeeperFixture(t)
	k := f.keeper()
	k.Tick(context.Background())
	if len(f.submit.txs) != 2 {
		t.Fatalf("%d top-ups, want 2 (m1's gas, m0's token)", len(f.submit.txs))
	}
	// One read of each per look: the pending top-ups of every member and
	// asset in one (PoolTopUps), not one per owed top-up.
	wantReads := map[string]int{"PoolByID": 1, "PoolLoads": 1, "PoolTopUps": 1, "AccountByID": 1}
	if got := f.store.takeReads(); !stdmaps.Equal(got, wantReads) {
		t.Fatalf("store reads of a look %v, want %v", got, wantReads)
	}
	// m0 has work queued, m1 none: m0's token goes first (byNeed).
	tok, gas := f.submit.txs[0], f.submit.txs[1]
	// txGas = 200k gas at 3 wei (twice the base fee 1 plus the tip 1).
	wantGas := big.NewInt(3 * 200_000 * DefaultPoolHighWaterTxs)
	if gas.ContractAddress != f.pool.Members[1].Address || gas.Value.Cmp(wantGas) != 0 || len(gas.Data) != 0 ||
		gas.OrderingKey != TopUpKeyPrefix+"m1:ETH" {
		t.Fatalf("gas top-up %+v, want %s wei to m1 (a plain transfer, key m1:ETH)", gas, wantGas)
	}
	if tok.ContractAddress != poolToken || tok.Method != "transfer" || tok.OrderingKey != TopUpKeyPrefix+"m0:"+poolToken.Hex() ||
		tok.Parameters[1] != "150" {
		t.Fatalf("token top-up %+v, want transfer(m0, 150): the deficit 100 plus 50%% headroom", tok)
	}
	for _, tx := range f.submit.txs {
		if tx.AccountID != "treasury" || tx.PoolID != f.pool.ID || tx.Owner != "owner" || tx.Status != StatusNew {
			t.Fatalf("top-up %+v is not the treasury's, of the pool", tx)
		}
	}
	if k.Short(f.pool.ID) != "" {
		t.Fatalf("Short %q; want none", k.Short(f.pool.ID))
	}
	// Pending: nothing more, from this keeper nor from a new one (a restart).
	f.store.takeReads()
	k.Tick(context.Background())
	if got, want := f.store.takeReads(), map[string]int{"PoolByID": 1, "PoolLoads": 1, "PoolTopUps": 1}; !stdmaps.Equal(got, want) {
		t.Fatalf("store reads of a look with everything pending %v, want %v", got, want)
	}
	f.keeper().Tick(context.Background())
	if len(f.submit.txs) != 2 {
		t.Fatalf("%d top-ups after the top-ups were pending, want still 2", len(f.submit.txs))
	}
	// They landed and ended: the members hold enough, nothing more.
	f.node.eth[f.pool.Members[1].Address] = wantGas
	f.node.tokens[poolToken][f.pool.Members[0].Address] = big.NewInt(150)
	clear(f.store.pending)
	k.Tick(context.Background())
	if len(f.submit.txs) != 2 {
		t.Fatalf("%d top-ups after they landed, want still 2", len(f.submit.txs))
	}
}

func TestPoolKeeperSaysWhyItIsShort(t *testing.T) {
	f := newKeeperFixture(t)
	f.node.tokens[poolToken][f.store.treasury.Address] = big.NewInt(10) // < 150
	k := f.keeper()
	k.Tick(context.Background())
	if len(f.submit.txs) != 1 || f.submit.txs[0].OrderingKey != TopUpKeyPrefix+"m1:ETH" {
		t.Fatalf("top-ups %d, want only the gas one the treasury covers", len(f.submit.txs))
	}
	if s := k.Short(f.pool.ID); !strings.Contains(s, "holds 10 of token") {
		t.Fatalf("Short %q, want the treasury's token shortfall", s)
	}
	wantAssess(t, f, k.Short(f.pool.ID), 1)
	f.pool.TreasuryID = ""
	clear(f.store.pending)
	k.Tick(context.Background())
	if s := k.Short(f.pool.ID); !strings.HasPrefix(s, "no treasury") {
		t.Fatalf("Short %q, want no treasury", s)
	}
	wantAssess(t, f, k.Short(f.pool.ID), 1)
	// Nothing pending and nothing owed: the keeper lets the pool go.
	f.store.loads = nil
	f.node.eth[f.pool.Members[1].Address] = big.NewInt(1e18)
	k.Tick(context.Background())
	if k.Short(f.pool.ID) != "" || k.Has(f.pool.ID) {
		t.Fatalf("Short %q, active %v after the members were covered and idle", k.Short(f.pool.ID), k.Has(f.pool.ID))
	}
	wantAssess(t, f, "", 1)
}

// wantAssess fails unless a keeper that never looked at the pool (another
// node's) assesses the shortfall want from the loads, balances and pending
// top-ups read as PoolStatus reads them, and paid nothing: the fixture
// still has submitted top-ups only. Assess reads of the store only the
// treasury, and only when something is owed.
func wantAssess(t *testing.T, f *keeperFixture, want string, submitted int) {
	t.Helper()
	ctx := context.Background()
	loads, _ := f.store.PoolLoads(ctx, f.pool.ID)
	tu, _ := f.store.PoolTopUps(ctx, f.pool.ID)
	bal, err := ReadPoolBalances(ctx, f.net, f.pool.Members, loadTokens(loads))
	if err != nil {
		t.Fatal(err)
	}
	f.store.takeReads()
	got, err := f.keeper().Assess(ctx, f.pool, PoolLook{Loads: loads, Balances: bal, Pending: tu.Pending})
	if err != nil || got != want {
		t.Fatalf("Assess = %q, %v; want %q (the keeper's Short)", got, err, want)
	}
	for m, n := range f.store.takeReads() {
		if m != "AccountByID" || n > 1 {
			t.Fatalf("Assess read the store's %s %d times; want at most the treasury once", m, n)
		}
	}
	if len(f.submit.txs) != submitted {
		t.Fatalf("Assess submitted: %d top-ups, want %d", len(f.submit.txs), submitted)
	}
}

// TestPoolKeeperDoublesHeadroomWhenOutrun: a member that needs another
// top-up of a token within refillWindow of its last gets twice the last
// headroom (a burst still arriving outruns 50 %), up to
// maxHeadroomDoublings; after a quiet refillWindow it is back to 50 %.
func TestPoolKeeperDoublesHeadroomWhenOutrun(t *testing.T) {
	f := newKeeperFixture(t)
	clock := &fixedClock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	k := NewPoolKeeper(PoolKeeperConfig{Network: f.net, Store: f.store, Submit: f.submit, Clock: clock})
	k.Add(f.pool.ID)
	m0 := f.pool.Members[0].Address
	tokenTopUp := func(reserved, holds int64, after time.Duration) string {
		t.Helper()
		clock.t = clock.t.Add(after)
		f.store.loads[0].Reserved[poolToken.Hex()] = big.NewInt(reserved)
		f.node.tokens[poolToken][m0] = big.NewInt(holds)
		clear(f.store.pending)
		before := len(f.submit.txs)
		k.Add(f.pool.ID)
		k.Tick(context.Background())
		for _, tx := range f.submit.txs[before:] {
			if tx.ContractAddress == poolToken {
				return tx.Parameters[1].(string)
			}
		}
		t.Fatalf("no token top-up for %d reserved, %d held", reserved, holds)
		return ""
	}
	for i, c := range []struct {
		reserved, holds int64
		after           time.Duration
		want            string
	}{
		{100, 0, 0, "150"},                             // deficit 100 + 50 %
		{400, 150, 5 * time.Second, "650"},             // 250 + 100 %: outrun
		{1000, 600, 5 * time.Second, "2400"},           // 400 + 200 %
		{1000, 900, 5 * time.Second, "4100"},           // 100 + 400 %
		{1000, 900, 5 * time.Second, "8100"},           // 100 + 800 %, the most
		{1000, 900, 5 * time.Second, "8100"},           // still 800 %
		{1000, 900, refillWindow + time.Second, "600"}, // quiet: 100 + 50 %
	} {
		if got := tokenTopUp(c.reserved, c.holds, c.after); got != c.want {
			t.Fatalf("top-up %d (%d reserved, %d held, %v after the last): %s, want %s", i, c.reserved, c.holds, c.after, got, c.want)
		}
	}
}

package actors_test

import (
	"context"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
)

// poolStore adds engine.PoolStore to the fixture's store, in memory over
// the transactions it inserts (their status read from the real store), as
// persistence implements it (h-pstore). It outlives a System: a restart
// finds what the store holds.
type poolStore struct {
	*countingStore
	mu    sync.Mutex
	pools map[string]*engine.Pool
	txs   []*engine.Transaction // the pools' transactions, as inserted
}

func (s *poolStore) InsertTransactions(ctx context.Context, txs []*engine.Transaction) error {
	if err := s.countingStore.InsertTransactions(ctx, txs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tx := range txs {
		if tx.PoolID != "" {
			s.txs = append(s.txs, tx)
		}
	}
	return nil
}

// pending returns the pool's non-ended transactions (poolID "": all).
func (s *poolStore) pending(ctx context.Context, poolID string) ([]*engine.Transaction, error) {
	s.mu.Lock()
	txs := append([]*engine.Transaction(nil), s.txs...)
	s.mu.Unlock()
	var out []*engine.Transaction
	for _, tx := range txs {
		if poolID != "" && tx.PoolID != poolID {
			continue
		}
		cur, err := s.TransactionByID(ctx, tx.ID)
		if err != nil {
			return nil, err
		}
		if !cur.Status.Terminal() {
			c := *tx
			c.Status = cur.Status
			out = append(out, &c)
		}
	}
	return out, nil
}

// topUps returns the top-ups inserted.
func (s *poolStore) topUps() []*engine.Transaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*engine.Transaction
	for _, tx := range s.txs {
		if strings.HasPrefix(tx.OrderingKey, engine.TopUpKeyPrefix) {
			out = append(out, tx)
		}
	}
	return out
}

func (s *poolStore) CreatePool(ctx context.Context, p *engine.Pool, members []*engine.Account) error {
	for i, a := range members {
		if err := s.CreateAccount(ctx, a); err != nil {
			return err
		}
		p.Members = append(p.Members, engine.PoolMember{AccountID: a.ID, Address: a.Address, Slot: i})
	}
	s.mu.Lock()
	s.pools[p.ID] = p
	s.mu.Unlock()
	return nil
}

func (s *poolStore) PoolByID(_ context.Context, id string) (*engine.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pools[id]; ok {
		return p, nil
	}
	return nil, engine.ErrNotFound
}

func (s *poolStore) ListPools(context.Context, string) ([]*engine.Pool, error) { return nil, nil }

func (s *poolStore) ResizePool(context.Context, string, int, []*engine.Account) error {
	return engine.ErrNotFound
}

func (s *poolStore) DeletePool(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pools, id)
	return nil
}

func (s *poolStore) PoolLoads(ctx context.Context, poolID string) ([]engine.PoolMemberLoad, error) {
	p, err := s.PoolByID(ctx, poolID)
	if err != nil {
		return nil, err
	}
	txs, err := s.pending(ctx, poolID)
	if err != nil {
		return nil, err
	}
	var out []engine.PoolMemberLoad
	for _, m := range p.Members {
		l := engine.PoolMemberLoad{AccountID: m.AccountID, Reserved: map[string]*big.Int{}}
		for _, tx := range txs {
			if tx.AccountID != m.AccountID {
				continue
			}
			if tx.Status == engine.StatusSubmitted {
				l.InFlight++
			} else {
				l.Queued++
			}
			if tx.PoolAsset != "" && tx.PoolValue != nil {
				v := l.Reserved[tx.PoolAsset]
				if v == nil {
					v = new(big.Int)
					l.Reserved[tx.PoolAsset] = v
				}
				v.Add(v, tx.PoolValue)
			}
		}
		out = append(out, l)
	}
	return out, nil
}

func (s *poolStore) PendingPools(ctx context.Context, _ string) ([]string, error) {
	txs, err := s.pending(ctx, "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, tx := range txs {
		if !seen[tx.PoolID] {
			seen[tx.PoolID] = true
			out = append(out, tx.PoolID)
		}
	}
	return out, nil
}

func (s *poolStore) OrderingKeyMember(ctx context.Context, poolID, key string) (string, bool, error) {
	txs, err := s.pending(ctx, poolID)
	if err != nil {
		return "", false, err
	}
	for i := len(txs) - 1; i >= 0; i-- {
		if txs[i].OrderingKey == key {
			return txs[i].AccountID, true, nil
		}
	}
	return "", false, nil
}

var _ engine.PoolStore = (*poolStore)(nil)

// newPoolFixture is the fixture with a pool store, restarted over it (the
// pool keeper looks every 200 ms), and a pool of two members funded with
// gas (as at creation) and no token; the treasury is the fixture's
// account, which holds the token.
func newPoolFixture(t *testing.T) (*fixture, *poolStore, *engine.Pool) {
	f := newFixture(t, 8, time.Minute)
	f.sys.Close()
	ps := &poolStore{countingStore: f.store, pools: map[string]*engine.Pool{}}
	f.cfg.Store, f.cfg.PoolEvery = ps, 200*time.Millisecond
	f.start()
	ctx := context.Background()
	p := &engine.Pool{ID: uuid.NewString(), Owner: f.user.ID, Name: "payouts", Network: "dev", Size: 2, TreasuryID: f.account.ID}
	members := []*engine.Account{f.newAccount(f.user), f.newAccount(f.user)}
	for _, m := range members {
		m.Default = false
	}
	if err := ps.CreatePool(ctx, p, members); err != nil {
		t.Fatal(err)
	}
	hashes, err := f.faucet.Fund(ctx, []common.Address{members[0].Address, members[1].Address})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hashes {
		if _, err := evm.WaitMined(ctx, f.net.Chain.(*evm.Client), h); err != nil {
			t.Fatal(err)
		}
	}
	f.sys.PoolChanged(ctx, p)
	return f, ps, p
}

// sendThroughPool assigns a member to a transfer of value tokens to `to`
// and submits it as the API does: waiting for the token when the member
// cannot cover it.
func sendThroughPool(t *testing.T, f *fixture, p *engine.Pool, to common.Address, value int64) (*engine.Transaction, engine.PoolAssignment) {
	t.Helper()
	ctx := context.Background()
	asset := f.token.Address.Hex()
	need := engine.PoolNeed{Asset: asset, Value: big.NewInt(value)}
	a, err := f.sys.AssignPoolMember(ctx, p, need)
	if err != nil {
		t.Fatal(err)
	}
	tx := f.transfer(to, value)
	tx.AccountID, tx.From, tx.PoolID, tx.PoolAsset, tx.PoolValue = a.Member.AccountID, a.Member.Address, p.ID, asset, need.Value
	if a.Wait {
		tx.WaitForAsset, tx.WaitForValue = asset, need.Value
	}
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	return tx, a
}

// checkTopUps checks that each member got exactly one token top-up, from
// the treasury, and returns them.
func checkTopUps(t *testing.T, f *fixture, ps *poolStore, p *engine.Pool) []*engine.Transaction {
	t.Helper()
	got := map[string]int{}
	tops := ps.topUps()
	for _, tx := range tops {
		if tx.AccountID != f.account.ID || tx.PoolID != p.ID {
			t.Fatalf("top-up %s from %s of pool %q, want the treasury's of the pool", tx.ID, tx.AccountID, tx.PoolID)
		}
		got[tx.OrderingKey]++
	}
	for _, m := range p.Members {
		key := engine.TopUpKeyPrefix + m.AccountID + ":" + f.token.Address.Hex()
		if got[key] != 1 {
			t.Fatalf("member %s got %d token top-ups, want 1 (all: %v)", m.AccountID, got[key], got)
		}
	}
	if len(tops) != len(p.Members) {
		t.Fatalf("%d top-ups, want %d (one token top-up per member): %v", len(tops), len(p.Members), got)
	}
	return tops
}

// TestPoolTransfersWaitForTopUpsAndComplete: members without the token get
// transfers through the pool told to wait; the keeper tops each member up
// once from the treasury (a transaction of the pool, from the treasury);
// the transfers then complete and the recipients hold their tokens.
func TestPoolTransfersWaitForTopUpsAndComplete(t *testing.T) {
	f, ps, p := newPoolFixture(t)
	var ids []string
	var to []common.Address
	slots := map[int]int{}
	for i := 0; i < 6; i++ {
		addr := randomAddress(t)
		tx, a := sendThroughPool(t, f, p, addr, 10)
		if !a.Wait {
			t.Fatalf("send %d: member %d can cover it without the token", i, a.Member.Slot)
		}
		slots[a.Member.Slot]++
		ids, to = append(ids, tx.ID), append(to, addr)
	}
	if slots[0] != 3 || slots[1] != 3 {
		t.Fatalf("sends spread %v over the members, want 3 each", slots)
	}
	for _, tx := range f.waitAll(ids, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("transfer %s ended %s (%+v)", tx.ID, tx.Status, tx.Error)
		}
	}
	for _, addr := range to {
		if b := f.balanceOf(addr); b.Int64() != 10 {
			t.Fatalf("recipient holds %s, want 10", b)
		}
	}
	tops := checkTopUps(t, f, ps, p)
	for _, tx := range f.waitAll([]string{tops[0].ID, tops[1].ID}, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("top-up %s ended %s", tx.ID, tx.Status)
		}
	}
	st, err := f.sys.PoolStatus(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if st.TopUps != 2 || st.Short != "" || len(st.Members) != 2 || st.Members[0].Balance == nil || st.Members[0].NonceHealth != "ok" {
		t.Fatalf("status %+v, want 2 top-ups, not short, members' balances", st)
	}
}

// TestPoolTopUpPaidOnceAcrossRestart: with the chain paused the top-ups
// stay pending; the keeper sends no second one while they are, and
// neither does the keeper of a restarted system over the same store
// (PendingPools, OrderingKeyMember). Then everything completes.
func TestPoolTopUpPaidOnceAcrossRestart(t *testing.T) {
	f, ps, p := newPoolFixture(t)
	f.sim.Pause(true)
	var ids []string
	for i := 0; i < 4; i++ {
		tx, _ := sendThroughPool(t, f, p, randomAddress(t), 10)
		ids = append(ids, tx.ID)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(ps.topUps()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d top-ups after 30 s, want 2", len(ps.topUps()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // five more looks of the keeper
	checkTopUps(t, f, ps, p)
	f.sys.Close()
	f.cfg.Store = ps
	f.start()
	time.Sleep(time.Second) // the restarted keeper looks five times
	checkTopUps(t, f, ps, p)
	f.sim.Pause(false)
	for _, tx := range f.waitAll(ids, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("transfer %s ended %s (%+v)", tx.ID, tx.Status, tx.Error)
		}
	}
	checkTopUps(t, f, ps, p)
}

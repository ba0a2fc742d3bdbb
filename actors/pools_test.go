package actors_test

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
)

// poolStore is the fixture's store (sqlite, with its pool methods) and
// what the tests read of the pool's top-ups.
type poolStore struct {
	*countingStore
	owner string
}

// topUps returns the top-ups of the pool, oldest first.
func (s *poolStore) topUps(t *testing.T, poolID string) []*engine.Transaction {
	t.Helper()
	txs, _, err := s.ListTransactions(context.Background(), engine.TxFilter{Owner: s.owner, Pool: poolID, Ascending: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*engine.Transaction
	for _, tx := range txs {
		if strings.HasPrefix(tx.OrderingKey, engine.TopUpKeyPrefix) {
			out = append(out, tx)
		}
	}
	return out
}

// createPool stores a pool of size new accounts of f's user (not their
// default) with treasury (an account id, "" for none) and returns it as
// the store reads it, with its members.
func createPool(t *testing.T, f *fixture, ps *poolStore, name string, size int, treasury string) *engine.Pool {
	t.Helper()
	ctx := context.Background()
	p := &engine.Pool{ID: uuid.NewString(), Owner: f.user.ID, Name: name, Network: "dev", Size: size, TreasuryID: treasury}
	members := make([]*engine.Account, size)
	for i := range members {
		members[i] = f.newAccount(f.user)
		members[i].Default = false
	}
	if err := ps.CreatePool(ctx, p, members); err != nil {
		t.Fatal(err)
	}
	p, err := ps.PoolByID(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newPoolFixture is the fixture restarted with its pool keeper looking
// every second (the first time half a second after new work: the test's
// sends are all in by then), and a pool of two members funded with gas
// (as at creation) and no token; the treasury is the fixture's account,
// which holds the token.
func newPoolFixture(t *testing.T) (*fixture, *poolStore, *engine.Pool) {
	f := newFixture(t, 8, time.Minute)
	f.sys.Close()
	ps := &poolStore{countingStore: f.store, owner: f.user.ID}
	f.cfg.PoolEvery = time.Second
	f.start()
	ctx := context.Background()
	p := createPool(t, f, ps, "payouts", 2, f.account.ID)
	hashes, err := f.faucet.Fund(ctx, []common.Address{p.Members[0].Address, p.Members[1].Address})
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
	tops := ps.topUps(t, p.ID)
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
// from the treasury (a transaction of the pool, from the treasury), once,
// or a second time after the first ended if it looked mid-burst;
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
	// One token top-up per member, or two when the keeper looked while
	// the six sends were still arriving: the second then comes only after
	// the first ended (checkSequential), for the need that grew meanwhile.
	tops := ps.topUps(t, p.ID)
	perKey := map[string]int{}
	var topIDs []string
	for _, tx := range tops {
		if tx.AccountID != f.account.ID || tx.PoolID != p.ID {
			t.Fatalf("top-up %s from %s of pool %q, want the treasury's of the pool", tx.ID, tx.AccountID, tx.PoolID)
		}
		perKey[tx.OrderingKey]++
		topIDs = append(topIDs, tx.ID)
	}
	for _, m := range p.Members {
		if n := perKey[engine.TopUpKeyPrefix+m.AccountID+":"+f.token.Address.Hex()]; n < 1 || n > 2 {
			t.Fatalf("member %s got %d token top-ups, want 1 (2 if the keeper looked mid-burst): %v", m.AccountID, n, perKey)
		}
	}
	if len(perKey) != len(p.Members) {
		t.Fatalf("top-ups of %v, want token top-ups of the %d members only", perKey, len(p.Members))
	}
	checkSequential(t, f, ps, p)
	for _, tx := range f.waitAll(topIDs, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("top-up %s ended %s", tx.ID, tx.Status)
		}
	}
	st, err := f.sys.PoolStatus(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if st.TopUps != len(tops) || st.Short != "" || len(st.Members) != 2 || st.Members[0].Balance == nil || st.Members[0].NonceHealth != "ok" ||
		st.Members[0].Window == 0 {
		t.Fatalf("status %+v, want %d top-ups, not short, members' balances", st, len(tops))
	}
	for _, m := range st.Members {
		// 3 transfers of 10 reserved 30: topped up with 45, 15 left.
		if b := m.Tokens[f.token.Address.Hex()]; b == nil || b.Sign() <= 0 {
			t.Fatalf("member %d's token balance %v in the status, want the headroom left", m.Slot, b)
		}
	}
}

// TestPoolTopUpPaidOnceAcrossRestart: with the chain paused the top-ups
// stay pending; the keeper sends no second one while they are, and
// neither does the keeper of a restarted system over the same store
// (PendingPools, OrderingKeyMember), whose PoolStatus counts the two
// (the store's count). Then everything completes.
func TestPoolTopUpPaidOnceAcrossRestart(t *testing.T) {
	f, ps, p := newPoolFixture(t)
	f.sim.Pause(true)
	var ids []string
	for i := 0; i < 4; i++ {
		tx, _ := sendThroughPool(t, f, p, randomAddress(t), 10)
		ids = append(ids, tx.ID)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(ps.topUps(t, p.ID)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d top-ups after 30 s, want 2", len(ps.topUps(t, p.ID)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // three more looks of the keeper
	checkTopUps(t, f, ps, p)
	f.sys.Close()
	f.start()
	time.Sleep(3 * time.Second) // the restarted keeper looks three times
	checkTopUps(t, f, ps, p)
	// The restarted system counts the top-ups its predecessor sent.
	if st, err := f.sys.PoolStatus(context.Background(), p); err != nil || st.TopUps != 2 {
		t.Fatalf("after the restart PoolStatus says %d top-ups (%v), want 2", st.TopUps, err)
	}
	f.sim.Pause(false)
	for _, tx := range f.waitAll(ids, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("transfer %s ended %s (%+v)", tx.ID, tx.Status, tx.Error)
		}
	}
	checkSequential(t, f, ps, p)
}

// checkSequential checks that no member ever had two top-ups of an asset
// pending at once: each top-up of a key was accepted after the one before
// it ended. (A member whose first top-up fell short of sends that came
// after it may get a second once the first landed.)
func checkSequential(t *testing.T, f *fixture, ps *poolStore, p *engine.Pool) {
	t.Helper()
	byKey := map[string][]*engine.Transaction{}
	for _, tx := range ps.topUps(t, p.ID) {
		byKey[tx.OrderingKey] = append(byKey[tx.OrderingKey], tx)
	}
	for key, txs := range byKey {
		for i := 1; i < len(txs); i++ {
			prev := f.waitAll([]string{txs[i-1].ID}, time.Minute)[0]
			if prev.Ended == nil || txs[i].Created.Before(*prev.Ended) {
				t.Fatalf("top-up %s of %s accepted at %s while %s was pending (ended %v)", txs[i].ID, key, txs[i].Created, prev.ID, prev.Ended)
			}
		}
	}
}

// TestPoolKeeperResumesAfterRestart: the system stops before its keeper
// looked at the pool's new work; the restarted keeper finds the pool
// (PendingPools), tops its members up, and the transfers complete.
func TestPoolKeeperResumesAfterRestart(t *testing.T) {
	f, ps, p := newPoolFixture(t)
	var ids []string
	for i := 0; i < 4; i++ {
		tx, _ := sendThroughPool(t, f, p, randomAddress(t), 10)
		ids = append(ids, tx.ID)
	}
	f.sys.Close() // within half a second of the first send: no look yet
	if n := len(ps.topUps(t, p.ID)); n != 0 {
		t.Fatalf("%d top-ups before the restart, want none (the keeper had not looked)", n)
	}
	f.start()
	for _, tx := range f.waitAll(ids, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("transfer %s ended %s (%+v)", tx.ID, tx.Status, tx.Error)
		}
	}
	checkTopUps(t, f, ps, p)
}

// TestPoolMembersWithoutGasAreToppedUp: members created without gas get a
// plain ETH transfer from the treasury (gas first, then the token), and
// the transfers through the pool complete.
func TestPoolMembersWithoutGasAreToppedUp(t *testing.T) {
	f := newFixture(t, 8, time.Minute)
	f.sys.Close()
	f.cfg.PoolEvery = time.Second
	f.start()
	ps := &poolStore{countingStore: f.store, owner: f.user.ID}
	p := createPool(t, f, ps, "dry", 1, f.account.ID)
	m := p.Members[0]
	var ids []string
	for i := 0; i < 3; i++ {
		tx, a := sendThroughPool(t, f, p, randomAddress(t), 10)
		if !a.Wait {
			t.Fatal("a member without gas nor token covers a transfer")
		}
		ids = append(ids, tx.ID)
	}
	for _, tx := range f.waitAll(ids, time.Minute) {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("transfer %s ended %s (%+v)", tx.ID, tx.Status, tx.Error)
		}
	}
	var gas *engine.Transaction
	for _, tx := range ps.topUps(t, p.ID) {
		if tx.OrderingKey == engine.TopUpKeyPrefix+m.AccountID+":ETH" {
			gas = tx
		}
	}
	if gas == nil || gas.ContractAddress != m.Address || gas.Value.Sign() <= 0 || len(gas.Data) != 0 {
		t.Fatalf("gas top-up %+v, want a plain ETH transfer to the member", gas)
	}
	if got := f.waitAll([]string{gas.ID}, time.Minute)[0]; got.Status != engine.StatusCompleted {
		t.Fatalf("gas top-up ended %s (%+v)", got.Status, got.Error)
	}
}

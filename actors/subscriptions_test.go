package actors_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/subscribe"
)

// subscribeTransfers stores a subscription of the fixture's user to the
// token's Transfer logs to `to`, from block from.
func (f *fixture) subscribeTransfers(to common.Address, from uint64) *engine.Subscription {
	f.t.Helper()
	ev := f.tokenA.Events["Transfer"]
	raw, _ := json.Marshal(to.Hex())
	topics, err := engine.EventFilterTopics(&ev, map[string]json.RawMessage{"to": raw})
	if err != nil {
		f.t.Fatal(err)
	}
	s := &engine.Subscription{
		ID: uuid.NewString(), Owner: f.user.ID, Network: "dev", Kind: engine.SubscriptionEvents,
		ContractID: f.token.ID, Address: f.token.Address, Event: "Transfer", Signature: ev.Sig,
		ABI: json.RawMessage(subscribe.TransferEventABI), Topics: topics, Confirmations: 0,
		FromBlock: from, Next: from, Created: engine.SystemClock{}.Now(),
	}
	if err := f.store.CreateSubscription(context.Background(), s, nil); err != nil {
		f.t.Fatal(err)
	}
	return s
}

// mineUntilCompleted commits blocks on the paused simulated chain until
// transaction id completes, and returns it: a row that says submitted may
// still be on its way to the node (it is stored before it is sent), so the
// first block may come without it.
func (f *fixture) mineUntilCompleted(id string) *engine.Transaction {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.sim.Backend.Commit()
		settle := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(settle) {
			tx, err := f.store.TransactionByID(context.Background(), id)
			if err != nil {
				f.t.Fatal(err)
			}
			if tx.Status == engine.StatusCompleted {
				return tx
			}
			time.Sleep(10 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("transaction %s not completed in 30 s of blocks", id)
		}
	}
}

// deliveries waits until subscription id has n deliveries and returns them.
func (f *fixture) deliveries(id string, n int) []engine.SubscriptionEvent {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := f.store.SubscriptionEvents(context.Background(), id, 0, 100)
		if err != nil {
			f.t.Fatal(err)
		}
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("subscription %s: %d deliveries after 30 s, want %d", id, len(evs), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSubscriptionFollowsReorg: on the simulated chain, a subscription with
// no confirmations gets a transfer's log; a fork below its block makes the
// processor retract it (a removed delivery of the same log) and deliver the
// log of the block that mines the transaction again. A subscription created
// afterwards from an earlier block catches up over the new chain only.
func TestSubscriptionFollowsReorg(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	ctx := context.Background()
	x := common.HexToAddress("0x5eb5")
	f.sim.Pause(true)
	parent, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := f.subscribeTransfers(x, parent.Number.Uint64()+1)
	tx := f.transfer(x, 9)
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	f.waitStatus(tx.ID, engine.StatusSubmitted, nil)
	first := f.mineUntilCompleted(tx.ID)
	got := f.deliveries(sub.ID, 1)
	if got[0].BlockHash != *first.BlockHash || got[0].TxHash != *first.Hash || got[0].Removed || got[0].Seq != 1 {
		t.Fatalf("delivery %+v; the transfer is in block %s", got[0], first.BlockHash)
	}

	if err := f.sim.Backend.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	f.sim.Backend.Commit()
	f.sim.Backend.Commit()
	f.sim.Pause(false)
	again := f.waitStatus(tx.ID, engine.StatusCompleted, func(t *engine.Transaction) bool { return *t.BlockHash != *first.BlockHash })
	got = f.deliveries(sub.ID, 3)
	time.Sleep(200 * time.Millisecond)
	if n, _ := f.store.SubscriptionEvents(ctx, sub.ID, 0, 100); len(n) != 3 {
		t.Fatalf("%d deliveries, want 3: log, removed, log again", len(n))
	}
	removed, redo := got[1], got[2]
	if !removed.Removed || removed.BlockHash != got[0].BlockHash || removed.LogIndex != got[0].LogIndex || removed.Seq != 2 {
		t.Fatalf("retraction %+v of %+v", removed, got[0])
	}
	var view subscribe.DeliveryView
	if err := json.Unmarshal(removed.Body, &view); err != nil || !view.Removed || view.Sequence != 2 || view.ID != removed.ID ||
		view.TransactionHash != got[0].TxHash.Hex() {
		t.Fatalf("retraction body %s (%v)", removed.Body, err)
	}
	if redo.Removed || redo.BlockHash != *again.BlockHash || redo.TxHash != *again.Hash || redo.Seq != 3 {
		t.Fatalf("new delivery %+v; the transfer is now in block %s", redo, again.BlockHash)
	}

	late := f.subscribeTransfers(x, parent.Number.Uint64())
	caught := f.deliveries(late.ID, 1)
	time.Sleep(200 * time.Millisecond)
	if all, _ := f.store.SubscriptionEvents(ctx, late.ID, 0, 100); len(all) != 1 || caught[0].BlockHash != *again.BlockHash || caught[0].Removed {
		t.Fatalf("the late subscription got %+v, want only the log of block %s", all, again.BlockHash)
	}
}

// TestSubscriptionRestartDeliversOnce: a subscription that nothing matches
// has its next block stored only every CheckpointBlocks blocks, not at
// every block; after a restart the processor reads those blocks again, and
// still delivers each log once: to the subscription that had deliveries
// (its next block was stored with them) nothing twice, to the other the
// log that arrives after the restart.
func TestSubscriptionRestartDeliversOnce(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	ctx := context.Background()
	x, y := common.HexToAddress("0x5eb5"), common.HexToAddress("0x5eb6")
	head, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := f.subscribeTransfers(x, head.Number.Uint64()+1)
	b := f.subscribeTransfers(y, head.Number.Uint64()+1)
	// Blocks mined by the test, a few per transfer: fewer than a
	// checkpoint's.
	f.sim.Pause(true)
	for i := range 3 {
		tx := f.transfer(x, int64(i+1))
		if _, err := f.sys.Submit(ctx, tx); err != nil {
			t.Fatal(err)
		}
		f.waitStatus(tx.ID, engine.StatusSubmitted, nil)
		f.mineUntilCompleted(tx.ID)
	}
	f.deliveries(a.ID, 3)
	f.sys.Close()
	f.sim.Pause(false)
	stored, err := f.store.SubscriptionByID(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	now, err := f.net.Chain.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Next != b.Next || now.Number.Uint64() < b.Next+2 {
		t.Fatalf("b's stored next block is %d at head %d, want still %d (no checkpoint yet, no delivery)", stored.Next, now.Number, b.Next)
	}

	f.start()
	tx := f.transfer(y, 7)
	if _, err := f.sys.Submit(ctx, tx); err != nil {
		t.Fatal(err)
	}
	done := f.waitStatus(tx.ID, engine.StatusCompleted, nil)
	got := f.deliveries(b.ID, 1)
	time.Sleep(300 * time.Millisecond)
	if all, _ := f.store.SubscriptionEvents(ctx, a.ID, 0, 100); len(all) != 3 {
		t.Fatalf("a has %d deliveries after the restart, want its 3", len(all))
	}
	if all, _ := f.store.SubscriptionEvents(ctx, b.ID, 0, 100); len(all) != 1 || got[0].TxHash != *done.Hash || got[0].Seq != 1 {
		t.Fatalf("b has %+v, want the one transfer to y", all)
	}
}

package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestNonceGapIsFilled: the real engine on the simulated chain. An
// account's first nonce is given back below a held one (the store freed
// a's nonce 0 while b holds 1) and the node forgot both: b waits in the
// node's queue behind a nonce nobody will send. The system reports the
// account stuck (System.NonceStuck, the account view's source), the nonce
// doctor fills nonce 0 after DoctorBlocks blocks, b is mined and
// completes, and the account is no longer reported stuck.
func TestNonceGapIsFilled(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	f.sys.Close()
	f.net.RebroadcastBlocks, f.net.DoctorBlocks = 2, 6
	f.cfg.CheckInFlight = 50 * time.Millisecond
	f.start()
	ctx := context.Background()
	f.sim.Pause(true)
	to := randomAddress(t)
	a, b := f.transfer(to, 1), f.transfer(to, 2)
	for _, tx := range []*engine.Transaction{a, b} {
		if _, err := f.sys.Submit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	f.waitStatus(a.ID, engine.StatusSubmitted, nil)
	if got := f.waitStatus(b.ID, engine.StatusSubmitted, nil); *got.Nonce != 1 {
		t.Fatalf("b: nonce %d, want 1", *got.Nonce)
	}
	f.sim.MineEmpty() // the node forgets both
	if err := f.store.ReleaseNonce(ctx, engine.Fence{}, a.ID, &engine.TxError{Code: engine.TxInvalid, Message: "test: nonce given back"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.sim.Pause(false)

	stuck := false
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, ok := f.sys.NonceStuck(f.account.ID, "dev"); ok {
			stuck = true
		}
		tx, err := f.store.TransactionByID(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tx.Status == engine.StatusCompleted {
			if *tx.Nonce != 1 {
				t.Fatalf("b completed with nonce %d, want 1", *tx.Nonce)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b still %s: the gap below it was not filled", tx.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !stuck {
		t.Fatal("the account was never reported stuck")
	}
	nonce, err := f.net.Chain.NonceAt(ctx, f.account.Address, nil)
	if err != nil || nonce != 2 {
		t.Fatalf("chain nonce %d, %v; want 2 (the filler and b)", nonce, err)
	}
	if got := f.balanceOf(to); got.Int64() != 2 {
		t.Fatalf("recipient holds %s, want 2 (b only)", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := f.sys.NonceStuck(f.account.ID, "dev"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the account is still reported stuck with nothing in flight")
		}
	}
}

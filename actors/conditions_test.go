package actors_test

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/evm"
)

// secondAccount adds another funded account of the fixture's user.
func (f *fixture) secondAccount(fund bool) *engine.Account {
	f.t.Helper()
	ctx := context.Background()
	a := f.newAccount(f.user)
	a.Default = false
	if err := f.store.CreateAccount(ctx, a); err != nil {
		f.t.Fatal(err)
	}
	if fund {
		hashes, err := f.faucet.Fund(ctx, []common.Address{a.Address})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, h := range hashes {
			if _, err := evm.WaitMined(ctx, f.net.Chain, h); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	return a
}

// from returns tx sent from account a instead of the fixture's account.
func from(tx *engine.Transaction, a *engine.Account) *engine.Transaction {
	tx.AccountID, tx.From = a.ID, a.Address
	return tx
}

func (f *fixture) submit(txs ...*engine.Transaction) {
	f.t.Helper()
	for _, tx := range txs {
		if _, err := f.sys.Submit(context.Background(), tx); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) get(id string) *engine.Transaction {
	f.t.Helper()
	tx, err := f.store.TransactionByID(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return tx
}

// TestWaitForAssetHoldsWithoutBlocking: a transfer waiting for tokens the
// account does not hold yet stays waiting without a nonce, a later transfer
// of the same account goes ahead, and the waiting one completes once the
// tokens arrive.
func TestWaitForAssetHoldsWithoutBlocking(t *testing.T) {
	backends(t, testWaitForAssetHoldsWithoutBlocking)
}

func testWaitForAssetHoldsWithoutBlocking(t *testing.T, newFixture func(*testing.T, int, time.Duration) *fixture) {
	f := newFixture(t, 4, time.Minute)
	b := f.secondAccount(true)
	to := randomAddress(t)
	waiting := from(f.transfer(to, 500), b)
	waiting.WaitForAsset, waiting.WaitForValue = f.token.Address.Hex(), big.NewInt(500)
	f.submit(waiting)
	f.waitStatus(waiting.ID, engine.StatusWaiting, nil)
	// A later transaction of b without conditions is not blocked: b sends
	// nothing it lacks (a zero-value transfer).
	later := from(f.transfer(to, 0), b)
	f.submit(later)
	done := f.waitAll([]string{later.ID}, 30*time.Second)[0]
	if done.Status != engine.StatusCompleted || *done.Nonce != 0 {
		t.Fatalf("later transfer: %s nonce %v; want completed with nonce 0 (the waiting one took none)", done.Status, done.Nonce)
	}
	if w := f.get(waiting.ID); w.Status != engine.StatusWaiting || w.Nonce != nil {
		t.Fatalf("waiting transfer: %s nonce %v", w.Status, w.Nonce)
	}
	// The tokens arrive: the fixture's account sends 500 to b.
	f.submit(f.transfer(b.Address, 500))
	got := f.waitAll([]string{waiting.ID}, 30*time.Second)[0]
	if got.Status != engine.StatusCompleted || *got.Nonce != 1 {
		t.Fatalf("after funds arrived: %s nonce %v error %+v", got.Status, got.Nonce, got.Error)
	}
	if bal := f.balanceOf(to); bal.Int64() != 500 {
		t.Fatalf("recipient holds %s, want 500", bal)
	}
}

// TestWaitTimeoutExpires: a transaction whose asset never arrives fails
// with expired at its deadline.
func TestWaitTimeoutExpires(t *testing.T) {
	f := newFixture(t, 4, time.Minute)
	b := f.secondAccount(true)
	tx := from(f.transfer(randomAddress(t), 1), b)
	tx.WaitForAsset, tx.WaitForValue = engine.AssetETH, evmtest1000()
	until := time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond) // room to be seen waiting on a loaded machine
	tx.WaitUntil = &until
	f.submit(tx)
	f.waitStatus(tx.ID, engine.StatusWaiting, nil)
	got := f.waitAll([]string{tx.ID}, 15*time.Second)[0]
	if got.Status != engine.StatusFailed || got.Error == nil || got.Error.Code != engine.TxExpired || got.Nonce != nil {
		t.Fatalf("after the deadline: %s %+v nonce %v", got.Status, got.Error, got.Nonce)
	}
}

// evmtest1000 is more ETH than any test account holds.
func evmtest1000() *big.Int {
	return new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(1_000_000_000_000_000_000))
}

// TestDependencyAcrossAccounts: a transaction of account b that depends on
// one of account a is submitted only after that one completed.
func TestDependencyAcrossAccounts(t *testing.T) { backends(t, testDependencyAcrossAccounts) }

func testDependencyAcrossAccounts(t *testing.T, newFixture func(*testing.T, int, time.Duration) *fixture) {
	f := newFixture(t, 4, time.Minute)
	b := f.secondAccount(true)
	// b holds no tokens: its transfer can only succeed after a's reached it.
	first := f.transfer(b.Address, 300)
	second := from(f.transfer(randomAddress(t), 300), b)
	second.DependsOn = []string{first.ID}
	f.submit(first, second) // second arrives while first is still pending
	txs := f.waitAll([]string{first.ID, second.ID}, 30*time.Second)
	for _, tx := range txs {
		if tx.Status != engine.StatusCompleted {
			t.Fatalf("%s ended %s: %+v", tx.ID, tx.Status, tx.Error)
		}
	}
	if !txs[1].Submitted.After(*txs[0].Ended) && !txs[1].Submitted.Equal(*txs[0].Ended) {
		t.Fatalf("dependent submitted at %s, before its dependency completed at %s", txs[1].Submitted, txs[0].Ended)
	}
	if *txs[1].BlockNumber <= *txs[0].BlockNumber {
		t.Fatalf("dependent mined in block %d, dependency in %d", *txs[1].BlockNumber, *txs[0].BlockNumber)
	}
}

// TestFailedDependencyFailsTheChain: when a transaction fails, the ones
// depending on it fail with dependency_failed, down the chain, without
// taking a nonce.
func TestFailedDependencyFailsTheChain(t *testing.T) { backends(t, testFailedDependencyFailsTheChain) }

func testFailedDependencyFailsTheChain(t *testing.T, newFixture func(*testing.T, int, time.Duration) *fixture) {
	f := newFixture(t, 4, time.Minute)
	b := f.secondAccount(true)
	// b holds no tokens: this transfer reverts at estimation.
	bad := from(f.transfer(randomAddress(t), 1), b)
	mid := f.transfer(randomAddress(t), 1)
	mid.DependsOn = []string{bad.ID}
	last := from(f.transfer(randomAddress(t), 0), b)
	last.DependsOn = []string{mid.ID}
	f.submit(mid, last, bad)
	txs := f.waitAll([]string{bad.ID, mid.ID, last.ID}, 30*time.Second)
	if txs[0].Status != engine.StatusFailed || txs[0].Error.Code != engine.TxReverted ||
		!strings.Contains(txs[0].Error.Message, "InsufficientBalance") {
		t.Fatalf("bad: %s %+v; want reverted with the decoded custom error", txs[0].Status, txs[0].Error)
	}
	for _, tx := range txs[1:] {
		if tx.Status != engine.StatusFailed || tx.Error.Code != engine.TxDependencyFailed || tx.Nonce != nil {
			t.Fatalf("%s: %s %+v nonce %v; want dependency_failed without a nonce", tx.ID, tx.Status, tx.Error, tx.Nonce)
		}
	}
	if !strings.Contains(txs[2].Error.Message, mid.ID) {
		t.Fatalf("last's error names %q, want its own dependency %s", txs[2].Error.Message, mid.ID)
	}
}

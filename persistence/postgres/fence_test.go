package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// fenceFixture is a store with one account and one new transaction of it.
type fenceFixture struct {
	s       *postgres.Store
	account *engine.Account
	tx      *engine.Transaction
}

func newFenceFixture(t *testing.T) *fenceFixture {
	t.Helper()
	ctx := context.Background()
	s := mustOpen(t, pgtest.New(t))
	now := time.Now().UTC().Truncate(time.Millisecond)
	u := &engine.User{ID: uuid.NewString(), CallbackSecret: []byte("cs"), Created: now}
	a := &engine.Account{ID: uuid.NewString(), Owner: u.ID, EncryptedKey: []byte{1}, Created: now}
	a.Address[19] = 7
	if err := s.CreateUser(ctx, u, nil, a); err != nil {
		t.Fatal(err)
	}
	tx := &engine.Transaction{ID: uuid.NewString(), Owner: u.ID, AccountID: a.ID, Network: "dev", From: a.Address,
		Status: engine.StatusNew, Created: now}
	if err := s.InsertTransactions(ctx, []*engine.Transaction{tx}); err != nil {
		t.Fatal(err)
	}
	nonce, hash := uint64(5), common.Hash{1}
	tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = &nonce, 21000, &hash, []byte("signed"), &now
	return &fenceFixture{s: s, account: a, tx: tx}
}

// waitForLockWaiter waits until a session of s's database waits for a lock.
func waitForLockWaiter(t *testing.T, s *postgres.Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := postgres.LockWaiters(context.Background(), s)
		if err != nil {
			t.Error(err)
			return
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Error("no session waits for a lock")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFenceRace interleaves a fenced write of one activation with the
// acquisition of the account's lease by the next, both ways round, on two
// connections: either the write commits first and the new activation then
// reads its nonce, or the write finds the new epoch and stores nothing.
func TestFenceRace(t *testing.T) {
	ctx := context.Background()

	t.Run("write first", func(t *testing.T) {
		f := newFenceFixture(t)
		old, err := f.s.AcquireAccountLease(ctx, f.account.ID, "node-a")
		if err != nil {
			t.Fatal(err)
		}
		type acquired struct {
			fence engine.Fence
			err   error
		}
		next := make(chan acquired, 1)
		var once sync.Once
		postgres.SetHook(f.s, func(point string) {
			if point != postgres.HookFenced {
				return
			}
			once.Do(func() {
				// The write holds the lease row: the acquisition waits.
				go func() {
					fence, err := f.s.AcquireAccountLease(ctx, f.account.ID, "node-b")
					next <- acquired{fence, err}
				}()
				waitForLockWaiter(t, f.s)
				select {
				case got := <-next:
					t.Errorf("the acquisition did not wait for the fenced write: %+v", got)
					next <- got
				default:
				}
			})
		})
		if err := f.s.MarkSubmittedMany(ctx, old, []*engine.Transaction{f.tx}); err != nil {
			t.Fatalf("fenced write holding the lease: %v", err)
		}
		got := <-next
		if got.err != nil || got.fence.Epoch != 2 {
			t.Fatalf("acquisition = %+v, %v; want epoch 2", got.fence, got.err)
		}
		// The new activation reads the nonce the old one stored.
		if n, ok, err := f.s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || !ok || n != 5 {
			t.Fatalf("MaxNonce after the acquisition = %d, %v, %v; want 5", n, ok, err)
		}
		if err := f.s.CheckFence(ctx, old); !errors.Is(err, engine.ErrFenced) {
			t.Fatalf("CheckFence of the old activation = %v, want ErrFenced", err)
		}
	})

	t.Run("acquisition first", func(t *testing.T) {
		f := newFenceFixture(t)
		old, err := f.s.AcquireAccountLease(ctx, f.account.ID, "node-a")
		if err != nil {
			t.Fatal(err)
		}
		written := make(chan error, 1)
		var once sync.Once
		postgres.SetHook(f.s, func(point string) {
			if point != postgres.HookAccountLease {
				return
			}
			once.Do(func() {
				// The epoch is incremented, not committed: the write waits
				// for the lease row, then sees the new epoch.
				go func() { written <- f.s.MarkSubmittedMany(ctx, old, []*engine.Transaction{f.tx}) }()
				waitForLockWaiter(t, f.s)
				select {
				case err := <-written:
					t.Errorf("the fenced write did not wait for the acquisition: %v", err)
					written <- err
				default:
				}
			})
		})
		next, err := f.s.AcquireAccountLease(ctx, f.account.ID, "node-b")
		if err != nil || next.Epoch != 2 {
			t.Fatalf("acquisition = %+v, %v; want epoch 2", next, err)
		}
		if err := <-written; !errors.Is(err, engine.ErrFenced) {
			t.Fatalf("fenced write after the acquisition = %v, want ErrFenced", err)
		}
		got, err := f.s.TransactionByID(ctx, f.tx.ID)
		if err != nil || got.Status != engine.StatusNew || got.Nonce != nil {
			t.Fatalf("transaction after the refused write: %+v, %v", got, err)
		}
		if _, ok, err := f.s.MaxNonce(ctx, f.account.ID, "dev"); err != nil || ok {
			t.Fatalf("MaxNonce after the refused write: taken %v, %v", ok, err)
		}
	})
}

// TestFencedQueueWritesWaitForAcquisition: the Sender's writes to a queued
// transaction (FailQueued, MarkWaiting) that race with the acquisition of
// the account's lease by the next activation wait for it, then find the
// new epoch and change nothing.
func TestFencedQueueWritesWaitForAcquisition(t *testing.T) {
	ctx := context.Background()
	writes := []struct {
		name  string
		write func(s *postgres.Store, f engine.Fence, id string) error
	}{
		{"FailQueued", func(s *postgres.Store, f engine.Fence, id string) error {
			return s.FailQueued(ctx, f, id, &engine.TxError{Code: engine.TxReverted, Message: "no"}, time.Now())
		}},
		{"MarkWaiting", func(s *postgres.Store, f engine.Fence, id string) error {
			return s.MarkWaiting(ctx, f, id)
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			f := newFenceFixture(t)
			old, err := f.s.AcquireAccountLease(ctx, f.account.ID, "node-a")
			if err != nil {
				t.Fatal(err)
			}
			written := make(chan error, 1)
			var once sync.Once
			postgres.SetHook(f.s, func(point string) {
				if point != postgres.HookAccountLease {
					return
				}
				once.Do(func() {
					go func() { written <- w.write(f.s, old, f.tx.ID) }()
					waitForLockWaiter(t, f.s)
					select {
					case err := <-written:
						t.Errorf("the fenced write did not wait for the acquisition: %v", err)
						written <- err
					default:
					}
				})
			})
			if next, err := f.s.AcquireAccountLease(ctx, f.account.ID, "node-b"); err != nil || next.Epoch != 2 {
				t.Fatalf("acquisition = %+v, %v; want epoch 2", next, err)
			}
			if err := <-written; !errors.Is(err, engine.ErrFenced) {
				t.Fatalf("fenced write after the acquisition = %v, want ErrFenced", err)
			}
			got, err := f.s.TransactionByID(ctx, f.tx.ID)
			if err != nil || got.Status != engine.StatusNew || got.Error != nil || got.Ended != nil {
				t.Fatalf("transaction after the refused write: %+v, %v", got, err)
			}
		})
	}
}

// TestNetworkFencedWriteFinishesBeforeTakeover: a write of the watcher that
// found its tenure current holds the network's lease row, so another node
// taking the (meanwhile expired) lease waits for it to commit; from then on
// the old tenure's writes are refused.
func TestNetworkFencedWriteFinishesBeforeTakeover(t *testing.T) {
	ctx := context.Background()
	f := newFenceFixture(t)
	const ttl = 500 * time.Millisecond
	held, epoch, err := f.s.AcquireNetworkLease(ctx, "dev", "node-a", ttl)
	if err != nil || !held || epoch != 1 {
		t.Fatalf("AcquireNetworkLease = %v, %d, %v; want held at epoch 1", held, epoch, err)
	}
	old := engine.NetworkFence{Network: "dev", Node: "node-a", Epoch: 1}
	taken := make(chan error, 1)
	var once sync.Once
	postgres.SetHook(f.s, func(point string) {
		if point != postgres.HookNetworkFenced {
			return
		}
		once.Do(func() {
			time.Sleep(ttl + 100*time.Millisecond) // expired while the write runs
			go func() {
				held, epoch, err := f.s.AcquireNetworkLease(ctx, "dev", "node-b", time.Minute)
				if err == nil && (!held || epoch != 2) {
					err = fmt.Errorf("AcquireNetworkLease by node-b = %v, %d; want held at epoch 2", held, epoch)
				}
				taken <- err
			}()
			waitForLockWaiter(t, f.s)
			select {
			case err := <-taken:
				t.Errorf("the takeover did not wait for the fenced write: %v", err)
				taken <- err
			default:
			}
		})
	})
	if err := f.s.SetCursorFenced(ctx, old, 9, common.Hash{9}); err != nil {
		t.Fatalf("the fenced write that held the lease row: %v", err)
	}
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	if got, ok, err := f.s.Cursor(ctx, "dev"); err != nil || !ok || got != 9 {
		t.Fatalf("cursor = %d, %v, %v; want the fenced write's 9", got, ok, err)
	}
	if err := f.s.SetCursorFenced(ctx, old, 10, common.Hash{10}); !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("a write of the old tenure after the takeover = %v, want ErrLeaseLost", err)
	}
}

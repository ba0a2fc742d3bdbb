package engine

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// balanceChain is a fakeChain whose accounts hold balance wei.
type balanceChain struct {
	*fakeChain
	balance *big.Int
}

func (c *balanceChain) BalanceAt(context.Context, common.Address, *big.Int) (*big.Int, error) {
	return new(big.Int).Set(c.balance), nil
}

// poolSpendFixture is a sender whose account holds 25 wei, and three
// transfers of 10 (not stored) that wait for its ETH, sent through a pool
// when pooled.
func poolSpendFixture(t *testing.T, pooled bool) (*fakeChain, *memStore, *Sender, []*Transaction) {
	chain := &fakeChain{}
	store := newMemStore()
	s := newTestSender(t, chain, store, 8)
	s.net.Chain = &balanceChain{fakeChain: chain, balance: big.NewInt(25)}
	s.WithConditions(NewConditions(store, fixedClock{}, slog.New(slog.NewTextHandler(io.Discard, nil))))
	var txs []*Transaction
	for _, id := range []string{"t1", "t2", "t3"} {
		tx := &Transaction{ID: id, AccountID: "acct", Network: "dev", Status: StatusNew, ContractAddress: common.Address{1},
			Data: []byte{0xa9, 0x05, 0x9c, 0xbb}, WaitForAsset: AssetETH, WaitForValue: big.NewInt(10)}
		if pooled {
			tx.PoolID, tx.PoolAsset, tx.PoolValue = "p1", AssetETH, big.NewInt(10)
		}
		txs = append(txs, tx)
	}
	return chain, store, s, txs
}

// TestTopUpReleasesWhatItCovers: three transfers of 10 sent through a pool
// wait for their member's ETH; a top-up leaves it 25: one pump sends two
// (the second counts what the first moves) and holds the third back,
// where each alone would see enough. A user's own waitForAsset (no pool)
// keeps counting the whole balance.
func TestTopUpReleasesWhatItCovers(t *testing.T) {
	for _, pooled := range []bool{true, false} {
		chain, store, s, txs := poolSpendFixture(t, pooled)
		if err := store.InsertTransactions(context.Background(), txs); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pump(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := 2
		if !pooled {
			want = 3
		}
		if len(chain.sent) != want {
			t.Fatalf("pooled %v: %d sent with 25 wei for three transfers of 10, want %d", pooled, len(chain.sent), want)
		}
		if pooled && store.txs["t3"].Status != StatusWaiting {
			t.Fatalf("the third transfer is %s, want waiting for the next top-up", store.txs["t3"].Status)
		}
	}
}

// TestNonceBookHoldsTheWindow: a running sender's window is in the nonce
// book (a pool's GET shows its members'); it leaves when the actor stops.
func TestNonceBookHoldsTheWindow(t *testing.T) {
	chain := &fakeChain{}
	s, _ := windowSender(t, chain, 4, 2)
	book := NewNonceBook()
	s.WithNonceBook(book)
	if _, err := s.Pump(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := book.Window("acct", "dev"); w != s.Window() || w == 0 {
		t.Fatalf("book's window %d, sender's %d", w, s.Window())
	}
	s.ForgetLoad()
	if w := book.Window("acct", "dev"); w != 0 {
		t.Fatalf("book's window %d after the sender stopped, want 0", w)
	}
}

// TestPoolTransferCountsInFlight: a member's pool transfers in flight
// (submitted, not mined) still hold their value: with 25 wei and two
// transfers of 10 in flight, a third released to the queue again (a
// sweep) is held back, not sent to revert; a user's own waitForAsset
// (no pool) keeps counting the whole balance.
func TestPoolTransferCountsInFlight(t *testing.T) {
	for _, pooled := range []bool{true, false} {
		chain, store, s, txs := poolSpendFixture(t, pooled)
		ctx := context.Background()
		if err := store.InsertTransactions(ctx, txs[:2]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pump(ctx); err != nil {
			t.Fatal(err)
		}
		if len(chain.sent) != 2 {
			t.Fatalf("pooled %v: %d sent of the first two, want 2", pooled, len(chain.sent))
		}
		// Both in flight (the fake node mines nothing); the third arrives.
		if err := store.InsertTransactions(ctx, txs[2:]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Pump(ctx); err != nil {
			t.Fatal(err)
		}
		want := 2
		if !pooled {
			want = 3
		}
		if len(chain.sent) != want {
			t.Fatalf("pooled %v: %d sent with 25 wei and 20 in flight, want %d", pooled, len(chain.sent), want)
		}
		if pooled && store.txs["t3"].Status != StatusWaiting {
			t.Fatalf("the third transfer is %s, want waiting", store.txs["t3"].Status)
		}
	}
}

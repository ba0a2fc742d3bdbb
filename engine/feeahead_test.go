package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
)

// TestFeeCapAheadCoversTheBlocksWaited: a transaction with no gas ahead
// gets MaxFeePerGas's cap; each full block of gas before it raises the cap
// by the base fee's largest step (1/8), up to maxBlocksAhead blocks.
func TestFeeCapAheadCoversTheBlocksWaited(t *testing.T) {
	base, tip := big.NewInt(1_000_000_000), big.NewInt(7)
	const block = 60_000_000
	if got, want := feeCapAhead(base, tip, 0, block), MaxFeePerGas(base, tip); got.Cmp(want) != 0 {
		t.Fatalf("no gas ahead: cap %s, want %s", got, want)
	}
	if got, want := feeCapAhead(base, tip, block-1, block), MaxFeePerGas(base, tip); got.Cmp(want) != 0 {
		t.Fatalf("less than a block ahead: cap %s, want %s", got, want)
	}
	// 10 blocks ahead (4,080 transfers of 146,715 gas): 1.125^10 ≈ 3.25.
	got := feeCapAhead(base, tip, 10*block, block)
	lo, hi := MaxFeePerGas(big.NewInt(3_240_000_000), tip), MaxFeePerGas(big.NewInt(3_250_000_000), tip)
	if got.Cmp(lo) < 0 || got.Cmp(hi) > 0 {
		t.Fatalf("10 blocks ahead: cap %s, want between %s and %s", got, lo, hi)
	}
	if a, b := feeCapAhead(base, tip, 1000*block, block), feeCapAhead(base, tip, maxBlocksAhead*block, block); a.Cmp(b) != 0 {
		t.Fatalf("1,000 blocks ahead: cap %s, want the cap of %d blocks %s", a, maxBlocksAhead, b)
	}
	if got, want := feeCapAhead(base, tip, 10*block, 0), MaxFeePerGas(base, tip); got.Cmp(want) != 0 {
		t.Fatalf("unknown block gas: cap %s, want %s", got, want)
	}
}

// TestBacklogCountsOtherAccountsRecently: an account's fee cap counts what
// the other accounts of the network noted in flight, not its own, and
// forgets a note that is cleared or older than backlogTTL.
func TestBacklogCountsOtherAccountsRecently(t *testing.T) {
	var n Network
	now := time.Unix(1_700_000_000, 0)
	n.noteBacklog("a", 100, now)
	n.noteBacklog("b", 20, now)
	n.noteBacklog("c", 3, now.Add(-backlogTTL-time.Second))
	if got := n.backlogAhead("a", now); got != 20 {
		t.Fatalf("ahead of a: %d, want b's 20 (c's note is stale)", got)
	}
	if got := n.backlogAhead("z", now); got != 120 {
		t.Fatalf("ahead of z: %d, want 120", got)
	}
	n.noteBacklog("b", 0, now)
	if got := n.backlogAhead("a", now); got != 0 {
		t.Fatalf("ahead of a after b cleared: %d, want 0", got)
	}
	if _, ok := n.backlog.notes["c"]; ok {
		t.Fatal("the stale note of c was kept after a prune")
	}
}

// TestRaisedCapUnpaidKeepsCapsWithinTheBalance: a refusal for funds of a
// transaction signed with a raised cap sends it back to the queue and keeps
// the account's later caps within the balance the node reported (never
// below the plain cap); a refusal of a cap within that is the account's
// lack of funds (the transaction fails as before), and so is a plain cap's.
func TestRaisedCapUnpaidKeepsCapsWithinTheBalance(t *testing.T) {
	s := &Sender{net: &Network{}, log: slog.New(slog.DiscardHandler)}
	fees := feeQuote{baseFee: big.NewInt(1_000_000_000), tip: big.NewInt(1), blockGas: 60_000_000}
	plain := MaxFeePerGas(fees.baseFee, fees.tip)
	sign := func(p plannedTx) *types.Transaction {
		return types.NewTx(&types.DynamicFeeTx{GasFeeCap: s.feeCap(p, fees), GasTipCap: fees.tip, Gas: p.gas})
	}
	refusal := func(balance string) error {
		return fmt.Errorf("insufficient funds for gas * price + value: balance %s, tx cost 1, overshot 1", balance)
	}
	if s.raisedCapUnpaid(sign(plannedTx{gas: 50_000}), refusal("1"), fees) {
		t.Fatal("a plain cap's refusal was taken for a raised cap's")
	}
	ahead := plannedTx{gas: 50_000, ahead: 10 * 60_000_000} // about 3.25 × the base fee, doubled
	// The balance pays 50,000 gas at 4 gwei: more than the plain cap (2 gwei), less than the raised.
	if !s.raisedCapUnpaid(sign(ahead), refusal("200000000000000"), fees) {
		t.Fatal("a raised cap's refusal did not send the transaction back")
	}
	if got := s.feeCap(ahead, fees); got.Cmp(big.NewInt(4_000_000_000)) != 0 {
		t.Fatalf("cap after the refusal %s, want the balance's 4 gwei", got)
	}
	if s.raisedCapUnpaid(sign(ahead), refusal("100000000000000"), fees) {
		t.Fatal("a cap within the learned limit, refused, went back to the queue again")
	}
	// A node that does not say the balance: the plain cap from then on.
	s.capLimit = nil
	if !s.raisedCapUnpaid(sign(ahead), errors.New("insufficient funds for gas * price + value"), fees) {
		t.Fatal("a raised cap's refusal without amounts did not send the transaction back")
	}
	if got := s.feeCap(ahead, fees); got.Cmp(plain) != 0 {
		t.Fatalf("cap after a refusal without amounts %s, want the plain %s", got, plain)
	}
}

// TestAwaitsTopUp: a transfer through a pool waits for its member's top-up
// when the node refuses it for funds, until its waitTimeout; the
// treasury's own top-ups and transfers outside pools do not.
func TestAwaitsTopUp(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Second), now.Add(-time.Second)
	for _, c := range []struct {
		tx   Transaction
		want bool
	}{
		{Transaction{PoolID: "p"}, true},
		{Transaction{PoolID: "p", OrderingKey: "invoice-7"}, true},
		{Transaction{PoolID: "p", WaitUntil: &later}, true},
		{Transaction{PoolID: "p", WaitUntil: &earlier}, false},
		{Transaction{PoolID: "p", WaitUntil: &now}, false},
		{Transaction{PoolID: "p", OrderingKey: TopUpKeyPrefix + "m:ETH"}, false},
		{Transaction{}, false},
	} {
		if got := awaitsTopUp(&c.tx, now); got != c.want {
			t.Errorf("awaitsTopUp(pool %q, key %q, wait until %v) = %v, want %v", c.tx.PoolID, c.tx.OrderingKey, c.tx.WaitUntil, got, c.want)
		}
	}
}

// BenchmarkBacklogAhead is a pump's read of its network's backlog while
// 10,000 accounts have transactions in flight (10,000 × 1's shape).
func BenchmarkBacklogAhead(b *testing.B) {
	var n Network
	now := time.Unix(1_700_000_000, 0)
	for i := range 10_000 {
		n.noteBacklog(fmt.Sprint("account-", i), 39_027, now)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n.backlogAhead("account-7", now.Add(time.Duration(i)*time.Millisecond))
	}
}

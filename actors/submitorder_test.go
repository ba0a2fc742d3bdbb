package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
)

// TestSubmitInOrderKeepsTheOrder: transactions handed to SubmitInOrder
// take their nonces in the order given (the
// pool keeper relies on it: the busiest members' top-ups first, a member's
// gas before its token).
func TestSubmitInOrderKeepsTheOrder(t *testing.T) {
	f := newFixture(t, 64, time.Minute)
	const n = 12
	var ids []string
	txs := make([]*engine.Transaction, 0, n)
	for i := 0; i < n; i++ {
		tx := f.transfer(randomAddress(t), int64(i+1))
		txs = append(txs, tx)
		ids = append(ids, tx.ID)
	}
	for i, err := range f.sys.SubmitInOrder(context.Background(), txs) {
		if err != nil {
			t.Fatalf("tx %d: %v", i, err)
		}
	}
	for i, tx := range f.waitAll(ids, 30*time.Second) {
		if tx.Nonce == nil || *tx.Nonce != uint64(i) {
			t.Fatalf("tx %d has nonce %v, want %d: the order given", i, tx.Nonce, i)
		}
	}
}

package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
)

// BenchmarkReadyOfOneAccount measures the submit stage's read of one
// account's ready transactions (ReadyTransactionsOf with one account and
// one new transaction): what a pump reads in the breadth shape (400 × 10),
// about once per transfer, a statement parsed at each run.
func BenchmarkReadyOfOneAccount(b *testing.B) {
	ctx := context.Background()
	s := mustOpenB(b, filepath.Join(b.TempDir(), "txengine.db"))
	now := time.Now().UTC()
	u := &engine.User{ID: "u1", Operator: true, CallbackSecret: []byte("cs"), Created: now}
	a := &engine.Account{ID: "a1", Owner: "u1", EncryptedKey: []byte{1, 2}, Created: now}
	a.Address[19] = 1
	if err := s.CreateUser(ctx, u, keystore.HashToken("tok"), a); err != nil {
		b.Fatal(err)
	}
	txs := []*engine.Transaction{{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", 1), Owner: "u1", AccountID: "a1",
		Network: "dev", From: a.Address, Method: "transfer", Status: engine.StatusNew, Created: now}}
	if err := s.InsertTransactions(ctx, txs); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		got, err := s.ReadyTransactionsOf(ctx, "dev", map[string]int{"a1": 512})
		if err != nil || len(got["a1"]) != 1 {
			b.Fatalf("ready: %v %v", got, err)
		}
	}
}

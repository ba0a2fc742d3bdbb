package sqlite_test

import (
	"context"
	"testing"
)

// BenchmarkReadyOfOneAccount measures the submit stage's read of one
// account's ready transactions (ReadyTransactionsOf with one account and
// one new transaction): what a pump reads in the breadth shape (400 × 10),
// about once per transfer, a statement parsed at each run.
func BenchmarkReadyOfOneAccount(b *testing.B) {
	s, accts := benchStore(b, 1)
	n := 0
	newOfEach(b, s, accts, &n)
	id := accts[0].ID
	for b.Loop() {
		got, err := s.ReadyTransactionsOf(context.Background(), "dev", map[string]int{id: 512})
		if err != nil || len(got[id]) != 1 {
			b.Fatalf("ready: %v %v", got, err)
		}
	}
}

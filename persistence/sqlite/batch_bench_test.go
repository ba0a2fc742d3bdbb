package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/sqlite"
)

// BenchmarkInsertTransactions500 measures the account actor's group commit:
// one InsertTransactions of 500 new transactions (a full engine.maxBatch).
// Compare runs with benchstat.
func BenchmarkInsertTransactions500(b *testing.B) {
	ctx := context.Background()
	s, accts := benchStore(b, 1)
	a := accts[0]
	now := time.Now().UTC()
	const batch = 500
	n := 0
	for b.Loop() {
		txs := make([]*engine.Transaction, batch)
		for i := range txs {
			n++
			txs[i] = &engine.Transaction{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Owner: "u1", AccountID: a.ID,
				Network: "dev", From: a.Address, Method: "transfer", Status: engine.StatusNew, Created: now}
		}
		if err := s.InsertTransactions(ctx, txs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
}

func mustOpenB(b *testing.B, path string) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatalf("open %s: %v", path, err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

package sqlite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

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

// BenchmarkInsertIntoLargeTable measures a group commit of 64 new
// transactions (one account's burst from 64 clients) into a table that
// already holds 50,000, with random (version 4) ids and with the
// time-ordered ids the engine makes (engine.NewID): a random
// id lands on a random leaf page of the unique index on id, so each row
// of a commit dirties a page of its own once the table is large.
//
//	go test -run '^$' -bench InsertIntoLargeTable -benchtime 400x ./persistence/sqlite/
func BenchmarkInsertIntoLargeTable(b *testing.B) {
	for _, ids := range []struct {
		name string
		new  func() string
	}{{"ids=random", uuid.NewString}, {"ids=ordered", engine.NewID}} {
		b.Run(ids.name, func(b *testing.B) {
			ctx := context.Background()
			s, accts := benchStore(b, 1)
			a := accts[0]
			now := time.Now().UTC()
			rows := func(n int) []*engine.Transaction {
				txs := make([]*engine.Transaction, n)
				for i := range txs {
					txs[i] = &engine.Transaction{ID: ids.new(), Owner: "u1", AccountID: a.ID, Network: "dev", From: a.Address,
						Method: "transfer", Parameters: []any{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "1000"},
						Status: engine.StatusNew, Created: now}
				}
				return txs
			}
			for range 100 { // 50,000 rows already there
				if err := s.InsertTransactions(ctx, rows(500)); err != nil {
					b.Fatal(err)
				}
			}
			const batch = 64
			for b.Loop() {
				b.StopTimer()
				txs := rows(batch)
				b.StartTimer()
				if err := s.InsertTransactions(ctx, txs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
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

// BenchmarkInsertWithKeys measures a group commit of 64 new transactions
// with and without an Idempotency-Key record on each (64 requests, one
// commit): what the keys add to the one writer's commit.
//
//	go test -run '^$' -bench InsertWithKeys -count 5 ./persistence/sqlite/
func BenchmarkInsertWithKeys(b *testing.B) {
	for _, keys := range []bool{false, true} {
		b.Run(fmt.Sprintf("keys=%v", keys), func(b *testing.B) {
			ctx := context.Background()
			s, accts := benchStore(b, 1)
			a := accts[0]
			now := time.Now().UTC()
			const batch = 64
			for b.Loop() {
				b.StopTimer()
				txs := make([]*engine.Transaction, batch)
				for i := range txs {
					id := engine.NewID()
					txs[i] = &engine.Transaction{ID: id, Owner: "u1", AccountID: a.ID, Network: "dev", From: a.Address,
						Method: "transfer", Status: engine.StatusNew, Created: now}
					if keys {
						txs[i].Idempotency = &engine.IdempotencyRecord{UserID: "u1", Key: "key-" + id, RequestHash: "h",
							Status: 202, Body: []byte(`{"id":"` + id + `"}`), Created: now}
					}
				}
				b.StartTimer()
				if err := s.InsertTransactions(ctx, txs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

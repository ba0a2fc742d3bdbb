package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// benchRows is the number of rows per call of the bulk write benchmarks.
const benchRows = 1000

// benchAccount creates a user and its account for the benchmarks.
func benchAccount(b testing.TB, s *postgres.Store) *engine.Account {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	u := &engine.User{ID: uuid.NewString(), CallbackSecret: []byte("secret"), Created: now}
	if err := s.CreateUser(ctx, u, nil, nil); err != nil {
		b.Fatal(err)
	}
	var addr common.Address
	_, _ = rand.Read(addr[:])
	a := &engine.Account{ID: uuid.NewString(), Owner: u.ID, Address: addr, Default: true,
		EncryptedKey: []byte("sealed"), Created: now}
	if err := s.CreateAccount(ctx, a); err != nil {
		b.Fatal(err)
	}
	return a
}

// benchNew inserts n new transactions of a, each with one callback URL,
// signed from nonce on: nonce, hash, raw bytes and submitted time set but
// not stored.
func benchNew(b testing.TB, s *postgres.Store, a *engine.Account, nonce uint64, n int) []*engine.Transaction {
	b.Helper()
	now := time.Now().UTC()
	txs := make([]*engine.Transaction, n)
	for i := range txs {
		txs[i] = &engine.Transaction{ID: uuid.NewString(), Owner: a.Owner, AccountID: a.ID, Network: "dev",
			From: a.Address, Method: "transfer", Status: engine.StatusNew, Created: now,
			Callbacks: []string{"http://127.0.0.1:1/cb"}}
	}
	if err := s.InsertTransactions(context.Background(), txs); err != nil {
		b.Fatal(err)
	}
	for i, tx := range txs {
		nc := nonce + uint64(i)
		var h common.Hash
		_, _ = rand.Read(h[:])
		tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = &nc, 21000, &h, []byte(fmt.Sprintf("signed-%d", nc)), &now
	}
	return txs
}

// BenchmarkMarkSubmittedGroups marks benchRows new transactions of one
// account submitted per call.
func BenchmarkMarkSubmittedGroups(b *testing.B) {
	s := mustOpen(b, pgtest.New(b))
	a := benchAccount(b, s)
	ctx := context.Background()
	var nonce uint64
	for b.Loop() {
		b.StopTimer()
		txs := benchNew(b, s, a, nonce, benchRows)
		nonce += benchRows
		b.StartTimer()
		if err := s.MarkSubmittedGroups(ctx, []engine.SubmitGroup{{Txs: txs}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/row")
}

// BenchmarkMarkMined completes benchRows submitted transactions (one
// callback URL each) per call.
func BenchmarkMarkMined(b *testing.B) {
	s := mustOpen(b, pgtest.New(b))
	a := benchAccount(b, s)
	ctx := context.Background()
	var nonce uint64
	for b.Loop() {
		b.StopTimer()
		txs := benchNew(b, s, a, nonce, benchRows)
		nonce += benchRows
		if err := s.MarkSubmittedGroups(ctx, []engine.SubmitGroup{{Txs: txs}}); err != nil {
			b.Fatal(err)
		}
		outcomes := make([]engine.Mined, len(txs))
		for i, tx := range txs {
			outcomes[i] = engine.Mined{ID: tx.ID, Status: engine.StatusCompleted, BlockNumber: nonce, BlockHash: *tx.Hash,
				GasUsed: 21000, Events: []engine.Event{}, Ended: time.Now().UTC()}
		}
		b.StartTimer()
		if err := s.MarkMined(ctx, outcomes); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/row")
}

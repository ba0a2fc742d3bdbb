package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
)

// stageAccounts is how many accounts one merged call of the submit stage
// serves in the benchmarks below: in 400 × 10 on the embedded default a
// merged write held about 26 rows.
const stageAccounts = 32

// benchStore opens a store with n accounts of one user.
func benchStore(b *testing.B, n int) (*sqlite.Store, []*engine.Account) {
	ctx := context.Background()
	s := mustOpenB(b, filepath.Join(b.TempDir(), "txengine.db"))
	now := time.Now().UTC()
	u := &engine.User{ID: "u1", Operator: true, CallbackSecret: []byte("cs"), Created: now}
	accts := make([]*engine.Account, n)
	for i := range accts {
		a := &engine.Account{ID: fmt.Sprintf("a%d", i), Owner: "u1", EncryptedKey: []byte{1, 2}, Created: now}
		a.Address[18], a.Address[19] = byte(i>>8), byte(i)+1
		accts[i] = a
	}
	if err := s.CreateUser(ctx, u, keystore.HashToken("tok"), accts[0]); err != nil {
		b.Fatal(err)
	}
	for _, a := range accts[1:] {
		if err := s.CreateAccount(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	return s, accts
}

// newOfEach inserts one new transaction per account (ids from *n on).
func newOfEach(b *testing.B, s *sqlite.Store, accts []*engine.Account, n *int) []*engine.Transaction {
	now := time.Now().UTC()
	txs := make([]*engine.Transaction, len(accts))
	for i, a := range accts {
		*n++
		txs[i] = &engine.Transaction{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", *n), Owner: "u1", AccountID: a.ID,
			Network: "dev", From: a.Address, Method: "transfer", Status: engine.StatusNew, Created: now}
	}
	if err := s.InsertTransactions(context.Background(), txs); err != nil {
		b.Fatal(err)
	}
	return txs
}

// BenchmarkReadyOfBreadth measures one merged read of the ready
// transactions of stageAccounts accounts, one each: the read of the
// breadth shape's pumps.
func BenchmarkReadyOfBreadth(b *testing.B) {
	s, accts := benchStore(b, stageAccounts)
	n := 0
	newOfEach(b, s, accts, &n)
	limits := map[string]int{}
	for _, a := range accts {
		limits[a.ID] = 64
	}
	for b.Loop() {
		got, err := s.ReadyTransactionsOf(context.Background(), "dev", limits)
		if err != nil || len(got) != len(accts) {
			b.Fatalf("ready: %d accounts, %v", len(got), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(accts)), "ns/account")
}

// BenchmarkMarkSubmittedBreadth measures one merged write of the submit
// stage: stageAccounts groups of one transaction each marked submitted (the
// row and its attempt), one database transaction.
func BenchmarkMarkSubmittedBreadth(b *testing.B) {
	s, accts := benchStore(b, stageAccounts)
	n := 0
	for b.Loop() {
		b.StopTimer()
		txs := newOfEach(b, s, accts, &n)
		groups := make([]engine.SubmitGroup, len(txs))
		now := time.Now().UTC()
		for i, tx := range txs {
			nonce, gas := uint64(n), uint64(50_000)
			h := common.BigToHash(common.Big1)
			h[0] = byte(n)
			h[1] = byte(i)
			tx.Nonce, tx.GasLimit, tx.Hash, tx.RawTx, tx.Submitted = &nonce, gas, &h, []byte{1, 2, 3}, &now
			groups[i] = engine.SubmitGroup{Txs: []*engine.Transaction{tx}}
		}
		b.StartTimer()
		if err := s.MarkSubmittedGroups(context.Background(), groups); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(accts)), "ns/row")
}

// BenchmarkListReads measures the merged reads whose condition is the
// dialect's List (a column among many values): AccountsByID and MaxNonces
// of the accounts of one pump round of the cold shape (10,000 × 1: each
// account pumps once), 1,000 accounts of 10,000.
//
//	go test -run '^$' -bench ListReads -count 5 ./persistence/sqlite/
func BenchmarkListReads(b *testing.B) {
	s, accts := benchStore(b, 10_000)
	ids := make([]string, 0, 1000)
	for i := 0; i < len(accts); i += 10 {
		ids = append(ids, accts[i].ID)
	}
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("accounts=%d", n), func(b *testing.B) {
			for b.Loop() {
				got, err := s.AccountsByID(context.Background(), ids[:n])
				if err != nil || len(got) != n {
					b.Fatalf("AccountsByID: %d, %v", len(got), err)
				}
				if _, err := s.MaxNonces(context.Background(), "dev", ids[:n]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/account")
		})
	}
}

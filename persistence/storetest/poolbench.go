package storetest

import (
	"context"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/txengine/txengine/engine"
)

// Sizes of BenchPoolLoads: a 32-member pool with 10,000 pending
// transactions and twice as many ended ones (which the partial indexes of
// migration 0017 leave out).
const (
	benchPoolMembers = 32
	benchPoolPending = 10_000
	benchPoolEnded   = 20_000
)

// BenchPoolLoads measures PoolLoads (and OrderingKeyMember, PendingPools)
// of a 32-member pool holding 10,000 pending transactions (new, waiting
// and submitted, valued in ETH and a token) and 20,000 ended ones, on s.
// Each database's package runs it on a fresh store.
func BenchPoolLoads(b *testing.B, s engine.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := benchPool(ctx, b, s)
	b.Run("PoolLoads", func(b *testing.B) {
		for b.Loop() {
			loads, err := s.PoolLoads(ctx, p.ID)
			if err != nil {
				b.Fatal(err)
			}
			if len(loads) != benchPoolMembers || loads[0].Queued+loads[0].InFlight == 0 {
				b.Fatalf("loads = %+v", loads[0])
			}
		}
	})
	b.Run("OrderingKeyMember", func(b *testing.B) {
		for b.Loop() {
			if _, ok, err := s.OrderingKeyMember(ctx, p.ID, "key-7"); err != nil || !ok {
				b.Fatalf("OrderingKeyMember = %v, %v", ok, err)
			}
		}
	})
	b.Run("PendingPools", func(b *testing.B) {
		for b.Loop() {
			if ids, err := s.PendingPools(ctx, "dev"); err != nil || len(ids) != 1 {
				b.Fatalf("PendingPools = %v, %v", ids, err)
			}
		}
	})
}

// benchPool creates the pool of BenchPoolLoads with its transactions.
func benchPool(ctx context.Context, b *testing.B, s engine.Store) *engine.Pool {
	b.Helper()
	now := time.Now().UTC()
	u := &engine.User{ID: uuid.NewString(), CallbackSecret: []byte("secret"), Created: now}
	if err := s.CreateUser(ctx, u, nil, nil); err != nil {
		b.Fatal(err)
	}
	p := &engine.Pool{ID: uuid.NewString(), Owner: u.ID, Name: "bench", Network: "dev", Size: benchPoolMembers, Created: now}
	members := poolMembers(b, u.ID, 0, benchPoolMembers, nil)
	if err := s.CreatePool(ctx, p, members); err != nil {
		b.Fatal(err)
	}
	const token = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
	statuses := []engine.TxStatus{engine.StatusNew, engine.StatusNew, engine.StatusWaiting, engine.StatusSubmitted}
	var batch []*engine.Transaction
	for i := 0; i < benchPoolPending+benchPoolEnded; i++ {
		m := members[i%benchPoolMembers]
		tx := fixture{user: u, account: m}.tx("dev", 0)
		tx.ID, tx.PoolID, tx.PoolAsset, tx.PoolValue = uuid.NewString(), p.ID, "ETH", big.NewInt(int64(i))
		tx.OrderingKey = fmt.Sprintf("key-%d", i%100)
		if i%2 == 1 {
			tx.PoolAsset = token
		}
		if i < benchPoolEnded {
			tx.Status = engine.StatusCompleted
		} else {
			tx.Status = statuses[i%len(statuses)]
		}
		if tx.Status == engine.StatusSubmitted || tx.Status == engine.StatusCompleted {
			tx.Nonce = ptr(uint64(i / benchPoolMembers))
		}
		batch = append(batch, tx)
		if len(batch) == 500 {
			if err := s.InsertTransactions(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = nil
		}
	}
	return p
}

package postgres_test

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
	"github.com/txengine/txengine/persistence/storetest"
)

func TestMain(m *testing.M) { pgtest.RunMain(m) }

// mustOpen opens a store on url and closes it at the end of the test.
func mustOpen(tb testing.TB, url string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) engine.Store {
		return mustOpen(t, pgtest.New(t))
	})
}

// wantMigrated fails unless every embedded migration is recorded once.
func wantMigrated(t *testing.T, s *postgres.Store) {
	t.Helper()
	got, err := postgres.AppliedMigrations(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := postgres.EmbeddedMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("schema_migrations = %v, want %v", got, want)
	}
}

func TestMigrationsIdempotent(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	u := &engine.User{ID: "u1", Operator: true, CallbackSecret: []byte("cs"), Created: created}
	a := &engine.Account{ID: "a1", Owner: "u1", EncryptedKey: []byte{1, 2}, Created: created}
	a.Address[19] = 1
	if err := s.CreateUser(ctx, u, keystore.HashToken("tok"), a); err != nil {
		t.Fatal(err)
	}
	tx := &engine.Transaction{ID: "t1", Owner: "u1", AccountID: "a1", Network: "dev", From: a.Address, Status: engine.StatusNew, Created: created}
	if err := s.InsertTransactions(ctx, []*engine.Transaction{tx}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, url) // migrations run again: a no-op
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	wantMigrated(t, s)
	got, err := s.UserByTokenHash(ctx, keystore.HashToken("tok"))
	if err != nil || got.ID != "u1" || !got.Created.Equal(created) {
		t.Fatalf("user after reopen = %+v, %v", got, err)
	}
	tx2 := &engine.Transaction{ID: "t2", Owner: "u1", AccountID: "a1", Network: "dev", From: a.Address, Status: engine.StatusNew, Created: created}
	if err := s.InsertTransactions(ctx, []*engine.Transaction{tx2}); err != nil {
		t.Fatal(err)
	}
	ready, err := s.ReadyTransactions(ctx, "a1", "dev", 10)
	if err != nil || len(ready) != 2 || ready[0].ID != "t1" || ready[1].ID != "t2" {
		t.Fatalf("ready after reopen = %v, %v", ready, err)
	}
}

// TestConcurrentOpen starts several stores at once on a fresh database, as
// replicas of the service starting together do: the advisory lock lets one
// apply the migrations while the others wait, and all of them succeed.
func TestConcurrentOpen(t *testing.T) {
	const n = 4
	url := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		s   *postgres.Store
		err error
	}
	results := make(chan result, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			s, err := postgres.Open(ctx, url)
			results <- result{s, err}
		}()
	}
	close(start)
	var stores []*postgres.Store
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("concurrent Open: %v", r.err)
			continue
		}
		stores = append(stores, r.s)
	}
	for _, s := range stores {
		t.Cleanup(func() { _ = s.Close() })
	}
	if t.Failed() {
		return
	}
	wantMigrated(t, stores[0])
	if err := stores[n-1].SetCursor(ctx, "dev", 1, common.Hash{1}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBadURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"); err == nil {
		s.Close()
		t.Fatal("Open of an unreachable server succeeded")
	}
}

// TestAmountsAndLimits checks the PostgreSQL encodings at their edges:
// amounts up to 2^256-1 in NUMERIC(78,0), BIGINT counters refusing values
// above 2^63-1 with an error rather than wrapping.
func TestAmountsAndLimits(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, pgtest.New(t))
	u := &engine.User{ID: "u", Created: time.Now()}
	a := &engine.Account{ID: "a", Owner: "u", Address: common.HexToAddress("0x01"), Created: time.Now()}
	if err := s.CreateUser(ctx, u, nil, a); err != nil {
		t.Fatal(err)
	}
	max256 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	tx := &engine.Transaction{ID: "t", Owner: "u", AccountID: "a", Network: "dev", Status: engine.StatusNew,
		Value: max256, WaitForValue: big.NewInt(0), Created: time.Now()}
	if err := s.InsertTransactions(ctx, []*engine.Transaction{tx}); err != nil {
		t.Fatal(err)
	}
	got, err := s.TransactionByID(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if got.Value.Cmp(max256) != 0 || got.WaitForValue.Sign() != 0 {
		t.Fatalf("amounts = %v, %v", got.Value, got.WaitForValue)
	}
	huge := uint64(1) << 63
	bad := &engine.Transaction{ID: "t2", Owner: "u", AccountID: "a", Network: "dev", Status: engine.StatusNew,
		Nonce: &huge, Created: time.Now()}
	if err := s.InsertTransactions(ctx, []*engine.Transaction{bad}); err == nil {
		t.Fatal("nonce 2^63 was accepted")
	}
}

// benchBatches are the sizes of one group commit in
// BenchmarkInsertTransactions: lone requests (1), 64 clients (about 32 a
// batch, measured) and a burst (500).
var benchBatches = []int{1, 32, 500}

// BenchmarkInsertTransactions measures one group commit of ERC-20
// transfers. InsertTransactions streams rows with COPY, chosen over
// multi-row INSERTs with this benchmark (figures in the doc comment of
// InsertTransactions).
//
//	go test -run '^$' -bench InsertTransactions -benchtime 200x ./persistence/postgres/
func BenchmarkInsertTransactions(b *testing.B) {
	for _, size := range benchBatches {
		benchInsert(b, size, func(b *testing.B) string { return pgtest.New(b) })
	}
}

// BenchmarkInsertTransactionsDurable is BenchmarkInsertTransactions on a
// cluster of its own with PostgreSQL's durability defaults (fsync and
// synchronous commit on), as `make bench` runs P1: a commit waits for
// the disk, and round trips count.
func BenchmarkInsertTransactionsDurable(b *testing.B) {
	c := pgtest.StartDurableCluster(b)
	for _, size := range benchBatches {
		benchInsert(b, size, func(*testing.B) string { return c.URL() })
	}
}

// benchInsert runs one case of BenchmarkInsertTransactions on the database
// that db returns.
func benchInsert(b *testing.B, size int, db func(b *testing.B) string) {
	b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
		ctx := context.Background()
		s := mustOpen(b, db(b))
		u := &engine.User{ID: uuid.NewString(), Created: time.Now()}
		a := &engine.Account{ID: uuid.NewString(), Owner: u.ID, Address: common.BytesToAddress(uuid.New().NodeID()), Created: time.Now()}
		if err := s.CreateUser(ctx, u, nil, a); err != nil {
			b.Fatal(err)
		}
		token := common.HexToAddress("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
		batch := make([]*engine.Transaction, size)
		rows := 0
		for b.Loop() {
			b.StopTimer()
			for i := range batch {
				batch[i] = &engine.Transaction{
					ID: uuid.NewString(), Owner: u.ID, AccountID: a.ID, Network: "dev", From: a.Address,
					ContractID: "c1", ContractAddress: token, ContractName: "Token", ContractBWType: engine.TypeERC20,
					Method:     "transfer",
					Parameters: []any{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "1000000000000000000"},
					Data:       make([]byte, 68),
					Status:     engine.StatusNew,
					Created:    time.Now(),
					Callbacks:  []string{"https://example.com/cb"},
				}
			}
			b.StartTimer()
			if err := s.InsertTransactions(ctx, batch); err != nil {
				b.Fatal(err)
			}
			rows += len(batch)
		}
		b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	})
}

// TestListTransactionsUsesKeysetIndex checks that a page of an owner's
// listing, first or further, in either direction, is a range of
// transactions_owner_created_seq with no sort: its cost does not grow with
// the depth of the page.
func TestListTransactionsUsesKeysetIndex(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, pgtest.New(t))
	after := &engine.TxCursor{Created: time.Now(), Seq: 42}
	for _, f := range []engine.TxFilter{
		{Owner: "u", Limit: 50},
		{Owner: "u", Limit: 50, After: after},
		{Owner: "u", Limit: 50, After: after, Ascending: true},
	} {
		plan, err := postgres.ExplainListTransactions(ctx, s, f)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ascending %v, after %v:\n%s", f.Ascending, f.After != nil, plan)
		if !strings.Contains(plan, "transactions_owner_created_seq") || strings.Contains(plan, "Sort") {
			t.Errorf("ascending %v, after %v: plan\n%s", f.Ascending, f.After != nil, plan)
		}
	}
}

// TestConditions covers the methods of waiting transactions (no storetest
// case yet): dependencies stored with the batch, MarkWaiting, MarkReady,
// Dependents, Statuses and Waiting.

// TestMigration0008Backfill: versions recorded before migration 0008 get
// their account and nonce.
func TestMigration0008Backfill(t *testing.T) {
	old, exec, reopen := openAtVersion(t, 7)
	storetest.Backfill0008(t, old, exec, reopen)
}

// TestMigration0009DuplicateNonces: migration 0009 refuses existing
// duplicate nonces, naming their count, and applies once they are resolved.
func TestMigration0009DuplicateNonces(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	old, err := postgres.OpenAt(ctx, url, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	storetest.DuplicateNonces0009(t, old, func(q string, args ...any) error {
		return postgres.ExecForTest(ctx, old, sqlx.Rebind(sqlx.DOLLAR, q), args...)
	}, func() (engine.Store, error) {
		s, err := postgres.Open(ctx, url)
		if err == nil {
			t.Cleanup(func() { _ = s.Close() })
		}
		return s, err
	})
}

// TestMigration0012PlainSecrets: callback secrets stored in plain text
// before migration 0012 are kept (as keystore.PlainVersion || secret) and
// sealed by a rotation.
func TestMigration0012PlainSecrets(t *testing.T) {
	old, exec, reopen := openAtVersion(t, 11)
	storetest.PlainSecrets0012(t, old, exec, reopen)
}

// TestMigration0013Outbox: the outbox rows stored before migration 0013
// keep their columns when tx_id becomes nullable.
func TestMigration0013Outbox(t *testing.T) {
	old, exec, reopen := openAtVersion(t, 12)
	storetest.Outbox0013(t, old, exec, reopen)
}

// BenchmarkAccountReads is the store's part of an account's pump on an
// idle account: the in-flight summary and the ready transactions, two
// queries with arguments. binary=no is lib/pq's default protocol (each
// query in two round trips), binary=yes what Open sets (one).
func BenchmarkAccountReads(b *testing.B) {
	base := pgtest.New(b)
	for _, mode := range []string{"no", "yes"} {
		b.Run("binary="+mode, func(b *testing.B) {
			ctx := context.Background()
			sep := "?"
			if strings.Contains(base, "?") {
				sep = "&"
			}
			s := mustOpen(b, base+sep+"binary_parameters="+mode)
			u := &engine.User{ID: uuid.NewString(), Created: time.Now()}
			a := &engine.Account{ID: uuid.NewString(), Owner: u.ID, Address: common.BytesToAddress(uuid.New().NodeID()), Created: time.Now()}
			if err := s.CreateUser(ctx, u, nil, a); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.InFlightSummary(ctx, a.ID, "dev"); err != nil {
					b.Fatal(err)
				}
				if _, err := s.ReadyTransactions(ctx, a.ID, "dev", 64); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// openAtVersion opens a fresh store with the migrations up to version only;
// it returns it, a statement runner on it (? placeholders), and reopen,
// which closes it and returns the store with every migration applied.
func openAtVersion(t *testing.T, version int) (engine.Store, func(q string, args ...any) error, func() engine.Store) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.New(t)
	old, err := postgres.OpenAt(ctx, url, version)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = old.Close()
		}
	})
	exec := func(q string, args ...any) error {
		return postgres.ExecForTest(ctx, old, sqlx.Rebind(sqlx.DOLLAR, q), args...)
	}
	return old, exec, func() engine.Store {
		closed = true
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		return mustOpen(t, url)
	}
}

// TestMigration0011Backfill: users created before migration 0011 get the
// root of their tree.
func TestMigration0011Backfill(t *testing.T) {
	_, exec, reopen := openAtVersion(t, 10)
	storetest.Backfill0011(t, func(id, owner string, operator bool) error {
		return exec(`INSERT INTO users (id, owner, operator, created) VALUES (?, NULLIF(?, ''), ?, now())`, id, owner, operator)
	}, reopen)
}

// TestMigration0016TokenIDs: tokens stored before migration 0016 get ids
// and keep working.
func TestMigration0016TokenIDs(t *testing.T) {
	_, exec, reopen := openAtVersion(t, 14)
	storetest.TokenIDs0016(t, func(id string) error {
		return exec(`INSERT INTO users (id, created) VALUES (?, now())`, id)
	}, func(userID string, hash []byte) error {
		return exec(`INSERT INTO api_tokens (hash, user_id, created) VALUES (?, ?, now())`, hash, userID)
	}, reopen)
}

// TestPoolQueriesUseIndexes checks that the pool reads are served by the
// partial indexes of migration 0017: PoolLoads reads
// transactions_pool_pending in its GROUP BY order (no sort), and
// OrderingKeyMember, PendingPools and PoolTopUps' pending keys probe the
// pool's pending rows only, so their cost does not grow with the ended
// transactions; PoolTopUps counts through the treasury's rows.
func TestPoolQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, pgtest.New(t))
	plans, err := postgres.ExplainPoolQueries(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for name, index := range map[string]string{
		"PoolLoads":         "transactions_pool_pending",
		"OrderingKeyMember": "transactions_pool_key",
		"PendingPools":      "transactions_pool_pending",
		// On empty tables the planner picks any index of the
		// treasury's rows (transactions_queue, or by network); none
		// scans the table.
		"TopUpsSent":    "Index Scan",
		"TopUpsPending": "transactions_pool_key",
	} {
		plan := plans[name]
		t.Logf("%s:\n%s", name, plan)
		if !strings.Contains(plan, index) || strings.Contains(plan, "Seq Scan on transactions") {
			t.Errorf("%s does not use %s:\n%s", name, index, plan)
		}
		if name == "PoolLoads" && strings.Contains(plan, "Sort") {
			t.Errorf("PoolLoads sorts:\n%s", plan)
		}
	}
}

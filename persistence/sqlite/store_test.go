package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/txengine/txengine/engine"
	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/persistence/sqlite"
	"github.com/txengine/txengine/persistence/storetest"
)

// mustOpen opens a store on path and closes it at the end of the test.
func mustOpen(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) engine.Store {
		return mustOpen(t, filepath.Join(t.TempDir(), "txengine.db"))
	})
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "txengine.db")
	created := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)

	s, err := sqlite.Open(ctx, path)
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
	if err := s.SetCursor(ctx, "dev", 12, common.Hash{12}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, path) // migrations run again: a no-op
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	got, err := s.UserByTokenHash(ctx, keystore.HashToken("tok"))
	if err != nil || got.ID != "u1" || !got.Created.Equal(created) {
		t.Fatalf("user after reopen = %+v, %v", got, err)
	}
	def, err := s.DefaultAccount(ctx, "u1")
	if err != nil || def.ID != "a1" {
		t.Fatalf("default account after reopen = %+v, %v", def, err)
	}
	ready, err := s.ReadyTransactions(ctx, "a1", "dev", 10)
	if err != nil || len(ready) != 1 || ready[0].ID != "t1" {
		t.Fatalf("ready after reopen = %v, %v", ready, err)
	}
	if b, ok, err := s.Cursor(ctx, "dev"); err != nil || !ok || b != 12 {
		t.Fatalf("cursor after reopen = %d, %v, %v", b, ok, err)
	}
	// New rows still come after the old ones.
	tx2 := &engine.Transaction{ID: "t2", Owner: "u1", AccountID: "a1", Network: "dev", From: a.Address, Status: engine.StatusNew, Created: created}
	if err := s.InsertTransactions(ctx, []*engine.Transaction{tx2}); err != nil {
		t.Fatal(err)
	}
	ready, err = s.ReadyTransactions(ctx, "a1", "dev", 10)
	if err != nil || len(ready) != 2 || ready[0].ID != "t1" || ready[1].ID != "t2" {
		t.Fatalf("ready after second insert = %v, %v", ready, err)
	}
}

func TestPragmas(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "txengine.db"))
	ctx := context.Background()
	checks := map[string]string{
		"journal_mode": "wal",
		"synchronous":  "2", // FULL
		"foreign_keys": "1",
		"busy_timeout": "5000",
	}
	for pragma, want := range checks {
		for _, pool := range []string{"write", "read"} {
			got, err := sqlite.PragmaForTest(ctx, s, pool, pragma)
			if err != nil {
				t.Fatalf("%s pool: pragma %s: %v", pool, pragma, err)
			}
			if got != want {
				t.Errorf("%s pool: pragma %s = %q, want %q", pool, pragma, got, want)
			}
		}
	}
}

func TestOpenRejectsMemoryAndMissingDir(t *testing.T) {
	ctx := context.Background()
	if _, err := sqlite.Open(ctx, ":memory:"); err == nil {
		t.Fatal("Open(:memory:) succeeded")
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")
	if s, err := sqlite.Open(ctx, missing); err == nil {
		s.Close()
		t.Fatal("Open in a missing directory succeeded")
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Fatalf("Open created the directory: %v", err)
	}
}

func TestOpenOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir%20with #odd?chars")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tx engine.db")
	s := mustOpen(t, path)
	if err := s.SetCursor(context.Background(), "dev", 1, common.Hash{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %s: %v", path, err)
	}
}

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
	path := filepath.Join(t.TempDir(), "txengine.db")
	old, err := sqlite.OpenAt(ctx, path, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	storetest.DuplicateNonces0009(t, old, func(q string, args ...any) error {
		return sqlite.ExecForTest(ctx, old, q, args...)
	}, func() (engine.Store, error) {
		s, err := sqlite.Open(ctx, path)
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
// survive the rebuild of callback_outbox.
func TestMigration0013Outbox(t *testing.T) {
	old, exec, reopen := openAtVersion(t, 12)
	storetest.Outbox0013(t, old, exec, reopen)
}

// openAtVersion opens a fresh store with the migrations up to version only;
// it returns it, a statement runner on it (? placeholders), and reopen,
// which closes it and returns the store with every migration applied.
func openAtVersion(t *testing.T, version int) (engine.Store, func(q string, args ...any) error, func() engine.Store) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "txengine.db")
	old, err := sqlite.OpenAt(ctx, path, version)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = old.Close()
		}
	})
	exec := func(q string, args ...any) error { return sqlite.ExecForTest(ctx, old, q, args...) }
	return old, exec, func() engine.Store {
		closed = true
		if err := old.Close(); err != nil {
			t.Fatal(err)
		}
		return mustOpen(t, path)
	}
}

// TestMigration0011Backfill: users created before migration 0011 get the
// root of their tree.
func TestMigration0011Backfill(t *testing.T) {
	_, exec, reopen := openAtVersion(t, 10)
	storetest.Backfill0011(t, func(id, owner string, operator bool) error {
		return exec(`INSERT INTO users (id, owner, operator, created) VALUES (?, NULLIF(?, ''), ?, 0)`, id, owner, operator)
	}, reopen)
}

// TestMigration0016TokenIDs: tokens stored before migration 0016 get ids
// and keep working.
func TestMigration0016TokenIDs(t *testing.T) {
	_, exec, reopen := openAtVersion(t, 14)
	storetest.TokenIDs0016(t, func(id string) error {
		return exec(`INSERT INTO users (id, created) VALUES (?, 0)`, id)
	}, func(userID string, hash []byte) error {
		return exec(`INSERT INTO api_tokens (hash, user_id, created) VALUES (?, ?, 0)`, hash, userID)
	}, reopen)
}

// TestPoolQueriesUseIndexes checks that the pool reads are served by the
// partial indexes of migration 0017: PoolLoads reads the covering
// transactions_pool_pending in its GROUP BY order (no table lookup, no
// temporary B-tree), OrderingKeyMember and PendingPools probe the pool's
// pending rows only.
func TestPoolQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "txengine.db"))
	plans, err := sqlite.ExplainPoolQueries(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"PoolLoads":         "SEARCH transactions USING COVERING INDEX transactions_pool_pending",
		"OrderingKeyMember": "SEARCH transactions USING INDEX transactions_pool_key",
		"PendingPools":      "transactions_pool_pending",
		"TopUpsSent":        "transactions_queue",
		"TopUpsPending":     "SEARCH transactions USING INDEX transactions_pool_key",
	} {
		plan := plans[name]
		t.Logf("%s:\n%s", name, plan)
		if !strings.Contains(plan, want) || strings.Contains(plan, "SCAN transactions") {
			t.Errorf("%s: want %q in the plan:\n%s", name, want, plan)
		}
		if name != "PendingPools" && strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s sorts:\n%s", name, plan)
		}
	}
}

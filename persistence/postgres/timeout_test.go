package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// TestStatementTimeout: the store's sessions carry a statement_timeout
// (DefaultStatementTimeout unless the URL sets one), so a statement that
// runs longer is cancelled by the server (SQLSTATE 57014) instead of
// holding its caller; migrations still apply under it.
func TestStatementTimeout(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	def := mustOpen(t, url)
	var got string
	if err := postgres.QueryRowForTest(ctx, def, `SHOW statement_timeout`, &got); err != nil {
		t.Fatal(err)
	}
	if got != "30s" {
		t.Fatalf("statement_timeout = %q by default, want 30s", got)
	}

	// Migrations run without it: a fresh database migrates under 1 ms. The
	// BEGIN before a migration's SET LOCAL runs under it too, and a loaded
	// machine (the race detector, other packages' tests) can take 1 ms to
	// answer it: such an open is retried (nothing of the migration ran).
	// The schema is then read through a session without the 1 ms.
	fresh := pgtest.New(t)
	for try := 1; ; try++ {
		s, err := postgres.Open(ctx, withParam(fresh, "statement_timeout=1"))
		if err == nil {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			break
		}
		var pqErr *pq.Error
		if try == 10 || !errors.As(err, &pqErr) || pqErr.Code != "57014" || !strings.Contains(err.Error(), "begin: ") {
			t.Fatalf("open under statement_timeout=1ms (try %d): %v", try, err)
		}
		t.Logf("try %d: the BEGIN took over 1 ms: %v", try, err)
	}
	wantMigrated(t, mustOpen(t, fresh))

	short := mustOpen(t, withParam(url, "statement_timeout=200"))
	began := time.Now()
	err := postgres.ExecForTest(ctx, short, `SELECT pg_sleep(5)`)
	took := time.Since(began)
	var pqErr *pq.Error
	if !errors.As(err, &pqErr) || pqErr.Code != "57014" {
		t.Fatalf("pg_sleep(5) under statement_timeout=200ms: %v (after %s), want SQLSTATE 57014", err, took)
	}
	if took > 3*time.Second {
		t.Fatalf("pg_sleep(5) cancelled after %s, want about 200ms", took)
	}
	t.Logf("pg_sleep(5) cancelled after %s: %v", took, err)
}

// withParam adds a key=value parameter to a postgres:// URL.
func withParam(url, kv string) string {
	if strings.Contains(url, "?") {
		return url + "&" + kv
	}
	return url + "?" + kv
}

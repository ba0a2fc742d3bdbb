package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/txengine/txengine/persistence/postgres"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// seedReady creates n accounts with one new transaction each and returns
// the store, a plain connection and the account ids.
func seedReady(tb testing.TB, n int) (*postgres.Store, *sql.DB, []string) {
	url := pgtest.New(tb)
	s := mustOpen(tb, url)
	var ids []string
	for range n {
		a := benchAccount(tb, s)
		benchNew(tb, s, a, 0, 1)
		ids = append(ids, a.ID)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return s, db, ids
}

// readyPlan is EXPLAIN ANALYZE of the merged ready read of ids.
func readyPlan(tb testing.TB, db *sql.DB, ids []string) string {
	lims := make([]int64, len(ids))
	for i := range lims {
		lims[i] = 16
	}
	rows, err := db.Query("EXPLAIN ANALYZE "+postgres.ReadyOfStatement, pq.StringArray(ids), pq.Int64Array(lims), "dev")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n")
}

// TestReadyReadUsesTheReadyIndex: on a table the planner has no statistics
// of yet (as under a burst), the merged ready read scans each account's
// new rows in transactions_ready, not every new row of the network.
func TestReadyReadUsesTheReadyIndex(t *testing.T) {
	_, db, ids := seedReady(t, 2000)
	if plan := readyPlan(t, db, ids[:32]); !strings.Contains(plan, "transactions_ready") {
		t.Fatalf("the ready read does not use transactions_ready:\n%s", plan)
	}
}

// BenchmarkReadyTransactionsOf reads the ready transactions of 64 of 2,000
// accounts with one new transaction each (the breadth shapes' merged read),
// on a table the planner has no statistics of yet, as under a burst.
func BenchmarkReadyTransactionsOf(b *testing.B) {
	s, db, ids := seedReady(b, 2000)
	b.Logf("plan:\n%s", readyPlan(b, db, ids[:64]))
	limits := map[string]int{}
	for _, id := range ids[:64] {
		limits[id] = 16
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.ReadyTransactionsOf(ctx, "dev", limits)
		if err != nil || len(got) != 64 {
			b.Fatalf("%d accounts, %v", len(got), err)
		}
	}
}

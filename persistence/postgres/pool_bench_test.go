package postgres_test

import (
	"testing"

	"github.com/txengine/txengine/persistence/postgres/pgtest"
	"github.com/txengine/txengine/persistence/storetest"
)

// BenchmarkPoolLoads is storetest.BenchPoolLoads on PostgreSQL: PoolLoads
// of a 32-member pool with 10,000 pending transactions.
func BenchmarkPoolLoads(b *testing.B) {
	storetest.BenchPoolLoads(b, mustOpen(b, pgtest.New(b)))
}

package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/txengine/txengine/persistence/storetest"
)

// BenchmarkPoolLoads is storetest.BenchPoolLoads on SQLite: PoolLoads of a
// 32-member pool with 10,000 pending transactions.
func BenchmarkPoolLoads(b *testing.B) {
	storetest.BenchPoolLoads(b, mustOpenB(b, filepath.Join(b.TempDir(), "txengine.db")))
}

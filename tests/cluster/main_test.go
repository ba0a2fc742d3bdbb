// Package cluster runs several real txengine nodes on loopback against one
// PostgreSQL database and one geth --dev node (cluster mode, docs/cluster.md)
// and drives them over HTTP: bursts spread over every node's listener, a
// node killed with SIGKILL mid-burst, a rolling restart under load, and the
// etcd membership provider. Every test checks that each accepted
// transaction completed exactly once: one row per request, per account the
// nonces 0..n-1 and the chain's nonce n, each recorded hash on the chain
// from the right address with the right nonce, and one broadcast hash per
// (account, nonce) both in tx_attempts and among the transactions geth
// logged as submitted. revoke_test.go checks instead that a revoked API token
// is refused on every node once the revocation answered.
//
// make test-cluster runs them (not make test: they take minutes).
package cluster

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/txengine/txengine/internal/servicetest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// binary is the txengine binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() { // every test here runs the binary: none runs with -short
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "txengine-cluster-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A -race build: a data race in a node fails the test that ran it
	// (newStack's cleanup). The benchmark (TXENGINE_BENCH=1, make
	// bench-cluster) measures the product: a plain build, with the pprof
	// side listener that only TXENGINE_PPROF turns on.
	bench := os.Getenv("TXENGINE_BENCH") == "1"
	var tags []string
	if bench {
		tags = append(tags, "pprof")
	}
	if bin := os.Getenv("TXENGINE_BENCH_BIN"); bench && bin != "" {
		// A binary built elsewhere (another commit, to compare).
		binary = bin
	} else if binary, err = servicetest.Build(dir, servicetest.Package, !bench, tags...); err != nil {
		fmt.Fprintln(os.Stderr, "build txengine:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if err := pgtest.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop PostgreSQL:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

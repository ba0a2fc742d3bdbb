package pgtest

import (
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/txengine/txengine/internal/ci"
)

// Cluster is a throwaway PostgreSQL cluster of one test, apart from the
// cluster that New shares among the tests of the binary, so that the test
// can stop it and start it again (same data, same port) to simulate a
// database outage. It is removed at the end of the test. Its methods are
// safe for concurrent use.
type Cluster struct {
	t        testing.TB
	dir      string
	data     string
	as       *runAs
	postgres string
	port     int
	url      string
	settings []string

	mu sync.Mutex
	// running is the server while it runs, nil while stopped.
	running *cluster
}

// StartCluster initialises and starts a cluster of its own for t, with the
// binaries and settings New's local cluster uses (TEST_DATABASE_URL does
// not apply: a shared server cannot be stopped). It skips the test when
// there are no PostgreSQL server binaries, unless CI is true, where that
// fails it.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startOwnCluster(t, serverSettings)
}

// StartClusterWith is StartCluster with more server settings
// ("name=value"), e.g. to load pg_stat_statements for a benchmark that
// counts the statements on the fast settings of tests.
func StartClusterWith(t testing.TB, extra ...string) *Cluster {
	t.Helper()
	return startOwnCluster(t, append(slices.Clip(serverSettings), extra...))
}

// StartDurableCluster is StartCluster with PostgreSQL's durability
// defaults (fsync, synchronous commit and full page writes on) instead of
// the fast, crash-unsafe settings of tests: for benchmarks of durable
// writes. extra are more server settings ("name=value"), e.g. to load
// pg_stat_statements for a profile that counts the statements.
func StartDurableCluster(t testing.TB, extra ...string) *Cluster {
	t.Helper()
	return startOwnCluster(t, append(slices.Clip(durableSettings), extra...))
}

func startOwnCluster(t testing.TB, settings []string) *Cluster {
	t.Helper()
	dir, data, as, postgres, err := initCluster()
	if err != nil {
		var u *unavailableError
		if errors.As(err, &u) {
			ci.SkipOrFail(t, "pgtest: %v; install the PostgreSQL server binaries (initdb, postgres) to run this test", err)
		}
		t.Fatalf("pgtest: %v", err)
	}
	running, err := startFreePort(dir, data, as, postgres, settings)
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("pgtest: %v", err)
	}
	c := &Cluster{t: t, dir: dir, data: data, as: as, postgres: postgres, port: running.port, url: running.url, settings: settings, running: running}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		var errs []error
		if c.running != nil {
			errs = append(errs, c.running.shutdown())
			c.running = nil
		}
		errs = append(errs, os.RemoveAll(c.dir))
		if err := errors.Join(errs...); err != nil {
			t.Errorf("pgtest: remove the cluster: %v", err)
		}
	})
	return c
}

// URL is the URL of the cluster's database postgres as its superuser; it
// stays the same across Stop and Start.
func (c *Cluster) URL() string { return c.url }

// Stop shuts the server down as an operator would (fast shutdown: open
// sessions are disconnected) and waits until it has exited; its port stops
// answering. It is a no-op on a stopped cluster.
func (c *Cluster) Stop() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == nil {
		return
	}
	err := c.running.shutdown()
	c.running = nil
	if err != nil {
		c.t.Fatalf("pgtest: stop the cluster: %v", err)
	}
}

// Start starts a stopped cluster again on the same data and port and waits
// until it accepts connections. It is a no-op on a running cluster.
func (c *Cluster) Start() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		return
	}
	running, err := startServer(c.dir, c.data, c.as, c.postgres, c.port, c.settings)
	if err != nil {
		c.t.Fatalf("pgtest: start the cluster again on port %d: %v", c.port, err)
	}
	c.running = running
}

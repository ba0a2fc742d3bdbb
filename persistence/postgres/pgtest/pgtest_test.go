package pgtest

import (
	"context"
	"database/sql"
	"testing"
)

func TestMain(m *testing.M) { RunMain(m) }

func TestNewGivesFreshDatabases(t *testing.T) {
	ctx := context.Background()
	var names []string
	for range 2 {
		url := New(t)
		db, err := sql.Open("postgres", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		var name string
		var tables int
		if err := db.QueryRowContext(ctx, `SELECT current_database(),
			(SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public')`).Scan(&name, &tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Fatalf("database %s has %d tables, want none", name, tables)
		}
		if _, err := db.ExecContext(ctx, `CREATE TABLE t (x INT)`); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if names[0] == names[1] {
		t.Fatalf("New returned the same database twice: %s", names[0])
	}
}

func TestServerURLValidation(t *testing.T) {
	for _, bad := range []string{"host=localhost dbname=x", "mysql://u@h/db", "postgres:///db"} {
		t.Setenv(EnvURL, bad)
		if _, err := serverURL(); err == nil {
			t.Errorf("%s=%q accepted", EnvURL, bad)
		}
	}
	t.Setenv(EnvURL, "postgres://u:secret@h:5432/db?sslmode=disable")
	if got, err := serverURL(); err != nil || got != "postgres://u:secret@h:5432/db?sslmode=disable" {
		t.Errorf("serverURL = %q, %v", got, err)
	}
}

func TestSlug(t *testing.T) {
	cases := map[string]string{
		"TestStore/UserRoundTrip":      "teststore_userroundtrip",
		"Benchmark/batch=500-2":        "benchmark_batch_500_2",
		"Ünïcode and  spaces__":        "n_code_and_spaces",
		"a-very-long-name-that-is-cut": "a_very_lo",
	}
	for in, want := range cases {
		n := 40
		if in == "a-very-long-name-that-is-cut" {
			n = 9
		}
		if got := slug(in, n); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestClusterStopsAndStartsWithItsData: a dedicated cluster refuses
// connections while stopped and comes back on the same URL with its data.
func TestClusterStopsAndStartsWithItsData(t *testing.T) {
	c := StartCluster(t)
	db, err := sql.Open("postgres", c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE kept (x INT); INSERT INTO kept VALUES (7)`); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("ping succeeded while the cluster is stopped")
	}
	c.Start()
	var x int
	if err := db.QueryRowContext(ctx, `SELECT x FROM kept`).Scan(&x); err != nil || x != 7 {
		t.Fatalf("after the restart: x = %d, %v; want 7", x, err)
	}
}

// TestDurableClusterKeepsDurability: the durable cluster commits to disk
// (fsync, synchronous_commit, full_page_writes on); the test cluster does
// not.
func TestDurableClusterKeepsDurability(t *testing.T) {
	for _, c := range []struct {
		name    string
		cluster *Cluster
		want    string
	}{
		{"durable", StartDurableCluster(t), "on"},
		{"test", StartCluster(t), "off"},
	} {
		db, err := sql.Open("postgres", c.cluster.URL())
		if err != nil {
			t.Fatal(err)
		}
		for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
			var v string
			if err := db.QueryRow("SHOW " + setting).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != c.want {
				t.Errorf("%s cluster: %s = %s, want %s", c.name, setting, v, c.want)
			}
		}
		db.Close()
	}
}

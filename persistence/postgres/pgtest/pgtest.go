// Package pgtest gives each test a fresh PostgreSQL database.
//
// The server is, in order of preference:
//
//   - the one at TEST_DATABASE_URL (postgres://user:password@host:port/db?sslmode=disable,
//     a role allowed to CREATE DATABASE): each test gets a database of its
//     own there, created from template0 and dropped at the end of the test;
//   - a throwaway cluster that the test binary starts on first use from the
//     PostgreSQL server binaries found on the machine (initdb and postgres
//     under /usr/lib/postgresql/<version>/bin, the highest version first, or
//     on PATH), in a temporary directory, listening on a free loopback port
//     and a socket in that directory, with durability off (fsync,
//     full_page_writes, synchronous_commit) for speed. Test binaries that use
//     it call RunMain from TestMain, which stops it and removes its directory
//     when the tests are done.
//
// PostgreSQL refuses to run as root. When the tests run as root, pgtest runs
// initdb and postgres as the unprivileged user "postgres", or "nobody" when
// there is no such user (it creates no user), and hands it the temporary
// directory; that directory's parents must be reachable by that user (the
// default temporary directory, /tmp, is).
//
// When there is no PostgreSQL at all (no TEST_DATABASE_URL and no server
// binaries), New skips the test, or fails it when the environment variable
// CI is true, so that a CI job cannot pass without running these tests. A
// server that is found but does not start fails the test: that is a broken
// setup, not a missing one.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	// The driver of the admin connections.
	_ "github.com/lib/pq"

	"github.com/txengine/txengine/internal/ci"
)

// EnvURL names the environment variable with the URL of an existing server.
const EnvURL = "TEST_DATABASE_URL"

// adminTimeout bounds the creation and the removal of one database.
const adminTimeout = 60 * time.Second

// New returns the URL of a fresh, empty database for this test, dropped
// (with any connection left to it) when the test and its cleanups are done:
// register the cleanups that use the database (closing a store) after
// calling New. See the package documentation for where the server comes
// from and when New skips.
func New(t testing.TB) string {
	t.Helper()
	admin, err := serverURL()
	if err != nil {
		var u *unavailableError
		if errors.As(err, &u) {
			ci.SkipOrFail(t, "pgtest: %v; to run this test, install the PostgreSQL server binaries (initdb, postgres) "+
				"or set %s=postgres://user:password@host:5432/postgres?sslmode=disable", err, EnvURL)
		}
		t.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	dbURL, name, err := createDatabase(ctx, admin, t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if err := dropDatabase(ctx, admin, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return dbURL
}

// RunMain runs the tests of m and then stops the cluster that New may have
// started, and exits with the tests' status. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.RunMain(m) }
func RunMain(m *testing.M) {
	code := m.Run()
	if err := stopLocal(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Stop stops the cluster that New may have started; for a TestMain that
// does more than RunMain (call it after m.Run).
func Stop() error { return stopLocal() }

// unavailableError says that there is no PostgreSQL to test against.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string { return "no PostgreSQL available: " + e.reason }

// serverURL returns the URL of an administrative database on the server to
// create test databases on: TEST_DATABASE_URL, or the local cluster's.
func serverURL() (string, error) {
	if raw := os.Getenv(EnvURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return "", fmt.Errorf("%s must be a postgres://user:password@host:port/db URL", EnvURL)
		}
		return raw, nil
	}
	return localURL()
}

// createDatabase creates a database with a fresh random name (prefixed with
// a readable form of testName) on the server of adminURL and returns its URL
// and name.
func createDatabase(ctx context.Context, adminURL, testName string) (dbURL, name string, err error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("random database name: %w", err)
	}
	name = "t_" + slug(testName, 40) + "_" + hex.EncodeToString(b[:])
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return "", "", fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer db.Close()
	// template0: a concurrent session on template1 cannot make it fail.
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		return "", "", fmt.Errorf("create database %s on %s: %w", name, redact(adminURL), err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", "", fmt.Errorf("parse %s: %w", redact(adminURL), err)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), name, nil
}

// dropDatabase drops the database name, closing the connections left to it
// (WITH (FORCE), PostgreSQL 13 and later).
func dropDatabase(ctx context.Context, adminURL, name string) error {
	db, err := sql.Open("postgres", adminURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// slug is s lower-cased, with runs of characters other than ASCII letters
// and digits replaced by '_', cut to at most n bytes: a safe part of an SQL
// identifier.
func slug(s string, n int) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			under = false
		} else if !under {
			b.WriteByte('_')
			under = true
		}
		if b.Len() >= n {
			break
		}
	}
	return strings.Trim(b.String(), "_")
}

// redact hides the password of a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

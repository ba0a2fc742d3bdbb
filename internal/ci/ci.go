// Package ci is the one place where tests read whether they run in CI.
//
// `.ci/run` exports CI=true. Under CI a test whose dependency (geth,
// PostgreSQL, etcd, npm...) is missing fails, so that CI never passes by
// skipping; elsewhere it skips and says how to enable it.
package ci

import (
	"os"
	"strconv"
	"testing"
)

// Env is the environment variable that says a run is CI.
const Env = "CI"

// Required reports whether the environment variable CI is true (any form
// strconv.ParseBool accepts): tests must then run, not skip.
func Required() bool {
	v, _ := strconv.ParseBool(os.Getenv(Env))
	return v
}

// SkipOrFail ends a test that cannot run here: under CI=true it fails with
// the message; elsewhere it skips with it (the message should say how to
// enable the test).
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

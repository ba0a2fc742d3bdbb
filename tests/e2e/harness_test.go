// Package e2e runs the real txengine binary on port 0 and drives it over
// HTTP, as a user following the README would.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/racelog"
	"github.com/txengine/txengine/internal/servicetest"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// binary is the txengine binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "txengine-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A -race build: a data race in the service fails the test that ran
	// it (failOnRace).
	if binary, err = servicetest.Build(dir, servicetest.Package, true); err != nil {
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

// service is one running txengine process.
type service struct {
	t *testing.T
	*servicetest.Process
	// contract checks every response against the served OpenAPI document.
	contract contract
}

// startService runs the binary on dataDir with a free port and waits for its
// banner (base URL and operator token).
func startService(t *testing.T, dataDir string, env ...string) *service {
	t.Helper()
	return startServiceArgs(t, dataDir, nil, env...)
}

// startServiceArgs is startService with extra arguments of `txengine serve`
// (e.g. --config FILE).
func startServiceArgs(t *testing.T, dataDir string, args []string, env ...string) *service {
	t.Helper()
	// raceShutdownTimeout comes first: a test's own TXENGINE_SHUTDOWN_TIMEOUT
	// (in env, after it) wins.
	base := []string{"TXENGINE_SHUTDOWN_TIMEOUT=" + raceShutdownTimeout.String(),
		"TXENGINE_LISTEN=127.0.0.1:0", "TXENGINE_DATA_DIR=" + dataDir, "TXENGINE_DEV_BLOCK_PERIOD=1s",
		// Tests drive users harder than the default 10 requests per second,
		// and send many bad tokens from one address (the bad-input
		// catalogue); the rate-limit behaviour itself is tested in http/
		// with a fake clock, and TestBadInputAuthFailuresLimited.
		"TXENGINE_RATE_LIMIT_PER_SECOND=100000", "TXENGINE_RATE_LIMIT_PER_HOUR=100000000",
		"TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_SECOND=100000", "TXENGINE_RATE_LIMIT_AUTH_FAILURES_PER_HOUR=100000000"}
	p, err := servicetest.Start(binary, append([]string{"serve"}, args...), servicetest.Options{Env: append(base, env...), Wait: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := &service{t: t, Process: p}
	t.Cleanup(func() {
		if s.Running() {
			s.Kill()
		}
		failOnRace(t, "txengine serve", s.Logs())
		if t.Failed() {
			t.Logf("txengine output:\n%s", s.Logs())
		}
	})
	return s
}

// failOnRace fails t with every data race report in out, the output of a
// run of the binary (what names it), that involves our code
// (racelog.Ours). A library racing with itself (go-ethereum's block
// assembly in the in-process dev chain, protoactor-go) is logged, not
// failed on: it is not ours to fix.
func failOnRace(t *testing.T, what string, out string) {
	t.Helper()
	ours, library := racelog.Split(out)
	for _, r := range ours {
		t.Errorf("%s reported a data race:\n%s", what, r)
	}
	for _, l := range library {
		t.Logf("%s: data races inside a library (not our code), %s", what, l)
	}
}

// combinedOutput runs cmd (the binary) to its end and returns its output,
// as exec.Cmd.CombinedOutput; a data race in it fails t.
func combinedOutput(t *testing.T, cmd *exec.Cmd) ([]byte, error) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	failOnRace(t, "txengine "+strings.Join(cmd.Args[1:], " "), string(out))
	return out, err
}

// stop sends SIGTERM and expects exit status 0 within the shutdown budget.
func (s *service) stop() {
	s.t.Helper()
	if err := s.Stop(raceShutdownTimeout + 15*time.Second); err != nil {
		s.t.Fatalf("txengine after SIGTERM: %v\n%s", err, s.Logs())
	}
}

// raceShutdownTimeout is the shutdown budget of the -race build these
// tests run. Built with the race tag, pebble (the dev chain's database)
// turns on its invariant checks, which record a stack for every file
// reference: the dev chain's log indexer, which its Close waits for, then
// takes several seconds to stop under load (a goroutine dump shows it in
// filtermaps' map rendering) where the normal build takes a fraction of one.
const raceShutdownTimeout = 60 * time.Second

// kill sends SIGKILL and waits for the process to go.
func (s *service) kill() { s.Kill() }

// response is a decoded API response.
type response = servicetest.Response

// call sends one request with token (none when empty) and a JSON body
// (nil: none; string: sent as is), and checks the answer against the served
// OpenAPI document.
func (s *service) call(method, path, token string, body any) response {
	s.t.Helper()
	r, req, err := servicetest.Call(nil, s.URL, servicetest.Request{Method: method, Path: path, Token: token, Body: body})
	if err != nil {
		s.t.Fatal(err)
	}
	s.contract.check(s.t, s.URL, req, r.Status, r.Header, r.Raw)
	return r
}

// must calls and fails the test unless the status is want; it returns data.
func (s *service) must(want int, method, path, token string, body any) any {
	s.t.Helper()
	r := s.call(method, path, token, body)
	if r.Status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Raw)
	}
	return r.Body["data"]
}

// waitStatus polls a transaction until it reaches a terminal status.
func (s *service) waitTerminal(id, token string, timeout time.Duration) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		tx := s.must(200, "GET", "/transactions/"+id, token, nil).(map[string]any)
		if st := tx["status"]; st == "completed" || st == "failed" {
			return tx
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("transaction %s still %v after %s", id, tx["status"], timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

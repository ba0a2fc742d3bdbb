// Package etcdtest runs a throwaway etcd server for tests: a single member
// on free loopback client and peer ports with a data dir of its own,
// stopped and removed at the end of the test.
//
// The binary is $ETCD_BIN, else etcd on PATH, else /usr/bin/etcd (Debian's
// etcd-server package). When there is none, Start skips the test, or fails
// it when the environment variable CI is true, so that a CI job cannot pass
// without running these tests.
package etcdtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/toolcache"

	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/proc"
)

// EnvBin names the environment variable with the path of an etcd binary.
const EnvBin = "ETCD_BIN"

// Install says how to make an etcd available.
const Install = "install Debian's etcd-server package (apt-get install etcd-server) or set " + EnvBin

// startTimeout bounds the start-up of the server until it reports healthy.
const startTimeout = 60 * time.Second

// Server is a running etcd server.
type Server struct {
	// Endpoint is the client address, host:port, as etcd clients take it.
	Endpoint string
	// ClientURL is the client URL, http://host:port.
	ClientURL string
	// DataDir is the member's data directory.
	DataDir string

	t    testing.TB
	proc *proc.Process
}

// Binary returns the etcd to run: $ETCD_BIN, else etcd on PATH, else
// /usr/bin/etcd.
func Binary() (string, error) {
	if p := os.Getenv(EnvBin); p != "" {
		if !toolcache.IsExecutable(p) {
			return "", fmt.Errorf("%s=%s is not an executable file", EnvBin, p)
		}
		return p, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if p := "/usr/bin/etcd"; toolcache.IsExecutable(p) {
		return p, nil
	}
	return "", errors.New("no etcd: " + EnvBin + " is not set, and there is no etcd on PATH nor at /usr/bin/etcd")
}

// Start starts an etcd server on free loopback ports and waits until it
// reports healthy. It skips the test when there is no etcd binary, unless
// CI is true, where that fails it. The server stops at the end of the test.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		ci.SkipOrFail(t, "etcdtest: %v; to run this test, %s", err, Install)
	}
	dir := t.TempDir()
	clientPort, peerPort := freeport.Get(t), freeport.Get(t)
	s := &Server{
		Endpoint:  fmt.Sprintf("127.0.0.1:%d", clientPort),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", clientPort),
		DataDir:   filepath.Join(dir, "data"),
		t:         t,
	}
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	args := []string{
		"--name", "etcdtest",
		"--data-dir", s.DataDir,
		"--listen-client-urls", s.ClientURL, "--advertise-client-urls", s.ClientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "etcdtest=" + peerURL, "--initial-cluster-state", "new",
		"--initial-cluster-token", "etcdtest-" + strconv.Itoa(clientPort),
		"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
	}
	s.proc = proc.New(proc.Spec{
		Name: "etcd",
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, args...)
			cmd.Env = childEnv()
			return cmd
		},
		LogPath:      filepath.Join(dir, "etcd.log"),
		Ready:        s.health,
		ReadyTimeout: startTimeout,
		StopTimeout:  20 * time.Second,
	})
	t.Cleanup(func() {
		if err := s.proc.Stop(); err != nil {
			t.Errorf("etcdtest: %v", err)
		}
		if t.Failed() {
			t.Logf("etcd log (tail):\n%s", s.LogTail(40))
		}
	})
	if err := s.proc.Start(); err != nil {
		t.Fatalf("etcdtest: %v\n%s", err, s.LogTail(40))
	}
	return s
}

// Stop shuts the server down (SIGTERM) and waits until it has exited. It is
// a no-op on a stopped server.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.proc.Stop(); err != nil {
		s.t.Fatalf("etcdtest: %v", err)
	}
}

// LogTail returns the last lines of etcd's output.
func (s *Server) LogTail(lines int) string {
	return s.proc.LogTail(lines)
}

// health asks GET /health, which answers {"health":"true"} once the member
// has a leader and serves requests.
func (s *Server) health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.ClientURL+"/health", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
		return fmt.Errorf("/health: %w", err)
	}
	if res.StatusCode != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("/health: %d %q", res.StatusCode, h.Health)
	}
	return nil
}

// childEnv is the environment without ETCD_* variables: etcd reads its
// flags from them too, and they must not change the throwaway server.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	return env
}

// Package kmstest runs local-kms (github.com/nsmithuk/local-kms, an AWS KMS
// emulator that signs with secp256k1 keys) for tests: it finds local-kms
// on PATH or in <module root>/.cache/bin, or builds it there once with
// `go install`, and starts it on a free loopback port with its data in the
// test's temporary directory. Without it tests skip and say how to install
// it; under CI=true they fail.
package kmstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/txengine/txengine/engine/keystore"
	"github.com/txengine/txengine/engine/keystore/awskms"
	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/proc"
	"github.com/txengine/txengine/internal/toolcache"
)

// Version is the local-kms version the harness builds (a pseudo-version:
// local-kms has no tagged release with secp256k1 signing).
const Version = "v0.0.0-20260228092603-2a5e92d09ab6"

// Package is what `go install` builds.
const Package = "github.com/nsmithuk/local-kms@" + Version

// Region and AccountID are the region and AWS account local-kms runs as.
const (
	Region    = "eu-west-2"
	AccountID = "111122223333"
)

// Server is a running local-kms.
type Server struct {
	// Endpoint is its URL (http://127.0.0.1:port).
	Endpoint string
	proc     *proc.Process
}

// Env returns the environment a process (the service under test) needs to
// reach the server with the AWS SDK's standard chain: dummy credentials
// (local-kms checks none) and the region.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=" + Region}
}

// Client returns an keystore.KMSClient of the server (dummy credentials).
func (s *Server) Client(t testing.TB) *awskms.Client {
	t.Helper()
	c, err := awskms.New(context.Background(), awskms.Options{
		Region: Region, Endpoint: s.Endpoint, Conns: 64,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	if err != nil {
		t.Fatalf("kmstest: client: %v", err)
	}
	return c
}

// CreateKey creates a key on the server with the given spec and usage
// (e.g. keystore.KMSKeySpec and keystore.KMSKeyUsage, or a wrong one) and
// returns its ARN.
func (s *Server) CreateKey(t testing.TB, spec, usage string) string {
	t.Helper()
	arn, err := s.Client(t).CreateKeyWith(context.Background(), spec, usage, "kmstest")
	if err != nil {
		t.Fatalf("kmstest: create key %s %s: %v", spec, usage, err)
	}
	return arn
}

// Start starts local-kms on a free port with its data in a temporary
// directory; it stops at the end of the test. It skips the test when
// local-kms can be neither found nor built, unless CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		ci.SkipOrFail(t, "kmstest: %v\nto enable: make local-kms (GOBIN=<module root>/.cache/bin go install %s)", err, Package)
	}
	dir := t.TempDir()
	port := freeport.Get(t)
	s := &Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
	s.proc = proc.New(proc.Spec{
		Name: "local-kms",
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), "KMS_REGION="+Region, "KMS_ACCOUNT_ID="+AccountID,
				"KMS_DATA_PATH="+filepath.Join(dir, "data"), "KMS_SEED_PATH="+filepath.Join(dir, "none.yaml"))
			return cmd
		},
		LogPath:      filepath.Join(dir, "local-kms.log"),
		Ready:        func(ctx context.Context) error { return dial(ctx, port) },
		ReadyTimeout: 30 * time.Second,
		StopTimeout:  5 * time.Second,
	})
	t.Cleanup(func() {
		_ = s.proc.Stop()
		if t.Failed() {
			t.Logf("local-kms log (tail):\n%s", s.proc.LogTail(30))
		}
	})
	if err := s.proc.Start(); err != nil {
		t.Fatalf("kmstest: %v\n%s", err, s.proc.LogTail(30))
	}
	return s
}

// Stop stops the server (its port stops answering).
func (s *Server) Stop() error { return s.proc.Stop() }

// Restart starts a stopped server again on the same port and data.
func (s *Server) Restart() error { return s.proc.Start() }

// dial answers nil once port accepts connections.
func dial(ctx context.Context, port int) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	return c.Close()
}

// Binary returns the path of a local-kms to run: local-kms on PATH, else
// <module root>/.cache/bin/local-kms, which it builds with go install the
// first time. A file lock keeps concurrent test binaries from building
// twice.
func Binary() (string, error) { return toolcache.GoInstall("local-kms", Package) }

var _ keystore.KMSClient = (*awskms.Client)(nil)

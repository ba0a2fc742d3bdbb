// Package servicetest builds the txengine binary and runs it for the tests
// and benchmarks that drive the real service (tests/e2e, tests/cluster,
// bench/suite): one way to build it, start it, read its banner (base URL
// and operator token), keep its output, and stop or kill it.
package servicetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Package is the import path of the service's command.
const Package = "github.com/txengine/txengine/cmd/txengine"

// Build builds pkg (Package, or another command of the module) into dir
// and returns the binary's path; race builds with the race detector, whose
// reports racelog reads from the process's output.
func Build(dir, pkg string, race bool, tags ...string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build"}
	if race {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, "-o", bin, pkg)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// Banner lines of txengine serve on standard output.
const (
	urlPrefix   = "txengine is listening on "
	tokenPrefix = "operator token: "
	// tokenFilePrefix starts the line that names the token's file instead,
	// on a start that did not create the token.
	tokenFilePrefix = "operator token file: "
)

// Options of Start.
type Options struct {
	// Env is added to the test process's environment (later entries win).
	Env []string
	// Output, when set, receives the process's output as it comes, as Logs
	// keeps it (standard output lines prefixed "stdout: ").
	Output io.Writer
	// Wait bounds the wait for the banner (default 120 s).
	Wait time.Duration
	// MaxLogs bounds the output kept in memory: past it the kept output
	// starts over (0: all of it).
	MaxLogs int
}

// Process is one running txengine command.
type Process struct {
	cmd *exec.Cmd
	// URL and Token are those of the banner.
	URL, Token string

	opts   Options
	mu     sync.Mutex
	logs   bytes.Buffer
	exited chan struct{}
	err    error
}

// Start runs binary with args (e.g. "serve", "--config", FILE) and waits
// until it prints its operator token (or, on a start that did not create
// it, the file that holds it: then Token is read from there). A
// process that exits first, or does not print it in time (then killed), is
// an error that carries its output.
func Start(binary string, args []string, opts Options) (*Process, error) {
	if opts.Wait <= 0 {
		opts.Wait = 120 * time.Second
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	p := &Process{cmd: cmd, opts: opts, exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = writerFunc(p.write)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	banner := make(chan struct{})
	go func() { // owned by the process: ends when it closes its standard output
		sc := bufio.NewScanner(stdout)
		announced := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.write([]byte("stdout: " + line + "\n"))
			p.mu.Lock()
			if u, ok := strings.CutPrefix(line, urlPrefix); ok {
				p.URL = u
			}
			if tok, ok := strings.CutPrefix(line, tokenPrefix); ok && !announced {
				p.Token, announced = tok, true
				close(banner)
			}
			if path, ok := strings.CutPrefix(line, tokenFilePrefix); ok && !announced {
				b, err := os.ReadFile(path)
				if err != nil {
					b = []byte("(unreadable " + path + ": " + err.Error() + ")")
				}
				p.Token, announced = strings.TrimSpace(string(b)), true
				close(banner)
			}
			p.mu.Unlock()
		}
	}()
	go func() { // owned by the process: ends with it
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.exited)
	}()
	select {
	case <-banner:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before serving: %v\n%s", filepath.Base(binary), p.Err(), p.Logs())
	case <-time.After(opts.Wait):
		p.Kill()
		return nil, fmt.Errorf("%s did not print its banner in %s\n%s", filepath.Base(binary), opts.Wait, p.Logs())
	}
}

func (p *Process) write(b []byte) (int, error) {
	p.mu.Lock()
	if p.opts.MaxLogs > 0 && p.logs.Len() > p.opts.MaxLogs {
		p.logs.Reset()
	}
	p.logs.Write(b)
	p.mu.Unlock()
	if p.opts.Output != nil {
		return p.opts.Output.Write(b)
	}
	return len(b), nil
}

// Logs returns the output kept so far.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is the process's exit error (nil for status 0) once it exited.
func (p *Process) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// ErrStopTimeout is Stop's error for a process that did not exit in time
// (it was killed).
var ErrStopTimeout = errors.New("did not exit in time after SIGTERM; killed")

// Stop sends SIGTERM and waits up to timeout for the exit, whose error
// (nil for status 0) it returns; past timeout it kills the process and
// returns ErrStopTimeout. A process that exited already returns its error.
func (p *Process) Stop(timeout time.Duration) error {
	if p.Running() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
		return p.Err()
	case <-time.After(timeout):
		p.Kill()
		return ErrStopTimeout
	}
}

// Kill sends SIGKILL (kill -9) and waits until the process is gone; a
// no-op once it exited.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Package proc runs the external processes that tests and benchmarks start
// (geth, etcd, Hardhat, Prometheus, PostgreSQL): one way to start one with
// its output appended to a log file, wait until it is ready, stop it (a
// signal, then SIGKILL after a grace period), kill it, restart it and read
// the end of its log. The service binary itself has its own harness
// (internal/servicetest), which reads its banner from standard output.
package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/txengine/txengine/internal/toolcache"
)

// Spec describes a process.
type Spec struct {
	// Name names the process in errors ("geth").
	Name string
	// Command returns the command to run, prepared (path, arguments,
	// directory, environment, credentials); it is called at every start, as
	// an exec.Cmd runs once. Its standard output and error go to LogPath.
	Command func() *exec.Cmd
	// LogPath is the file the output is appended to.
	LogPath string
	// Ready answers nil once the process serves; Start polls it.
	Ready func(ctx context.Context) error
	// ReadyTimeout bounds the wait for Ready (default 60 s).
	ReadyTimeout time.Duration
	// StopSignal asks the process to exit (default SIGTERM).
	StopSignal syscall.Signal
	// StopTimeout is how long Stop waits after StopSignal before SIGKILL
	// (default 30 s).
	StopTimeout time.Duration
	// Group runs the process in its own process group and signals the
	// group: what it spawned ends with it.
	Group bool
}

// ErrExited is the error (wrapped) of a Start whose process exited before
// it was ready.
var ErrExited = errors.New("exited during start-up")

// Process is a process of a Spec, started, stopped and started again. Its
// methods are safe for concurrent use.
type Process struct {
	spec   Spec
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// New returns the (not started) process of spec.
func New(spec Spec) *Process {
	if spec.ReadyTimeout <= 0 {
		spec.ReadyTimeout = 60 * time.Second
	}
	if spec.StopSignal == 0 {
		spec.StopSignal = syscall.SIGTERM
	}
	if spec.StopTimeout <= 0 {
		spec.StopTimeout = 30 * time.Second
	}
	return &Process{spec: spec}
}

// Start starts the process and waits until Ready answers nil. A process
// that exits first is ErrExited; one that is not ready in time is killed.
// Starting a running process is an error.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s: already running", p.spec.Name)
	}
	logf, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", p.spec.Name, err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd := p.spec.Command()
	cmd.Stdout, cmd.Stderr = logf, logf
	if p.spec.Group {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { // owned by the Process: ends when the process exits, which stop and kill wait for
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return p.waitReady(cmd, exited)
}

// waitReady polls Ready until it answers nil, the process exits or the
// timeout passes (then it kills the process). p.mu is held.
func (p *Process) waitReady(cmd *exec.Cmd, exited chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.spec.ReadyTimeout)
	defer cancel()
	for {
		err := p.spec.Ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			p.cmd = nil
			return fmt.Errorf("%s %w: %v", p.spec.Name, ErrExited, cmd.ProcessState)
		case <-ctx.Done():
			p.signal(syscall.SIGKILL)
			<-exited
			p.cmd = nil
			return fmt.Errorf("%s was not ready within %s (killed): %w", p.spec.Name, p.spec.ReadyTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// signal sends sig to the process (its group with Spec.Group). p.mu is
// held and the process runs.
func (p *Process) signal(sig syscall.Signal) {
	if p.spec.Group {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

// Stop sends Spec.StopSignal and waits for the exit; past Spec.StopTimeout
// it kills the process and says so. It is a no-op on a stopped process.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	exited := p.exited
	p.signal(p.spec.StopSignal)
	defer func() { p.cmd = nil }()
	select {
	case <-exited:
		return nil
	case <-time.After(p.spec.StopTimeout):
		p.signal(syscall.SIGKILL)
		<-exited
		return fmt.Errorf("%s did not exit within %s of %s; killed", p.spec.Name, p.spec.StopTimeout, p.spec.StopSignal)
	}
}

// Kill ends the process at once (SIGKILL, kill -9) and waits until it is
// gone. It is a no-op on a stopped process.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	p.signal(syscall.SIGKILL)
	<-p.exited
	p.cmd = nil
}

// Restart stops the process and starts it again.
func (p *Process) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.Start()
}

// Running reports whether the process was started and has not been
// stopped; it may have exited on its own since.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Exited returns a channel closed when the running process exits (nil when
// it is stopped).
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	return p.exited
}

// LogTail returns the last lines of the process's log.
func (p *Process) LogTail(lines int) string { return toolcache.FileTail(p.spec.LogPath, lines) }

package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shell returns a spec running script with sh, ready once the file ready
// exists.
func shell(t *testing.T, script string) (Spec, string) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	return Spec{
		Name:    "sh",
		Command: func() *exec.Cmd { return exec.Command("sh", "-c", script, "sh", ready) },
		LogPath: filepath.Join(dir, "log"),
		Ready: func(context.Context) error {
			_, err := os.Stat(ready)
			return err
		},
		ReadyTimeout: 5 * time.Second,
		StopTimeout:  2 * time.Second,
	}, ready
}

// TestStartStopRestart: a process that becomes ready is running, its
// output is in its log, Stop ends it, Restart starts it again.
func TestStartStopRestart(t *testing.T) {
	spec, ready := shell(t, `echo started; touch "$1"; exec sleep 60`)
	p := New(spec)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if !p.Running() || !strings.Contains(p.LogTail(5), "started") {
		t.Fatalf("running %v, log %q", p.Running(), p.LogTail(5))
	}
	if err := p.Start(); err == nil {
		t.Fatal("a second Start of a running process succeeded")
	}
	exited := p.Exited()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	default:
		t.Fatal("Stop returned before the process exited")
	}
	if p.Running() || p.Stop() != nil {
		t.Fatal("a stopped process is running, or stopping it again fails")
	}
	_ = os.Remove(ready)
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(p.LogTail(10), "started"); n != 2 {
		t.Fatalf("log after a restart holds %d starts: %q", n, p.LogTail(10))
	}
}

// TestExitBeforeReady: a process that exits during start-up is ErrExited.
func TestExitBeforeReady(t *testing.T) {
	spec, _ := shell(t, `echo no; exit 3`)
	err := New(spec).Start()
	if !errors.Is(err, ErrExited) {
		t.Fatalf("Start: %v, want ErrExited", err)
	}
}

// TestNotReadyKilled: a process not ready in time is killed.
func TestNotReadyKilled(t *testing.T) {
	spec, _ := shell(t, `exec sleep 60`)
	spec.ReadyTimeout = 300 * time.Millisecond
	p := New(spec)
	if err := p.Start(); err == nil || p.Running() {
		t.Fatalf("Start: %v, running %v", err, p.Running())
	}
}

// TestStopEscalates: a process that ignores the stop signal is killed after
// StopTimeout, and Stop says so; Group signals what it spawned too.
func TestStopEscalates(t *testing.T) {
	spec, _ := shell(t, `trap "" TERM; touch "$1"; sleep 60 & wait`)
	spec.StopTimeout = 300 * time.Millisecond
	spec.Group = true
	p := New(spec)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop: %v, want a kill after the timeout", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("Stop returned after %s, before its timeout", d)
	}
	if spec.StopSignal != 0 || syscall.SIGTERM != New(spec).spec.StopSignal {
		t.Fatal("the default stop signal is not SIGTERM")
	}
}

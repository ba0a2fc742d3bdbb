// Package toolcache holds what the test harnesses that install a tool into
// <module root>/.cache share (internal/gethtest, internal/kmstest, internal/hardhattest,
// internal/etcdtest, client's TypeScript check): finding the module root,
// telling an executable, quoting the tail of an installer's output, and
// installing pinned Go commands (`go install`) and npm packages (`npm ci`).
package toolcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// ModuleRoot returns the directory of txengine's go.mod above the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/txengine/txengine\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("txengine's go.mod not found above the working directory")
		}
		dir = parent
	}
}

// IsExecutable reports whether p is a regular file someone may execute.
func IsExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// LastLines returns the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FileTail returns the last n lines of the file at path ("" when it cannot
// be read): a harness's log of the process it runs.
func FileTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	return LastLines(string(b), n)
}

// NPMInstall returns <module root>/.cache/<name>, where `npm ci` has
// installed the npm packages that files (package.json, package-lock.json
// and .npmrc, by file name) pin, installing them there first when bins (paths
// relative to that directory, e.g. node_modules/.bin/tsc) are missing or were
// installed from other files. A file lock keeps concurrent test binaries from
// installing twice. It needs node and npm on PATH.
func NPMInstall(name string, files map[string][]byte, bins ...string) (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s not on PATH: %w", tool, err)
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, ".cache", name)
	marker := filepath.Join(dir, ".installed")
	want := installID(files)
	installed := func() bool {
		got, err := os.ReadFile(marker)
		if err != nil || string(got) != want {
			return false
		}
		for _, b := range bins {
			if !IsExecutable(filepath.Join(dir, b)) {
				return false
			}
		}
		return true
	}
	if installed() {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(root, ".cache", name+"-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("install lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("install lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	// Another test binary may have installed it while we waited.
	if installed() {
		return dir, nil
	}
	_ = os.Remove(marker)
	for fname, content := range files {
		if err := os.WriteFile(filepath.Join(dir, fname), content, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", fname, err)
		}
	}
	var out bytes.Buffer
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("`npm ci` in %s failed: %v\n%s", dir, err, LastLines(out.String(), 20))
	}
	for _, b := range bins {
		if !IsExecutable(filepath.Join(dir, b)) {
			return "", fmt.Errorf("npm ci in %s did not produce %s", dir, b)
		}
	}
	if err := os.WriteFile(marker, []byte(want), 0o644); err != nil {
		return "", fmt.Errorf("install marker: %w", err)
	}
	return dir, nil
}

// installID identifies the files an install came from, by name and content.
func installID(files map[string][]byte) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(files[n])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// GoInstall returns the path of the command name: name on PATH, else
// <module root>/.cache/bin/name, which it builds with `go install pkg` (a
// pinned module@version) the first time. A file lock keeps concurrent test
// binaries from building twice.
func GoInstall(name, pkg string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	binDir := filepath.Join(root, ".cache", "bin")
	bin := filepath.Join(binDir, name)
	if IsExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(root, ".cache", name+"-build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("build lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	// Another test binary may have built it while we waited.
	if IsExecutable(bin) {
		return bin, nil
	}
	var out bytes.Buffer
	cmd := exec.Command("go", "install", pkg)
	cmd.Env = append(os.Environ(), "GOBIN="+binDir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s not on PATH nor in %s, and `go install %s` failed: %v\n%s", name, binDir, pkg, err, LastLines(out.String(), 20))
	}
	if !IsExecutable(bin) {
		return "", fmt.Errorf("go install %s did not produce %s", pkg, bin)
	}
	return bin, nil
}

// Package toolcache holds what the test harnesses that install a tool into
// <module root>/.cache share (internal/gethtest, internal/hardhattest,
// internal/etcdtest): finding the module root, telling an executable, and
// quoting the tail of an installer's output.
package toolcache

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

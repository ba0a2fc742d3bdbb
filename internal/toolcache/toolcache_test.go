package toolcache

import (
	"os"
	"path/filepath"
	"testing"
)

func TestModuleRootAndHelpers(t *testing.T) {
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s has no go.mod: %v", root, err)
	}
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "x"), filepath.Join(dir, "y")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !IsExecutable(exe) || IsExecutable(plain) || IsExecutable(dir) {
		t.Fatalf("IsExecutable: %v %v %v", IsExecutable(exe), IsExecutable(plain), IsExecutable(dir))
	}
	if got := LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Fatalf("LastLines = %q", got)
	}
	log := filepath.Join(dir, "log")
	if err := os.WriteFile(log, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := FileTail(log, 2); got != "two\nthree" {
		t.Fatalf("FileTail = %q", got)
	}
	if got := FileTail(filepath.Join(dir, "missing"), 2); got != "" {
		t.Fatalf("FileTail of a missing file = %q", got)
	}
}

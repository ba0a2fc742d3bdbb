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

// TestInstallID: an npm install is redone when any of its files changes,
// by content or by name, and not when only the map's order does.
func TestInstallID(t *testing.T) {
	a := installID(map[string][]byte{"package.json": []byte("{}"), "package-lock.json": []byte("x")})
	if b := installID(map[string][]byte{"package-lock.json": []byte("x"), "package.json": []byte("{}")}); a != b {
		t.Fatalf("same files, different ids: %s %s", a, b)
	}
	for _, other := range []map[string][]byte{
		{"package.json": []byte("{ }"), "package-lock.json": []byte("x")},
		{"package.json": []byte("{}"), "package-lock.json": []byte("x"), ".npmrc": nil},
		{"package.json": []byte("{}x"), "package-lock.json": nil},
	} {
		if installID(other) == a {
			t.Errorf("files %q have the id of other files", other)
		}
	}
}

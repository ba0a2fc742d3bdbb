package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// belowRoot are the packages split out of the engine by concern that the
// root imports (the ABI codec, key custody): none of them may import the
// root, directly or through a dependency.
var belowRoot = []string{"./abicodec", "./keystore", "./keystore/awskms", "./keystore/kmsfake"}

// aboveRoot are the packages split out of the engine by concern that
// import the root (the subscription processor): the root never imports them.
var aboveRoot = []string{"github.com/txengine/txengine/engine/subscribe"}

// TestEngineImportsNoFramework keeps the domain free of the HTTP framework,
// the database layer and the actor library (ENGINE.md, "Shape"), directly or
// through a dependency: the root package and its sub-packages by concern.
func TestEngineImportsNoFramework(t *testing.T) {
	forbidden := []string{"github.com/gin-gonic/", "github.com/jmoiron/sqlx", "github.com/asynkron/protoactor-go", "github.com/lib/pq", "modernc.org/sqlite"}
	pkgs := append([]string{".", "./subscribe"}, belowRoot...)
	for _, pkg := range pkgs {
		for _, dep := range goListDeps(t, pkg) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// TestSubPackagesDoNotImportEngine keeps the import graph acyclic: the
// sub-packages the root imports never import the root engine package.
func TestSubPackagesDoNotImportEngine(t *testing.T) {
	const root = "github.com/txengine/txengine/engine"
	for _, pkg := range belowRoot {
		for _, dep := range goListDeps(t, pkg) {
			if dep == root {
				t.Errorf("%s depends on the root engine package", pkg)
			}
		}
	}
}

// TestEngineRootImportsNoConcern keeps the import graph acyclic the
// go-ethereum way: the packages split out by concern above the domain
// import the root package, never the reverse.
func TestEngineRootImportsNoConcern(t *testing.T) {
	for _, dep := range goListDeps(t, ".") {
		for _, sub := range aboveRoot {
			if dep == sub || strings.HasPrefix(dep, sub+"/") {
				t.Errorf("the root engine package depends on %s", dep)
			}
		}
	}
}

// goListDeps lists the import paths pkg depends on, itself included.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenDeps are the frameworks the domain stays free of: the HTTP
// framework, the database layer and the actor library (ENGINE.md, "Shape").
var forbiddenDeps = []string{"github.com/gin-gonic/", "github.com/jmoiron/sqlx", "github.com/asynkron/protoactor-go", "github.com/lib/pq", "modernc.org/sqlite"}

// goDeps returns the packages pkg depends on, directly or not.
func goDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// TestEngineImportsNoFramework keeps the domain free of the HTTP framework,
// the database layer and the actor library (ENGINE.md, "Shape"), directly or
// through a dependency: the root package and its sub-packages by concern.
func TestEngineImportsNoFramework(t *testing.T) {
	for _, pkg := range []string{".", "./subscribe"} {
		for _, dep := range goDeps(t, pkg) {
			for _, f := range forbiddenDeps {
				if strings.HasPrefix(dep, f) {
					t.Errorf("engine package %s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// TestEngineRootImportsNoConcern keeps the import graph acyclic the
// go-ethereum way: the packages split out by concern import the root
// package (the domain), never the reverse.
func TestEngineRootImportsNoConcern(t *testing.T) {
	for _, dep := range goDeps(t, ".") {
		for _, sub := range []string{"github.com/txengine/txengine/engine/subscribe"} {
			if dep == sub || strings.HasPrefix(dep, sub+"/") {
				t.Errorf("the root engine package depends on %s", dep)
			}
		}
	}
}

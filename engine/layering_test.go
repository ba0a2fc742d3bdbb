package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// subPackages are the packages split out of the engine by concern: the
// root imports them, so none of them may import the root (directly or
// through a dependency), and they obey the same layering.
var subPackages = []string{"./abicodec", "./keystore", "./keystore/awskms", "./keystore/kmsfake"}

// TestEngineImportsNoFramework keeps the domain free of the HTTP framework,
// the database layer and the actor library (ENGINE.md, "Shape"), directly or
// through a dependency; the packages split out of it as well.
func TestEngineImportsNoFramework(t *testing.T) {
	forbidden := []string{"github.com/gin-gonic/", "github.com/jmoiron/sqlx", "github.com/asynkron/protoactor-go", "github.com/lib/pq", "modernc.org/sqlite"}
	for _, pkg := range append([]string{"."}, subPackages...) {
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
// engine's sub-packages (the ABI codec, key custody) never import the root
// engine package, which imports them.
func TestSubPackagesDoNotImportEngine(t *testing.T) {
	const root = "github.com/txengine/txengine/engine"
	for _, pkg := range subPackages {
		for _, dep := range goListDeps(t, pkg) {
			if dep == root {
				t.Errorf("%s depends on the root engine package", pkg)
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

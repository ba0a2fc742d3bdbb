package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEngineImportsNoFramework keeps the domain free of the HTTP framework,
// the database layer and the actor library (ENGINE.md, "Shape"), directly or
// through a dependency.
func TestEngineImportsNoFramework(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"github.com/gin-gonic/", "github.com/jmoiron/sqlx", "github.com/asynkron/protoactor-go", "github.com/lib/pq", "modernc.org/sqlite"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("engine depends on %s", dep)
			}
		}
	}
}

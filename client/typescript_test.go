package client

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/toolcache"
)

// The npm tools ts/package-lock.json pins, relative to their install
// directory.
const (
	openapiTypeScript = "node_modules/.bin/openapi-typescript"
	tsc               = "node_modules/.bin/tsc"
	redocly           = "node_modules/.bin/redocly"
)

// TestTypeScriptClient checks the served document (http/openapi.json) with
// the npm tools an integrator uses, pinned by ts/package.json and
// ts/package-lock.json and installed with `npm ci` into
// <module root>/.cache/api-ts: openapi-typescript generates the TypeScript
// types, `tsc --noEmit` compiles ts/check.ts against them, and Redocly lints
// the document with no warning but those ts/.redocly.lint-ignore.yaml
// accepts (each with its reason).
func TestTypeScriptClient(t *testing.T) {
	files := map[string][]byte{}
	for _, name := range []string{"package.json", "package-lock.json", ".npmrc"} {
		b, err := os.ReadFile(filepath.Join("ts", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	tools, err := toolcache.NPMInstall("api-ts", files, openapiTypeScript, tsc, redocly)
	if err != nil {
		ci.SkipOrFail(t, "%v\nto enable: install Node.js (20.19 or later) and npm; the test installs its npm tools into <module root>/.cache/api-ts itself", err)
	}
	src, err := filepath.Abs("ts")
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join("..", "..", "http", "openapi.json") // from ts/, as the ignore file names it

	run := func(dir, bin string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(filepath.Join(tools, bin), args...)
		cmd.Dir = dir
		// Redocly: no usage report, no update check.
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%s %v: %v\n%s%s", bin, args, err, toolcache.LastLines(string(out), 40), toolcache.LastLines(string(stderr), 40))
		}
		return out
	}

	t.Run("openapi-typescript and tsc", func(t *testing.T) {
		work := t.TempDir()
		for _, name := range []string{"check.ts", "tsconfig.json"} {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(src, openapiTypeScript, doc, "-o", filepath.Join(work, "api.d.ts"))
		if fi, err := os.Stat(filepath.Join(work, "api.d.ts")); err != nil || fi.Size() == 0 {
			t.Fatalf("openapi-typescript wrote no types: %v", err)
		}
		run(work, tsc, "--noEmit", "-p", "tsconfig.json")
	})

	t.Run("redocly lint", func(t *testing.T) {
		var res struct {
			Totals struct {
				Errors, Warnings, Ignored int
			} `json:"totals"`
			Problems []struct {
				RuleID   string `json:"ruleId"`
				Severity string `json:"severity"`
				Message  string `json:"message"`
				Location []struct {
					Pointer string `json:"pointer"`
				} `json:"location"`
			} `json:"problems"`
		}
		out := run(src, redocly, "lint", "--format=json", doc)
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("redocly lint output: %v\n%s", err, out)
		}
		for _, p := range res.Problems {
			where := ""
			if len(p.Location) > 0 {
				where = p.Location[0].Pointer
			}
			t.Errorf("redocly %s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
		}
		if res.Totals.Errors+res.Totals.Warnings != len(res.Problems) {
			t.Errorf("redocly totals %+v but %d problems listed", res.Totals, len(res.Problems))
		}
		t.Logf("redocly: %d errors, %d warnings, %d accepted in ts/.redocly.lint-ignore.yaml", res.Totals.Errors, res.Totals.Warnings, res.Totals.Ignored)
	})
}

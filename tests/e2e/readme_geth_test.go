package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/ci"
	"github.com/txengine/txengine/internal/freeport"
	"github.com/txengine/txengine/internal/gethtest"
	"github.com/txengine/txengine/internal/toolcache"
	"github.com/txengine/txengine/persistence/postgres/pgtest"
)

// readmeGethSteps are the commands of docs/running.md's "A local geth" block
// ("The same by hand"), one per step, continuation lines joined and
// comments dropped.
type readmeGethSteps struct {
	install string   // 1. go install geth
	geth    string   // 2. the dev node
	exports []string // 3. NAME=value of every export
	deploy  string   // 4. token deploy
	serve   string   // 5. serve
}

// parseReadmeGeth reads the steps from docs/running.md, so that the test
// walks what the page says, not a copy of it.
func parseReadmeGeth(t *testing.T) readmeGethSteps {
	t.Helper()
	raw, err := os.ReadFile("../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	_, section, ok := strings.Cut(text, "### A local geth")
	if !ok {
		t.Fatal(`docs/running.md has no "### A local geth" section`)
	}
	_, block, ok := strings.Cut(section, "The same by hand:\n\n```sh\n")
	if !ok {
		t.Fatal(`docs/running.md "A local geth": no sh block after "The same by hand:"`)
	}
	block, _, _ = strings.Cut(block, "```")
	block = strings.ReplaceAll(block, "\\\n", " ")
	var s readmeGethSteps
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "export "):
			s.exports = append(s.exports, strings.Fields(strings.TrimPrefix(line, "export "))...)
		case strings.Contains(line, "go install") && strings.Contains(line, "go-ethereum/cmd/geth@"):
			s.install = line
		case strings.HasPrefix(line, ".cache/bin/geth --dev"):
			s.geth = line
		case strings.Contains(line, "./cmd/txengine token deploy"):
			s.deploy = line
		case strings.HasPrefix(line, "go run ./cmd/txengine serve"):
			s.serve = line
		default:
			t.Fatalf("docs/running.md \"A local geth\": a line this test does not know: %q", line)
		}
	}
	if s.install == "" || s.geth == "" || len(s.exports) == 0 || s.deploy == "" || s.serve == "" {
		t.Fatalf("docs/running.md \"A local geth\": missing steps in %+v", s)
	}
	return s
}

// shellWords splits a command line on blanks, keeping "double-quoted"
// words whole (the page's commands need no more of the shell).
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// portRE finds the page's fixed ports, replaced by free ones.
var portRE = regexp.MustCompile(`\b854[56]\b`)

// TestReadmeLocalGeth walks docs/running.md's "A local geth" steps in a
// temporary directory, as a user on a fresh machine would: the geth binary
// of step 1 (gethtest's, linked where step 1 puts it), the dev node of
// step 2 (free ports instead of 8545/8546), the exports of step 3, `token
// deploy` of step 4 on a data dir that does not exist yet and the serve of
// step 5, then the deployed token is listed by the API. "postgres" runs the
// same with TXENGINE_DATABASE_URL and TXENGINE_MASTER_KEY set (step 4's
// "or TXENGINE_DATABASE_URL"), where nothing but the operator token's write
// creates the data dir.
func TestReadmeLocalGeth(t *testing.T) {
	steps := parseReadmeGeth(t)
	if !strings.Contains(steps.install, gethtest.Package) {
		t.Errorf("docs/running.md step 1 %q does not install %s, the geth the tests run", steps.install, gethtest.Package)
	}
	gethBin, err := gethtest.Binary()
	if err != nil {
		ci.SkipOrFail(t, "geth is needed (put it on PATH or in .cache/bin, e.g. make run-dev-stack builds it): %v", err)
	}
	for _, variant := range []string{"embedded", "postgres"} {
		t.Run(variant, func(t *testing.T) {
			var extra []string
			if variant == "postgres" {
				extra = []string{"TXENGINE_DATABASE_URL=" + pgtest.New(t), "TXENGINE_MASTER_KEY=" + strings.Repeat("ab", 32)}
			}
			walkReadmeGeth(t, steps, gethBin, extra)
		})
	}
}

// walkReadmeGeth runs steps 2 to 5 in a fresh directory with extra
// environment variables.
func walkReadmeGeth(t *testing.T, steps readmeGethSteps, gethBin string, extra []string) {
	dir := t.TempDir()
	// Step 1 leaves geth in .cache/bin.
	if err := os.MkdirAll(filepath.Join(dir, ".cache", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gethBin, filepath.Join(dir, ".cache", "bin", "geth")); err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{"8545": strconv.Itoa(freeport.Get(t)), "8546": strconv.Itoa(freeport.Get(t))}
	local := func(s string) string {
		return portRE.ReplaceAllStringFunc(s, func(p string) string { return ports[p] })
	}

	// Step 2: the dev node, in the background.
	words := shellWords(local(steps.geth))
	geth := exec.Command(filepath.Join(dir, words[0]), words[1:]...)
	geth.Dir = dir
	gethLog, err := os.Create(filepath.Join(t.TempDir(), "geth.log"))
	if err != nil {
		t.Fatal(err)
	}
	geth.Stdout, geth.Stderr = gethLog, gethLog
	if err := geth.Start(); err != nil {
		t.Fatalf("step 2: %v", err)
	}
	t.Cleanup(func() {
		_ = geth.Process.Kill()
		_ = geth.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(gethLog.Name())
			t.Logf("geth log (tail):\n%s", toolcache.LastLines(string(out), 30))
		}
	})

	// Step 3: the exports, relative paths taken from the directory the
	// user runs in.
	var env []string
	dataDir := ""
	for _, kv := range steps.exports {
		name, value, ok := strings.Cut(local(kv), "=")
		if !ok {
			t.Fatalf("step 3: %q is not NAME=value", kv)
		}
		if strings.HasPrefix(value, "./") {
			value = filepath.Join(dir, value)
		}
		if name == "TXENGINE_DATA_DIR" {
			dataDir = value
		}
		env = append(env, name+"="+value)
	}
	env = append(env, extra...)
	if dataDir == "" {
		t.Fatal("step 3 does not export TXENGINE_DATA_DIR")
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("data dir %s exists before step 4 (%v): the test would not show it is created", dataDir, err)
	}
	waitRPC(t, dir, "http://127.0.0.1:"+ports["8545"])

	// Step 4: token deploy, with the binary instead of go run.
	deploy := shellWords(steps.deploy)
	deploy = deploy[slices.Index(deploy, "./cmd/txengine")+1:]
	cmd := exec.Command(binary, deploy...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := combinedOutput(t, cmd)
	if err != nil {
		t.Fatalf("step 4 (txengine %s): %v\n%s", strings.Join(deploy, " "), err, out)
	}
	m := regexp.MustCompile(`deployed on (\S+) at (0x[0-9a-fA-F]{40})`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("step 4 printed:\n%s", out)
	}
	network, address := string(m[1]), string(m[2])
	if fi, err := os.Stat(filepath.Join(dataDir, "operator.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("step 4 left no operator token in %s: %v, %v", dataDir, fi, err)
	}

	// Step 5: serve (on a free port; the page's default is 8080).
	serve := shellWords(steps.serve)
	svc := startServiceArgs(t, dataDir, serve[slices.Index(serve, "serve")+1:], env...)
	defer svc.stop()
	items, _ := svc.must(200, "GET", "/tokens", svc.Token, nil).([]any)
	found := false
	for _, it := range items {
		tok, _ := it.(map[string]any)
		params, _ := tok["parameters"].(map[string]any)
		if tok["network"] == network && strings.EqualFold(fmt.Sprint(tok["address"]), address) && params["symbol"] == "DEMO" {
			found = true
		}
	}
	if !found {
		t.Fatalf("GET /tokens does not list the DEMO token of step 4 (%s on %s): %v", address, network, items)
	}
}

// waitRPC waits until geth answers on url (geth attach, as the Makefile
// does), at most 60 s.
func waitRPC(t *testing.T, dir, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.Command(filepath.Join(dir, ".cache", "bin", "geth"), "attach", "--exec", "eth.blockNumber", url)
		if err := cmd.Run(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("geth did not answer on %s in 60s", url)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

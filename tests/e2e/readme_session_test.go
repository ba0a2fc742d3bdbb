package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/txengine/txengine/internal/ci"
)

// readmeBlock returns the first ```sh block after heading in README.md.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README.md %q: no sh block", heading)
	}
	block, _, _ = strings.Cut(block, "```")
	return block
}

// TestReadmeTwoCommands checks that README's two commands are exactly
// `make run` and `make test`, that the Makefile has both targets, and that
// `make run` starts `serve` on a data dir, as TestReadmeCurlSession does.
func TestReadmeTwoCommands(t *testing.T) {
	var cmds []string
	for _, line := range strings.Split(readmeBlock(t, "## Two commands"), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	if strings.Join(cmds, "|") != "make run|make test" {
		t.Fatalf("README's two commands are %q, not make run and make test", cmds)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"run", "test"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).Match(makefile) {
			t.Errorf("the Makefile has no target %q", target)
		}
	}
	recipe := regexp.MustCompile(`(?m)^run:.*\n\t(.*)$`).FindSubmatch(makefile)
	if recipe == nil || !strings.Contains(string(recipe[1]), "TXENGINE_DATA_DIR=$(DATA) ./$(BIN) serve") {
		t.Errorf("make run no longer runs `TXENGINE_DATA_DIR=$(DATA) ./$(BIN) serve` (%q): TestReadmeCurlSession starts the service that way", recipe)
	}
}

// runReadme runs script, README's blocks, with sh -e against s, whose data
// dir is dir: the URL (s's port, not 8080) and the data dir of the
// operator token (dir, not ./data) change, each found once. It returns
// what the script printed.
func runReadme(t *testing.T, s *service, dir, script string) []byte {
	t.Helper()
	for _, sub := range []struct{ old, new string }{
		{"URL=http://127.0.0.1:8080\n", "URL=" + s.URL + "\n"},
		{"$(cat data/operator.token)", "$(cat " + filepath.Join(dir, "operator.token") + ")"},
	} {
		if n := strings.Count(script, sub.old); n != 1 {
			t.Fatalf("README's curl session has %q %d times, not once: update this test's substitutions", sub.old, n)
		}
		script = strings.Replace(script, sub.old, sub.new, 1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("README's curl session failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return out
}

// TestReadmeCurlSession runs README's "A session with curl" block with sh,
// as written, against the service started on the embedded default in a
// temporary data dir (what `make run` does, on a free port). Two words
// change: the URL (the test's port, not 8080) and the data dir of the
// operator token (the temporary one, not ./data). The outputs must be the
// ones the README's comments promise: the demo token, a user with a token
// and an account, the transfer's 202 with status new, then the transfer
// completed with its hash and Transfer event, and the recipient holding
// 1.5 DEMO.
func TestReadmeCurlSession(t *testing.T) {
	for _, tool := range []string{"sh", "curl", "sed", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			ci.SkipOrFail(t, "README's curl session needs %s on PATH: %v", tool, err)
		}
	}
	dir := t.TempDir()
	s := startService(t, dir)

	out := runReadme(t, s, dir, readmeBlock(t, "## A session with curl"))
	t.Logf("README's curl session printed:\n%s", out)

	// The outputs, in order: GET /tokens, the new user, the transfer's
	// body and its status code, the completed transaction, the balance.
	var values []any
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("output %d is not JSON: %v", len(values)+1, err)
		}
		values = append(values, v)
	}
	if len(values) != 6 {
		t.Fatalf("README's curl session printed %d JSON values, want 6 (tokens, user, 202 body, 202, transaction, balance)", len(values))
	}
	field := func(v any, path ...string) any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	str := func(v any, path ...string) string {
		s, _ := field(v, path...).(string)
		return s
	}
	tokens, _ := json.Marshal(values[0])
	if !strings.Contains(string(tokens), `"symbol":"DEMO"`) {
		t.Errorf("GET /tokens has no DEMO: %s", tokens)
	}
	to := str(values[1], "data", "account", "address")
	if !strings.HasPrefix(str(values[1], "data", "token"), "txe_") || !regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`).MatchString(to) {
		t.Errorf("POST /users gave no token or no account address: %v", values[1])
	}
	id := str(values[2], "data", "id")
	if st := str(values[2], "data", "status"); st != "new" || id == "" {
		t.Errorf("the transfer's answer has status %q and id %q, want new and an id", st, id)
	}
	if code, _ := values[3].(float64); code != 202 {
		t.Errorf("the transfer's status code is %v, want 202", values[3])
	}
	tx := values[4]
	if str(tx, "data", "id") != id || str(tx, "data", "status") != "completed" || str(tx, "data", "transactionHash") == "" {
		t.Errorf("the transaction is not the transfer completed with a hash: %v", tx)
	}
	events, _ := field(tx, "data", "events").([]any)
	if len(events) != 1 || str(events[0], "event") != "Transfer" || str(events[0], "returnValues", "to") != to {
		t.Errorf("the completed transfer's events are not one Transfer to %s: %v", to, events)
	}
	if bal := str(values[5], "data"); bal != "1500000000000000000" {
		t.Errorf("the recipient's balance is %q, want 1500000000000000000 (1.5 DEMO)", bal)
	}
}

package client

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestClientUpToDate regenerates the client from http/openapi.json with the
// committed oapi-codegen.yaml and the oapi-codegen go.mod pins, into a
// temporary directory, and fails when client.gen.go differs: run
// `make client` after changing the document.
func TestClientUpToDate(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run the pinned oapi-codegen: %v", err)
	}
	raw, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("oapi-codegen.yaml: %v", err)
	}
	if cfg["output"] != "client/client.gen.go" {
		t.Fatalf("oapi-codegen.yaml: output is %v, want client/client.gen.go (make client runs it from the module root)", cfg["output"])
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "client.gen.go")
	cfg["output"] = out
	tmpCfg := filepath.Join(dir, "oapi-codegen.yaml")
	raw, err = yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmpCfg, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := filepath.Abs(filepath.Join("..", "http", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "tool", "oapi-codegen", "-config", tmpCfg, doc)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool oapi-codegen: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Fatalf("client/client.gen.go is stale: it differs from what oapi-codegen generates from http/openapi.json; run `make client` and commit it")
	}
}

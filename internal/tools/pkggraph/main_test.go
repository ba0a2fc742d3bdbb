package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestPackagesPageUpToDate regenerates docs/packages.md from the tree and
// fails when the committed page differs.
func TestPackagesPageUpToDate(t *testing.T) {
	want, err := Generate("../../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../docs/packages.md")
	if err != nil {
		t.Fatalf("%v: run `make docs-graph`", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/packages.md is out of date with the package imports: run `make docs-graph` and commit it")
	}
}

// TestGenerateShowsModuleEdgesOnly checks the page against facts of the
// tree: http imports engine (an edge in the graph and in the list), no
// package outside the module appears, and two runs give the same bytes.
func TestGenerateShowsModuleEdgesOnly(t *testing.T) {
	page, err := Generate("../../..")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	if !strings.Contains(text, "  http --> engine\n") {
		t.Error("no edge http --> engine in the mermaid graph")
	}
	var httpLine string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "- `http` → ") {
			httpLine = line
		}
	}
	if !strings.Contains(httpLine, "`engine`") || !strings.Contains(httpLine, "Package http serves") {
		t.Errorf("the list's line of http lacks its import of engine or its doc sentence: %q", httpLine)
	}
	_, graph, _ := strings.Cut(text, "```mermaid\n")
	graph, _, _ = strings.Cut(graph, "```")
	for _, outside := range []string{"github.com", `["fmt"]`, `["github.com`} {
		if strings.Contains(graph, outside) {
			t.Errorf("the graph names %s, which is not a package of the module", outside)
		}
	}
	if strings.Contains(text, "- `tests/e2e`") || strings.Contains(graph, `["tests/e2e"]`) {
		t.Error("tests/e2e has test files only and should be left out")
	}
	again, err := Generate("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, again) {
		t.Error("two runs gave different pages")
	}
}

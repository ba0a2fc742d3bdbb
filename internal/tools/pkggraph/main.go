// Command pkggraph writes docs/packages.md, the picture of the module's
// package graph: a mermaid graph (rendered by GitHub) and a plain list, one
// line per package with the first sentence of its doc comment and the
// module packages it imports. It reads the imports with `go list -json
// ./...`: non-test imports only, edges inside the module only, packages
// with no non-test Go file left out. The output is sorted, so the same tree
// always gives the same file. `make docs-graph` runs it from the module's
// root; its test fails when docs/packages.md is out of date.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	out := flag.String("o", "docs/packages.md", "the file to write")
	flag.Parse()
	page, err := Generate(".")
	if err == nil {
		err = os.WriteFile(*out, page, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pkggraph:", err)
		os.Exit(1)
	}
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Doc        string
	GoFiles    []string
	Imports    []string
	Module     *struct{ Path string }
}

// Generate returns docs/packages.md for the module whose root is dir.
func Generate(dir string) ([]byte, error) {
	pkgs, err := list(dir)
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 || pkgs[0].Module == nil {
		return nil, errors.New("go list found no package of a module")
	}
	mod := pkgs[0].Module.Path
	rel := func(path string) string {
		if path == mod {
			return "."
		}
		return strings.TrimPrefix(path, mod+"/")
	}
	inModule := map[string]bool{}
	for _, p := range pkgs {
		inModule[p.ImportPath] = true
	}
	type node struct {
		name, doc string
		imports   []string
	}
	var nodes []node
	for _, p := range pkgs {
		n := node{name: rel(p.ImportPath), doc: strings.TrimSpace(p.Doc)}
		for _, imp := range p.Imports {
			if inModule[imp] {
				n.imports = append(n.imports, rel(imp))
			}
		}
		slices.Sort(n.imports)
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b node) int { return strings.Compare(a.name, b.name) })

	var b bytes.Buffer
	fmt.Fprintf(&b, "# Package graph\n\n")
	fmt.Fprintf(&b, "The packages of `%s` and the module packages each imports (imports of\n", mod)
	fmt.Fprintf(&b, "non-test files only; packages with test files only are left out). Generated from the\n")
	fmt.Fprintf(&b, "imports by `make docs-graph` (`internal/tools/pkggraph`): do not edit; a test fails when\n")
	fmt.Fprintf(&b, "this page is out of date with the tree.\n\n")
	fmt.Fprintf(&b, "```mermaid\ngraph LR\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", id(n.name), n.name)
	}
	for _, n := range nodes {
		for _, imp := range n.imports {
			fmt.Fprintf(&b, "  %s --> %s\n", id(n.name), id(imp))
		}
	}
	fmt.Fprintf(&b, "```\n\n## Packages and their imports\n\n")
	for _, n := range nodes {
		doc := n.doc
		if doc == "" {
			doc = "(no package doc comment)"
		}
		imports := "nothing of the module"
		if len(n.imports) > 0 {
			imports = "`" + strings.Join(n.imports, "`, `") + "`"
		}
		fmt.Fprintf(&b, "- `%s` → %s. %s\n", n.name, imports, doc)
	}
	return b.Bytes(), nil
}

// list runs go list in dir and returns the packages that have non-test Go
// files.
func list(dir string) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list: %w", err)
		}
		if len(p.GoFiles) > 0 {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, nil
}

// id is a mermaid node id for a package path.
func id(name string) string {
	if name == "." {
		return "root"
	}
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(name)
}

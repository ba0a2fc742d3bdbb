// Package docs_test checks the documentation as a reader meets it: README.md
// stays short, and every relative link and #anchor of README.md and
// docs/*.md, and every docs page the code and build files cite, resolves.
package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

// maxReadmeLines bounds README.md (issue 31): what txengine is, the two
// commands, the curl session, a map of the code and links; the rest lives
// in docs/.
const maxReadmeLines = 200

func TestReadmeIsShort(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > maxReadmeLines {
		t.Fatalf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, maxReadmeLines)
	}
}

// markdownPages are README.md and every docs/*.md, relative to root.
func markdownPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pages {
		pages[i], _ = filepath.Rel(root, p)
	}
	return append([]string{"README.md"}, pages...)
}

func TestMarkdownLinksResolve(t *testing.T) {
	var broken []string
	for _, page := range markdownPages(t) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(text)) {
			if msg := resolve(page, l.target); msg != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: (%s): %s", page, l.line, l.target, msg))
			}
		}
	}
	if len(broken) > 0 {
		t.Fatalf("%d broken links:\n%s", len(broken), strings.Join(broken, "\n"))
	}
}

// citeRE finds the docs pages cited in code and build files, with their
// anchor: `docs/api-decisions.md#errors`, `README.md#a-session-with-curl`.
var citeRE = regexp.MustCompile(`\b(docs/[A-Za-z0-9_-]+\.md|README\.md)(#[A-Za-z0-9_-]+)?`)

// TestCitationsResolve checks that every page of docs/ (and README.md) that
// a Go file, the Makefile, a script, a YAML or JSON file cites exists and
// has the cited anchor, so a comment such as
// "(docs/api-decisions.md#errors)" leads somewhere.
func TestCitationsResolve(t *testing.T) {
	var broken []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".sh", ".yaml", ".yml", ".json", ".sql":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(raw), "\n") {
			for _, m := range citeRE.FindAllString(line, -1) {
				if msg := resolve("", m); msg != "" {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", rel, i+1, m, msg))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) > 0 {
		t.Fatalf("%d citations of docs that do not resolve:\n%s", len(broken), strings.Join(broken, "\n"))
	}
}

// link is one markdown link of a page.
type link struct {
	line   int
	target string
}

var (
	linkRE = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE = regexp.MustCompile("`[^`]*`")
)

// links returns the links of a markdown text, outside fenced code blocks
// and code spans.
func links(text string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if isFence(line) {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: i + 1, target: m[1]})
		}
	}
	return out
}

func isFence(line string) bool {
	l := strings.TrimSpace(line)
	return strings.HasPrefix(l, "```") || strings.HasPrefix(l, "~~~")
}

// resolve returns why target, a link of page (both relative to root; page ""
// for a path from root), does not resolve, or "" when it does. External
// links are not checked.
func resolve(page, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		path = filepath.Join(filepath.Dir(page), file)
	}
	if _, err := os.Stat(filepath.Join(root, path)); err != nil {
		return "no such file " + path
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(path, ".md") {
		return "an anchor into a file that is not markdown"
	}
	raw, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err.Error()
	}
	if ids := anchors(string(raw)); !slices.Contains(ids, anchor) {
		return fmt.Sprintf("%s has no heading #%s", path, anchor)
	}
	return ""
}

// anchors returns the ids GitHub gives the headings of a markdown text
// (outside fenced code blocks): lower case, punctuation dropped, blanks as
// hyphens, "-1", "-2"... on repeats.
func anchors(text string) []string {
	var ids []string
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if isFence(line) {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(title, " ") {
			continue
		}
		id := slug(title)
		if n := seen[id]; n > 0 {
			ids = append(ids, fmt.Sprintf("%s-%d", id, n))
		} else {
			ids = append(ids, id)
		}
		seen[id]++
	}
	return ids
}

// mdLinkText keeps the text of a link in a heading.
var mdLinkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func slug(title string) string {
	title = mdLinkText.ReplaceAllString(strings.TrimSpace(title), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"Throughput, CPU and the database":                                    "throughput-cpu-and-the-database",
		"The embedded default (`make run`)":                                   "the-embedded-default-make-run",
		"PostgreSQL and a local geth (the production shape)":                  "postgresql-and-a-local-geth-the-production-shape",
		"Many accounts and one account's burst, with the defaults (issue 16)": "many-accounts-and-one-accounts-burst-with-the-defaults-issue-16",
		"Running (the embedded default)":                                      "running-the-embedded-default",
	} {
		if got := slug(title); got != want {
			t.Errorf("slug(%q) = %q, want %q", title, got, want)
		}
	}
}

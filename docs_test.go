package chargeonce_test

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// TestDocuments_EveryCitationAndLinkResolves keeps the documents and their
// citations together: a comment, a README or a config file that names a
// document the repository does not have sends its reader nowhere.
func TestDocuments_EveryCitationAndLinkResolves(t *testing.T) {
	problems, err := brokenReferences(".")
	require.NoError(t, err)
	require.Empty(t, problems, "every cited document and every relative Markdown link must exist in the repository:\n%s", strings.Join(problems, "\n"))
}

func TestBrokenReferences_ReportsWhatIsMissing(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "a Go comment citing a missing contract",
			files: map[string]string{"a/a.go": "package a\n\n// f speaks the contract\n// (contracts/provider-http.md).\nfunc f() {}\n"},
			want:  []string{"a/a.go:4: cites contracts/provider-http.md, which the repository lacks"},
		},
		{
			name:  "a Go string is not a citation",
			files: map[string]string{"a/a.go": "package a\n\nconst s = \"docs/missing.md\"\n"},
		},
		{
			name: "a citation resolves beside its file or at the root",
			files: map[string]string{
				"docs/design.md": "# Design\n",
				"p/README.md":    "# p\n",
				"p/p.go":         "package p\n\n/* See README.md,\n   docs/design.md and ./README.md. */\n",
			},
		},
		{
			name:  "an upper-case name in the Makefile",
			files: map[string]string{"Makefile": "# the rules are in\n# STYLE.md\nall:\n"},
			want:  []string{"Makefile:2: cites STYLE.md, which the repository lacks"},
		},
		{
			name:  "a document named in YAML",
			files: map[string]string{"deploy/alerts.yml": "# runbook: docs/runbook.md\ngroups: []\n"},
			want:  []string{"deploy/alerts.yml:1: cites docs/runbook.md, which the repository lacks"},
		},
		{
			name:  "lower-case names outside docs/ and URLs are not citations",
			files: map[string]string{"README.md": "Notes in notes.md, and https://example.com/docs/README.md.\n"},
		},
		{
			name: "Markdown links to missing files, outside the repository or in code spans",
			files: map[string]string{
				"README.md":      "# chargeonce\n\nRead [the design](docs/design.md) and [the API](docs/api.md#errors).\n",
				"docs/design.md": "Back to the [README](../README.md), up to [shared](../../shared/DESIGN.md), and `docs/gone.md`.\n",
			},
			want: []string{
				"README.md:3: links to docs/api.md, which does not exist",
				"docs/design.md:1: cites docs/gone.md, which the repository lacks",
				"docs/design.md:1: links to ../../shared/DESIGN.md, which is outside the repository",
			},
		},
		{
			name: "Markdown links that resolve, and links that are not files",
			files: map[string]string{
				"README.md":    "[API](docs/api.md#errors) [ref] [Temporal](https://temporal.io) [up](#layout) [mail](mailto:a@b.example)\n\n[ref]: deploy/\n\n## Layout\n",
				"docs/api.md":  "# API\n\n## Errors\n",
				"deploy/a.yml": "a: 1\n",
			},
		},
		{
			name:  "a line that starts with an inline link and a colon is no definition",
			files: map[string]string{"README.md": "- the tests and\n  [Benchmarks](docs/bench.md): what they measure\n", "docs/bench.md": "# Benchmarks\n"},
		},
		{
			name: "a fragment names a heading of its Markdown target",
			files: map[string]string{
				"README.md": "# chargeonce\n\n## Two commands\n\n[up](#two-commands) [API](docs/api.md#get-apiordersid) [again](docs/api.md#errors-1)\n" +
					"[file](docs/api.md) [code](api.go#L3) [gone](#three-commands) [other](docs/api.md#fenced)\n",
				"docs/api.md": "# API\n\n### `GET /api/orders/{id}`\n\n## Errors\n\n```sh\n# fenced\n```\n\n## Errors ##\n",
				"api.go":      "package api\n",
			},
			want: []string{
				"README.md:6: links to #three-commands, which names no heading of README.md",
				"README.md:6: links to docs/api.md#fenced, which names no heading of docs/api.md",
			},
		},
		{
			name:  "a reference-style link to a missing file",
			files: map[string]string{"README.md": "See [the contract][c].\n\n[c]: docs/contract.md\n"},
			want:  []string{"README.md:3: links to docs/contract.md, which does not exist"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tt.files {
				p := filepath.Join(root, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			}
			problems, err := brokenReferences(root)
			require.NoError(t, err)
			require.Equal(t, tt.want, problems)
		})
	}
}

var (
	// mdPathPattern matches a path that ends in a Markdown file name.
	mdPathPattern = regexp.MustCompile(`[\w./-]*[\w-]\.md\b`)
	// upperNamePattern matches the upper-case names of top-level documents,
	// such as README.md.
	upperNamePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_-]*\.md$`)
	// urlPattern matches absolute URLs, which are not paths in the repository.
	urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://\S+`)
	// mdLinkPattern matches an inline Markdown link; its group is the target.
	mdLinkPattern = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// mdRefDefPattern matches a reference-style link definition.
	mdRefDefPattern = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)`)
	// schemePattern matches a link target with a scheme (https:, mailto:).
	schemePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// brokenReferences walks the repository at root and reports, one line each
// as "path:line: what", every document that a Go comment, a Markdown file,
// the Makefile or a YAML file cites and the repository lacks, and every
// relative Markdown link whose target does not exist. A citation is a path to
// a Markdown file under docs/ or contracts/, or an upper-case name such as
// README.md; it resolves beside the citing file or at the root.
func brokenReferences(root string) ([]string, error) {
	var problems []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name := d.Name()
		isGo := strings.HasSuffix(name, ".go")
		isMarkdown := strings.HasSuffix(name, ".md")
		isConfig := name == "Makefile" || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".yaml")
		if !isGo && !isMarkdown && !isConfig {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := refChecker{root: root, file: rel}
		switch {
		case isGo:
			r.goComments(src)
		case isMarkdown:
			r.markdown(string(src))
		default:
			r.lines(string(src), 1)
		}
		problems = append(problems, r.problems...)
		return nil
	})
	sort.Strings(problems)
	return problems, err
}

// refChecker collects the broken references of one file.
type refChecker struct {
	root     string
	file     string // slash-separated, relative to root
	problems []string
}

// goComments checks the comments of a Go source file, and nothing else in it.
func (r *refChecker) goComments(src []byte) {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(r.file, -1, len(src)), src, nil, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return
		}
		if tok == token.COMMENT {
			r.lines(lit, fset.Position(pos).Line)
		}
	}
}

// markdown checks the links of a Markdown file and the citations in the rest
// of its text.
func (r *refChecker) markdown(text string) {
	for i, line := range strings.Split(text, "\n") {
		var targets []string
		// A definition is told before the inline links go: a line that
		// starts with one, "[a](b): c", would read as "[a]: c" after.
		if m := mdRefDefPattern.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
			line = ""
		}
		for _, m := range mdLinkPattern.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		line = mdLinkPattern.ReplaceAllString(line, "]")
		for _, target := range targets {
			r.link(target, i+1)
		}
		r.citations(line, i+1)
	}
}

// lines checks the citations in text whose first line is number first.
func (r *refChecker) lines(text string, first int) {
	for i, line := range strings.Split(text, "\n") {
		r.citations(line, first+i)
	}
}

func (r *refChecker) citations(line string, n int) {
	line = urlPattern.ReplaceAllString(line, " ")
	for _, ref := range mdPathPattern.FindAllString(line, -1) {
		if isCitation(ref) && !r.exists(path.Dir(r.file), ref) && !r.exists(".", ref) {
			r.report(n, "cites %s, which the repository lacks", ref)
		}
	}
}

// isCitation reports whether ref names one of the project's documents.
func isCitation(ref string) bool {
	ref = strings.TrimPrefix(ref, "./")
	for _, dir := range []string{"docs/", "contracts/"} {
		if strings.HasPrefix(ref, dir) || strings.Contains(ref, "/"+dir) {
			return true
		}
	}
	return upperNamePattern.MatchString(path.Base(ref))
}

// link checks one Markdown link target, relative to the file that holds it,
// and its fragment, which must name a heading of a Markdown target.
func (r *refChecker) link(target string, n int) {
	if target == "" || schemePattern.MatchString(target) {
		return
	}
	target, fragment, _ := strings.Cut(target, "#")
	target, _, _ = strings.Cut(target, "?")
	file := r.file
	if target != "" {
		dir := path.Dir(r.file)
		file = path.Join(dir, target)
		switch {
		case strings.HasPrefix(file, "../"):
			r.report(n, "links to %s, which is outside the repository", target)
			return
		case !r.exists(dir, target):
			r.report(n, "links to %s, which does not exist", target)
			return
		}
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return
	}
	src, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(file)))
	if err != nil || !slices.Contains(headingAnchors(string(src)), fragment) {
		r.report(n, "links to %s#%s, which names no heading of %s", target, fragment, file)
	}
}

var (
	// headingPattern matches an ATX heading; its group is the title.
	headingPattern = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// fencePattern matches the line that opens or closes a code block.
	fencePattern = regexp.MustCompile("^ {0,3}(```|~~~)")
)

// headingAnchors are the fragments that name the headings of a Markdown
// text, as GitHub makes them: the title in lower case, without punctuation,
// its spaces hyphens, and a repeated one numbered from -1 on.
func headingAnchors(text string) []string {
	var anchors []string
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fencePattern.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := headingPattern.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		slug := strings.Map(func(c rune) rune {
			switch {
			case c == ' ':
				return '-'
			case unicode.IsLetter(c) || unicode.IsDigit(c) || c == '_' || c == '-':
				return unicode.ToLower(c)
			}
			return -1
		}, m[1])
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug = fmt.Sprintf("%s-%d", slug, n+1)
		} else {
			seen[slug] = 0
		}
		anchors = append(anchors, slug)
	}
	return anchors
}

// exists reports whether ref, relative to dir (both slash-separated and
// relative to the root), names a file or directory inside the repository.
func (r *refChecker) exists(dir, ref string) bool {
	p := path.Join(dir, ref)
	if p == ".." || strings.HasPrefix(p, "../") {
		return false
	}
	_, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(p)))
	return err == nil
}

func (r *refChecker) report(n int, format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf("%s:%d: %s", r.file, n, fmt.Sprintf(format, args...)))
}

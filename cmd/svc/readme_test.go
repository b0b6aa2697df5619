package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

var update = flag.Bool("update", false, "rewrite the settings table of docs/configuration.md from the settings of svc serve")

const (
	tableStart = "<!-- settings table: generated from cmd/svc/settings.go; go test ./cmd/svc -run TestDocsSettings -update rewrites it -->"
	tableEnd   = "<!-- end of settings table -->"
)

// settingsTable renders every setting as the markdown table of
// docs/configuration.md.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning | Used by |\n|---|---|---|---|---|\n")
	// Pipes would end a cell, <STATE_DIR> would read as an HTML tag.
	cell := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace
	for _, s := range allSettings {
		def := "none"
		switch {
		case s.def != "":
			def = "`" + s.def + "`"
		case strings.Contains(s.help, "default "):
			def = "computed" // the help says how
		}
		used := "serve"
		if slices.ContainsFunc(librarySettings, func(l setting) bool { return l.env == s.env }) {
			used = "serve, run"
		}
		fmt.Fprintf(&b, "| `%s` | `--%s` | %s | %s | %s |\n", s.env, s.flagName(), def, cell(s.help), used)
	}
	return b.String()
}

// TestDocsSettings checks that the settings table of
// docs/configuration.md is the one the settings of svc serve make, so
// that it cannot drift; -update rewrites it.
func TestDocsSettings(t *testing.T) {
	const path = "../../docs/configuration.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(b), tableStart)
	if !ok {
		t.Fatalf("%s has no line %s", path, tableStart)
	}
	table, after, ok := strings.Cut(rest, tableEnd)
	if !ok {
		t.Fatalf("%s has no line %s", path, tableEnd)
	}
	want := "\n" + settingsTable()
	if table == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+tableStart+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: settings table rewritten", path)
		return
	}
	t.Errorf("the settings table of %s differs from the settings of svc serve; "+
		"go test ./cmd/svc -run TestDocsSettings -update rewrites it. Want:\n%s", path, want)
}

// readmeMaxBytes is the size the README stays under: the front door, with
// the rest of the manual in docs/ (issue 21).
const readmeMaxBytes = 15 << 10

// TestReadmeLinks checks the manual's links: every relative link of
// README.md and docs/*.md names a file of the repository and, with a
// #fragment into a markdown file, one of its headings; the README links
// every file of docs/ and stays under readmeMaxBytes.
func TestReadmeLinks(t *testing.T) {
	const root = "../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	linked := map[string]bool{} // cleaned paths the README links
	for _, page := range append([]string{readme}, pages...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if page == readme && len(b) >= readmeMaxBytes {
			t.Errorf("README.md is %d bytes, more than %d: move the detail to docs/", len(b), readmeMaxBytes)
		}
		for _, l := range markdownLinks(string(b)) {
			target, frag, _ := strings.Cut(l, "#")
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: %v", page, l, err)
					continue
				}
			}
			if page == readme {
				linked[filepath.Clean(file)] = true
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			md, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(headingAnchors(string(md)), frag) {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", page, l, file, frag)
			}
		}
	}
	for _, page := range pages {
		if !linked[filepath.Clean(page)] {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

// markdownLinks returns the relative link targets of a markdown text,
// outside code blocks and code spans.
func markdownLinks(md string) []string {
	var links []string
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(line, ""), -1) {
			if u := m[1]; !strings.Contains(u, "://") && !strings.HasPrefix(u, "mailto:") {
				links = append(links, u)
			}
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown text: lowercased, spaces as hyphens, punctuation but hyphens
// and underscores dropped, a repeated anchor numbered from -1.
func headingAnchors(md string) []string {
	var anchors []string
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", a, n))
		} else {
			anchors = append(anchors, a)
		}
		seen[a]++
	}
	return anchors
}

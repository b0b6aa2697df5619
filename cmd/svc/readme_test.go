package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
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

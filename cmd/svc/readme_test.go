package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the settings table of README.md from the settings of svc serve")

const (
	tableStart = "<!-- settings table: generated from cmd/svc/settings.go; go test ./cmd/svc -run TestReadmeSettings -update rewrites it -->"
	tableEnd   = "<!-- end of settings table -->"
)

// settingsTable renders every setting as the README's markdown table.
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

// TestReadmeSettings checks that README.md's configuration table is the
// one the settings of svc serve make, so that it cannot drift; -update
// rewrites it.
func TestReadmeSettings(t *testing.T) {
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	before, rest, ok := strings.Cut(readme, tableStart)
	if !ok {
		t.Fatalf("README.md has no line %s", tableStart)
	}
	table, after, ok := strings.Cut(rest, tableEnd)
	if !ok {
		t.Fatalf("README.md has no line %s", tableEnd)
	}
	want := "\n" + settingsTable()
	if table == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+tableStart+want+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md: settings table rewritten")
		return
	}
	t.Errorf("README.md's settings table differs from the settings of svc serve; "+
		"go test ./cmd/svc -run TestReadmeSettings -update rewrites it. Want:\n%s", want)
}

package svc_test

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestPackageDocIsOneBlock: the package comment of doc.go is one unbroken
// // block. A blank line inside it ends the comment there, and go doc then
// shows only what follows the blank line, without its first sections.
func TestPackageDocIsOneBlock(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go: no package comment")
	}
	doc := f.Doc.Text()
	if !strings.HasPrefix(doc, "Package svc ") {
		t.Errorf("the package comment starts %.60q, want \"Package svc \"", doc)
	}
	// Its first section and its last: nothing between is cut off.
	for _, h := range []string{"# Lifecycle\n", "# Step cache\n", "# Requirements\n"} {
		if !strings.Contains(doc, h) {
			t.Errorf("the package comment has no %q section", strings.TrimSpace(h))
		}
	}
}

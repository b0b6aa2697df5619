package httpapi_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestImports fails when package httpapi imports svc/internal, or anything
// beyond the public svc package, the standard library and its four
// dependencies: it is an adapter over the public API only. (svc itself
// uses its internal packages, so they are among httpapi's transitive
// dependencies; what matters is that httpapi never reaches past svc.)
func TestImports(t *testing.T) {
	out, err := goList("-f", `{{join .Imports "\n"}}`, "github.com/svc-sandbox/svc/httpapi")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/svc-sandbox/svc":         true,
		"github.com/VictoriaMetrics/metrics": true,
		"github.com/google/uuid":             true,
		"golang.org/x/time/rate":             true,
		"go.yaml.in/yaml/v3":                 true,
	}
	imports := strings.Fields(string(out))
	if len(imports) == 0 {
		t.Fatal("go list printed no imports")
	}
	for _, imp := range imports {
		thirdParty := strings.Contains(strings.Split(imp, "/")[0], ".")
		if strings.Contains(imp, "/internal") || thirdParty && !allowed[imp] {
			t.Errorf("httpapi imports %s", imp)
		}
	}
}

// TestNoInternalDeps checks the transitive dependencies with go list -deps:
// every svc/internal package httpapi depends on comes through package svc.
func TestNoInternalDeps(t *testing.T) {
	deps := func(pkg string) map[string]bool {
		out, err := goList("-deps", pkg)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			m[p] = true
		}
		return m
	}
	viaSvc := deps("github.com/svc-sandbox/svc")
	for p := range deps("github.com/svc-sandbox/svc/httpapi") {
		if strings.HasPrefix(p, "github.com/svc-sandbox/svc/internal") && !viaSvc[p] {
			t.Errorf("httpapi depends on %s other than through package svc", p)
		}
	}
}

// goList runs go list with args and returns its standard output (the
// standard error may hold "go: downloading" lines).
func goList(args ...string) ([]byte, error) {
	var stderr strings.Builder
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

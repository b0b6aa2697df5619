package httpapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptClient: a TypeScript client generated from openapi.yaml by
// openapi-typescript type-checks (tsc --strict) requests as clients
// write them: one with steps alone, omitting the optional cache and
// stop_on_failure, and /info's Go build cache state. A schema default
// made them required in the generated type (openapi-typescript's
// defaultNonNullable), so the schema gives none. A request without steps
// must not type-check, so that the check is known to bite. Both packages
// come from the npm registry, pinned, into a directory of the test's:
// skipped without npm, failed in CI (CI=true), which installs it.
func TestTypeScriptClient(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must have npm (Debian package npm, or nodejs from NodeSource): %v", err)
		}
		t.Skipf("needs npm to install openapi-typescript and typescript: %v", err)
	}
	doc, err := filepath.Abs("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(name string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"), "npm_config_update_notifier=false")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "openapi-typescript@7.13.0", "typescript@5.9.3"); err != nil {
		t.Fatalf("npm install: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "node_modules", ".bin")
	if out, err := run(filepath.Join(bin, "openapi-typescript"), doc, "-o", "api.ts"); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	tsc := func(file, src string) (string, error) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return run(filepath.Join(bin, "tsc"), "--noEmit", "--strict", "--target", "es2020", "--module", "esnext", "--moduleResolution", "bundler", file)
	}
	if out, err := tsc("request.ts", `import type { components } from "./api";
type S = components["schemas"];
export const plain: S["ExecuteRequest"] = { steps: [{ cmd: "echo", args: ["hi"] }] };
export const full: S["ExecuteRequest"] = { steps: [{ cmd: "true" }], cache: true, stop_on_failure: true };
export const gc: NonNullable<S["Info"]["go_build_cache"]> = { state: "preparing" };
`); err != nil {
		t.Errorf("a request omitting cache and stop_on_failure does not type-check against the generated client: %v\n%s", err, out)
	}
	out, err := tsc("nosteps.ts", `import type { components } from "./api";
export const bad: components["schemas"]["ExecuteRequest"] = { cache: true };
`)
	if err == nil || !strings.Contains(out, "steps") {
		t.Errorf("a request without steps type-checks: %v\n%s", err, out)
	}
}

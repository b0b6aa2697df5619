// Package python_test runs the tests of the Python client (package
// svc_client) and the Python example judge against real svc servers on
// loopback, with Debian's interpreters: /usr/bin/python3 and, when
// installed, /usr/bin/pypy3 (Python 3.9, the oldest the client supports).
// The tests import the package as pip installs it: a wheel built from
// pyproject.toml offline (setuptools and wheel from Debian, pip
// --no-build-isolation), installed into a venv for python3 and into a
// directory on PYTHONPATH for pypy3. TestPythonTypes runs mypy --strict
// over the package and its tests.
//
// The Python tests of the extensions (docs/http-api.md: per-task limits, outputs,
// stdin_from) run for the extensions that SVC_PY_EXTENSIONS names ("1":
// all, "0": none, or a list such as "limits,outputs"), and without it for
// those of extensionsByDefault.
package python_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/svctest"
)

// extensionsByDefault are the extensions whose Python tests run when
// SVC_PY_EXTENSIONS is not set, as SVC_PY_EXTENSIONS spells them: add
// each ("limits", "outputs", "stdin_from"; "1" for all) once the server
// has it.
const extensionsByDefault = "limits,outputs,stdin_from"

// allExtensions are the extensions test_svc_client.py knows.
var allExtensions = []string{"limits", "outputs", "stdin_from"}

// extensions returns the setting passed on as SVC_PY_EXTENSIONS and the
// extensions it turns on.
func extensions() (string, []string) {
	v, ok := os.LookupEnv("SVC_PY_EXTENSIONS")
	if !ok {
		v = extensionsByDefault
	}
	switch v = strings.TrimSpace(v); v {
	case "1":
		return v, allExtensions
	case "0", "":
		return "0", nil
	}
	var on []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			on = append(on, e)
		}
	}
	return v, on
}

// interpreters returns the Python interpreters to test with: Debian's
// python3, required (CI installs it), and pypy3 when present.
func interpreters(t *testing.T) []string {
	t.Helper()
	var found []string
	for _, p := range []string{"/usr/bin/python3", "/usr/bin/pypy3"} {
		if _, err := os.Stat(p); err == nil {
			found = append(found, p)
		} else if p == "/usr/bin/python3" {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s: %v (CI must install python3)", p, err)
			}
			t.Skipf("needs Debian's python3: %v", err)
		}
	}
	return found
}

// TestPythonClient runs test_svc_client.py under each interpreter against
// three fresh servers: one with the defaults, one with a single task slot
// (capacity_exhausted), one with a rate limit of 60 requests a minute and
// two keys (rate_limited).
func TestPythonClient(t *testing.T) {
	svctest.RequireSandbox(t)
	pys := interpreters(t)
	wheel := buildWheel(t)
	for _, py := range pys {
		t.Run(filepath.Base(py), func(t *testing.T) {
			py, tests, pathEnv := install(t, py, wheel)
			std := svctest.NewServer(t, svctest.Config{})
			busy := svctest.NewServer(t, svctest.Config{Sandbox: svc.Config{
				Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1}}})
			keys := []string{svctest.NewKey(), svctest.NewKey()}
			rate := svctest.NewServer(t, svctest.Config{API: httpapi.Config{Keys: keys, RateLimitPerMinute: 60}})
			env := []string{
				"SVC_URL=" + std.URL, "SVC_KEY=" + std.Key,
				"SVC_BUSY_URL=" + busy.URL, "SVC_BUSY_KEY=" + busy.Key,
				"SVC_RATE_URL=" + rate.URL, "SVC_RATE_KEYS=" + strings.Join(keys, ","),
			}
			ext, _ := extensions()
			env = append(env, "SVC_PY_EXTENSIONS="+ext)
			env = append(env, pathEnv...)
			out := runPython(t, py, tests, env, "-m", "unittest", "-v", "test_svc_client")
			checkSkips(t, out)
			t.Log(summary(out))
		})
	}
}

// needTool skips the test for want of a tool that CI installs, or
// fails it in CI.
func needTool(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; .ci/run installs it")
	}
	t.Skip(msg)
}

// buildWheel builds the package's wheel from a copy of this directory
// (pip builds in the source tree) and returns its path: pip wheel
// --no-build-isolation --no-index, with Debian's setuptools and wheel,
// as README.md tells a user without PyPI.
func buildWheel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, f := range []string{"pyproject.toml", "README.md", "svc_client/__init__.py", "svc_client/py.typed"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, mod := range []string{"pip", "setuptools", "wheel", "venv"} {
		if err := exec.Command("/usr/bin/python3", "-c", "import "+mod).Run(); err != nil {
			needTool(t, "python3 has no "+mod+" (Debian packages python3-pip, python3-setuptools, python3-wheel, python3-venv)")
		}
	}
	out := filepath.Join(dir, "wheel")
	runPython(t, "/usr/bin/python3", dir, nil, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
		"--wheel-dir", out, src)
	wheels, _ := filepath.Glob(filepath.Join(out, "svc_client-*-py3-none-any.whl"))
	if len(wheels) != 1 {
		t.Fatalf("pip wheel built %q", wheels)
	}
	return wheels[0]
}

// install installs wheel for py: into a venv for /usr/bin/python3 (pip
// install, as a user does), into a directory on PYTHONPATH for pypy3
// (Debian's has no pip). It returns the interpreter to run, a directory
// that holds a copy of test_svc_client.py and not the package's source,
// and the environment to add; it checks that svc_client is imported from
// the install.
func install(t *testing.T, py, wheel string) (string, string, []string) {
	t.Helper()
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	var env []string
	if filepath.Base(py) == "python3" {
		runPython(t, py, dir, nil, "-m", "venv", site)
		py = filepath.Join(site, "bin", "python")
		runPython(t, py, dir, nil, "-m", "pip", "install", "--no-index", "--no-deps", wheel)
	} else {
		runPython(t, "/usr/bin/python3", dir, nil, "-m", "pip", "install", "--no-index", "--no-deps", "--target", site, wheel)
		env = []string{"PYTHONPATH=" + site}
	}
	tests := filepath.Join(dir, "tests")
	b, err := os.ReadFile("test_svc_client.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(tests, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tests, "test_svc_client.py"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	where := strings.TrimSpace(runPython(t, py, tests, env, "-c", "import svc_client; print(svc_client.__file__)"))
	if !strings.HasPrefix(where, site+"/") {
		t.Fatalf("%s imports svc_client from %s, not from the install in %s", py, where, site)
	}
	return py, tests, env
}

// TestPythonTypes runs mypy --strict (Debian package mypy) over the
// package and its tests: the types the package declares hold, and its
// tests use them as a user would.
func TestPythonTypes(t *testing.T) {
	mypy, err := exec.LookPath("mypy")
	if err != nil {
		needTool(t, "mypy is not installed (Debian package mypy): the Python client's types are not checked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mypy, "--strict", "--cache-dir", t.TempDir(), "svc_client", "test_svc_client.py")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mypy --strict: %v\n%s", err, out)
	}
	t.Logf("mypy --strict: %s", bytes.TrimSpace(out))
}

// skipped matches a test that unittest -v reports as skipped, and why.
var skipped = regexp.MustCompile(`(?m)^(test\w+) \(.*\) \.\.\. skipped '(.*)'$`)

// checkSkips fails the test unless the Python tests that were skipped
// are exactly one for each extension that is off: every other test must
// have run against the servers.
func checkSkips(t *testing.T, out string) {
	t.Helper()
	_, on := extensions()
	var off []string
	for _, m := range skipped.FindAllStringSubmatch(out, -1) {
		name, ok := strings.CutPrefix(m[2], "SVC_PY_EXTENSIONS does not name ")
		name, _, _ = strings.Cut(name, ":")
		if !ok || slices.Contains(on, name) {
			t.Errorf("%s skipped: %s", m[1], m[2])
			continue
		}
		off = append(off, name)
	}
	var want []string
	for _, e := range allExtensions {
		if !slices.Contains(on, e) {
			want = append(want, e)
		}
	}
	slices.Sort(off)
	if !slices.Equal(off, want) {
		t.Errorf("skipped the tests of the extensions %q, want %q", off, want)
	}
}

// summary is the last lines of unittest's report ("Ran 34 tests in 9.1s",
// "OK (skipped=3)").
func summary(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], "\n")
}

// TestPythonJudge runs examples/python/judge.py against a server and
// checks that it prints what the README shows, but for the measurements,
// and that it leaves no file on the server.
func TestPythonJudge(t *testing.T) {
	svctest.RequireSandbox(t)
	py := interpreters(t)[0]
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := svctest.NewServer(t, svctest.Config{})
	out := runPython(t, py, "../../examples/python", []string{"SVC_URL=" + s.URL, "SVC_KEY=" + s.Key}, "judge.py")
	if got, want := normalize(out), normalize(readmeOutput(t, readme, "examples/python/judge.py")); got != want {
		t.Errorf("judge.py prints\n%s\nbut README.md shows\n%s", out, readmeOutput(t, readme, "examples/python/judge.py"))
	}
	if files := s.Files.List(); len(files) != 0 {
		t.Errorf("the judge left %d files on the server", len(files))
	}
}

// runPython runs py with args in dir, with env added to a clean
// environment, and returns its combined output; it fails the test when
// py does not exit 0.
func runPython(t *testing.T, py, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Dir = dir
	// Only what the tests need: no proxy settings, no PYTHON* variables
	// of the host.
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}, env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", py, strings.Join(args, " "), err, b.String())
	}
	return b.String()
}

// readmeOutput returns the fenced block after the line
// "<!-- output of NAME -->".
func readmeOutput(t *testing.T, readme []byte, name string) string {
	t.Helper()
	marker := "<!-- output of " + name + " -->"
	_, after, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md has no %s", marker)
	}
	m := regexp.MustCompile("(?s)^\\s*```[a-z]*\\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("README.md: no fenced block after %s", marker)
	}
	return m[1]
}

// measured matches the numbers that vary from run to run.
var measured = regexp.MustCompile(`\b\d+(\.\d+)? (ms|MiB)\b`)

// normalize replaces measurements with a placeholder and runs of spaces
// with one, so that a table's alignment does not matter.
func normalize(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		l = measured.ReplaceAllString(l, "N $2")
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

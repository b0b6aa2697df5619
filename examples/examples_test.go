// Package examples_test builds every example program, runs it, and checks
// that it prints what the manual shows it printing: hello in README.md,
// judge and interactive in docs/library.md, client in docs/go-client.md.
package examples_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/svctest"
)

// shownIn is the page of the manual that shows each example's output.
var shownIn = map[string]string{
	"hello":       "../README.md",
	"judge":       "../docs/library.md",
	"client":      "../docs/go-client.md",
	"interactive": "../docs/library.md",
}

// TestExamples builds the examples with the go command and runs each as
// the manual says: hello, judge and interactive make sandboxes of their
// own, client talks to a server the test starts.
func TestExamples(t *testing.T) {
	svctest.RequireSandbox(t)
	bin := build(t, "hello", "judge", "client", "interactive")

	t.Run("hello", func(t *testing.T) {
		t.Parallel()
		out := runExample(t, filepath.Join(bin, "hello"), "-uid-base", fmt.Sprint(svctest.UIDBase()))
		same(t, "hello", out, shownOutput(t, "hello"))
	})
	t.Run("judge", func(t *testing.T) {
		t.Parallel()
		out := runExample(t, filepath.Join(bin, "judge"), "-uid-base", fmt.Sprint(svctest.UIDBase()))
		same(t, "judge", out, shownOutput(t, "judge"))
	})
	t.Run("interactive", func(t *testing.T) {
		t.Parallel()
		out := runExample(t, filepath.Join(bin, "interactive"), "-uid-base", fmt.Sprint(svctest.UIDBase()))
		same(t, "interactive", out, shownOutput(t, "interactive"))
	})
	t.Run("client", func(t *testing.T) {
		t.Parallel()
		s := svctest.NewServer(t, svctest.Config{})
		out := runExample(t, filepath.Join(bin, "client"), "-url", s.URL, "-key", s.Key)
		// The manual shows the default URL.
		out = strings.ReplaceAll(out, s.URL, "http://127.0.0.1:8080")
		same(t, "client", out, shownOutput(t, "client"))
		if files := s.Files.List(); len(files) != 0 {
			t.Errorf("the client left %d files on the server", len(files))
		}
	})
}

// build builds the examples into a temporary directory with the go
// command that runs the tests.
func build(t *testing.T, names ...string) string {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./"+n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// runExample runs an example program and returns its standard output.
func runExample(t *testing.T, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(prog), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// shownOutput returns the block the manual shows as the output of an
// example: in the page of shownIn, the fenced block after the line
// "<!-- output of examples/NAME -->".
func shownOutput(t *testing.T, name string) string {
	t.Helper()
	page := shownIn[name]
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- output of examples/" + name + " -->"
	_, after, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s has no %s", page, marker)
	}
	m := regexp.MustCompile("(?s)^\\s*```[a-z]*\\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("%s: no fenced block after %s", page, marker)
	}
	return m[1]
}

// measured matches the numbers that vary from run to run: times and sizes.
var measured = regexp.MustCompile(`\b\d+(\.\d+)? (ms|MiB|KiB)\b`)

// normalize replaces measurements with a placeholder and spacing with one
// space, line by line, so that a table's alignment does not matter.
func normalize(s string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		l = measured.ReplaceAllString(l, "N $2")
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return lines
}

// same fails the test unless got is the output the manual shows but for
// the measurements.
func same(t *testing.T, name, got, shown string) {
	t.Helper()
	g, w := normalize(got), normalize(shown)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("examples/%s prints\n%s\nbut %s shows\n%s", name, got, shownIn[name], shown)
	}
}

// TestNormalize: measurements and alignment do not matter, anything else
// does.
func TestNormalize(t *testing.T) {
	a := "test  verdict   time     memory\n1     accepted  3 ms     0.8 MiB\n"
	b := "test verdict time memory\n1 accepted 1005 ms 256.0 MiB\n"
	if strings.Join(normalize(a), "\n") != strings.Join(normalize(b), "\n") {
		t.Errorf("%q and %q differ", normalize(a), normalize(b))
	}
	c := "test verdict time memory\n1 wrong answer 3 ms 0.8 MiB\n"
	if strings.Join(normalize(a), "\n") == strings.Join(normalize(c), "\n") {
		t.Error("a different verdict is the same")
	}
}

// TestInteractiveJSON posts examples/interactive.json, the request
// docs/http-api.md shows, to a server: its sources are those of
// examples/interactive, and the game ends as the response shown there.
func TestInteractiveJSON(t *testing.T) {
	svctest.RequireSandbox(t)
	body, err := os.ReadFile("interactive.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := svc.DecodeRequest(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range req.Steps[0].Tasks {
		for name, f := range task.Files {
			src, err := os.ReadFile(filepath.Join("interactive", "problem", name))
			if err != nil || string(src) != f.Content {
				t.Errorf("interactive.json's %s is not interactive/problem/%s (%v)", name, name, err)
			}
		}
	}
	s := svctest.NewServer(t, svctest.Config{})
	resp, err := s.NewClient(client.Config{}).Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	game := resp.Results[1].Results
	inter, sol := game[0], game[1]
	if inter.Outcome != svc.OutcomeExited || inter.ExitCode != 0 || inter.Stderr != "found 271828 in 19 questions\n" ||
		sol.Outcome != svc.OutcomeExited || sol.ExitCode != 0 {
		t.Errorf("the game: interactor %+v, solution %+v", inter, sol)
	}
	if !strings.HasPrefix(inter.Stdout, "1000000\n<\n>\n") || !strings.HasPrefix(sol.Stdout, "? 500000\n? 250000\n") {
		t.Errorf("transcripts %q, %q", inter.Stdout, sol.Stdout)
	}
}

// TestJudgeFeaturesJSON posts examples/judge-features.json, the request
// the README shows, to a server: a guessing game whose interactor writes
// its verdict to a collected output, the solution under lowered limits,
// and the response is the one the README shows.
func TestJudgeFeaturesJSON(t *testing.T) {
	svctest.RequireSandbox(t)
	body, err := os.ReadFile("judge-features.json")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("examples/judge-features.json")) {
		t.Error("the README does not show examples/judge-features.json")
	}
	req, err := svc.DecodeRequest(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	s := svctest.NewServer(t, svctest.Config{})
	c := s.NewClient(client.Config{})
	resp, err := c.Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Results[0].Results[0]; r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
		t.Fatalf("gcc: %+v", r)
	}
	game := resp.Results[1].Results
	inter, sol := game[0], game[1]
	if inter.Outcome != svc.OutcomeExited || inter.ExitCode != 0 || inter.Stdout != "<\n>\n=\n" ||
		sol.Outcome != svc.OutcomeExited || sol.ExitCode != 0 || sol.Stdout != "50\n25\n37\n" {
		t.Errorf("the game: interactor %+v, solution %+v", inter, sol)
	}
	out, ok := inter.Outputs["verdict.txt"]
	if !ok || out.Error != "" || out.Size != 13 {
		t.Fatalf("outputs %+v", inter.Outputs)
	}
	if !bytes.Contains(readme, []byte(out.FileID)) {
		t.Errorf("the README does not show the verdict's file_id %s", out.FileID)
	}
	var verdict bytes.Buffer
	if _, err := c.Download(context.Background(), out.FileID, &verdict); err != nil {
		t.Fatal(err)
	}
	if verdict.String() != "ok 3 queries\n" {
		t.Errorf("verdict.txt: %q", verdict.String())
	}
}

// TestJudgeFiles runs judgefiles against a server the test starts: the
// right solution is accepted on every stored test, the wrong one is not,
// and a submission's request and response stay small.
func TestJudgeFiles(t *testing.T) {
	svctest.RequireSandbox(t)
	bin := build(t, "judgefiles")
	s := svctest.NewServer(t, svctest.Config{})
	out := runExample(t, filepath.Join(bin, "judgefiles"), "-url", s.URL, "-key", s.Key, "-tests", "12")
	if !strings.Contains(out, "right: 12 of 12 accepted") || !regexp.MustCompile(`wrong: [0-9]+ of 12 accepted`).MatchString(out) ||
		strings.Contains(out, "wrong: 12 of 12") || strings.Contains(out, "judge-error") {
		t.Fatalf("judgefiles printed:\n%s", out)
	}
}

// TestPythonJudgeFiles runs python/judge_files.py against a server the
// test starts: every stored test is accepted.
func TestPythonJudgeFiles(t *testing.T) {
	svctest.RequireSandbox(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on the PATH")
	}
	s := svctest.NewServer(t, svctest.Config{})
	out := runExample(t, py, "python/judge_files.py", "--url", s.URL, "--key", s.Key, "--tests", "10", "--size", "20000")
	if !strings.HasPrefix(out, "10 of 10 accepted\n") {
		t.Fatalf("judge_files.py printed:\n%s", out)
	}
}

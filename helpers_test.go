package svc_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// The internal tests' host ids come from svctest.UIDBase too, which they
// cannot import (svctest imports svc).
func init() { svc.UIDBaseForTest = svctest.UIDBase }

// requireRoot skips a test that needs root with the reason.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: sandboxes use namespaces, cgroups and mounts")
	}
}

// newSandbox returns a Sandbox with cfg, closed at cleanup. Zero fields
// take the defaults, but for two: a zero StateDir is a private directory,
// and a zero UIDBase a range of host ids of its own (svctest.UIDBase), so
// that assertClean sees only this Sandbox's processes, not those of
// another Sandbox of the test or of another test process.
func newSandbox(t testing.TB, cfg svc.Config) *svc.Sandbox {
	t.Helper()
	requireRoot(t)
	if cfg.UIDBase == 0 {
		cfg.UIDBase = svctest.UIDBase()
	}
	if cfg.StateDir == "" {
		dir, err := os.MkdirTemp("", "svc-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cfg.StateDir = dir
	}
	sb, err := svc.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

// run runs the steps and fails the test on an error.
func run(t testing.TB, sb *svc.Sandbox, steps ...svc.Step) *svc.Response {
	t.Helper()
	resp, err := sb.Run(context.Background(), &svc.Request{Steps: steps})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return resp
}

// one runs a single task and returns its result.
func one(t testing.TB, sb *svc.Sandbox, task svc.Task) svc.Result {
	t.Helper()
	return run(t, sb, svc.Single(task)).Results[0].Results[0]
}

// sh is a task running a shell script.
func sh(script string) svc.Task {
	return svc.Task{Cmd: "sh", Args: []string{"-c", script}}
}

// runC compiles a C program with gcc inside the sandbox (compile_v2) and
// runs it with args in a second step (profile: native_v2 unless given).
// It returns the run's result; a compile failure fails the test.
func runC(t testing.TB, sb *svc.Sandbox, src string, run2 svc.Task) svc.Result {
	t.Helper()
	if run2.Cmd == "" {
		run2.Cmd = "./prog"
	}
	resp := run(t, sb,
		svc.Single(svc.Task{
			Cmd:   "gcc",
			Args:  []string{"-O1", "-Wall", "-o", "prog", "prog.c"},
			Files: map[string]svc.File{"prog.c": {Content: src}},
		}),
		svc.Single(run2))
	c := resp.Results[0].Results[0]
	if c.Outcome != svc.OutcomeExited || c.ExitCode != 0 {
		t.Fatalf("compile: %s exit %d\n%s%s", c.Outcome, c.ExitCode, c.Stdout, c.Stderr)
	}
	return resp.Results[1].Results[0]
}

// expect checks a result's outcome and exit code, printing its output on
// a mismatch.
func expect(t testing.TB, r svc.Result, o svc.Outcome, exit int) {
	t.Helper()
	if r.Outcome != o || r.ExitCode != exit {
		t.Fatalf("got %s exit %d signal %d (want %s exit %d)\nerror: %s\nstdout: %s\nstderr: %s",
			r.Outcome, r.ExitCode, r.Signal, o, exit, r.Error, clip(r.Stdout), clip(r.Stderr))
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// assertClean checks that nothing of sb's requests is left on the host:
// no workspace directories or mounts under the state dir, no processes
// with a sandbox identity.
func assertClean(t testing.TB, sb *svc.Sandbox) {
	t.Helper()
	defer svc.QuiesceForTest(sb)()
	cfg := sb.Config()
	run := filepath.Join(cfg.StateDir, "run")
	entries, err := os.ReadDir(run)
	if err != nil {
		t.Fatal(err)
	}
	// The instance's own: .root is the skeleton every sandbox binds as
	// its root, .localbin (with the links in .toolbin) its /usr/local/bin,
	// .goenv its /usr/local/go/go.env with a prepared Go build cache.
	instance := []string{".lock", ".root", ".localbin", ".toolbin", ".goenv"}
	for _, e := range entries {
		if !slices.Contains(instance, e.Name()) {
			t.Errorf("left in %s: %s", run, e.Name())
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mi), "\n") {
		if strings.Contains(line, run+"/") && !strings.Contains(line, run+"/.localbin ") {
			t.Errorf("mount left: %s", line)
		}
	}
	for _, p := range sandboxProcs(t, cfg.UIDBase, cfg.Limits.MaxConcurrency) {
		t.Errorf("process left: %s", p)
	}
}

// taskProcs is sandboxProcs without the sandboxes built ahead and not
// used yet (still the zygote's copy: cmdline svc-zygote): the processes
// of requests.
func taskProcs(t testing.TB, sb *svc.Sandbox) []string {
	t.Helper()
	var out []string
	for _, p := range sandboxProcs(t, sb.Config().UIDBase, sb.Limits().MaxConcurrency) {
		if _, cmd, _ := strings.Cut(p, " "); cmd != "svc-zygote " {
			out = append(out, p)
		}
	}
	return out
}

// sandboxProcs lists host processes running as a sandbox identity of a
// Sandbox with UIDBase base and MaxConcurrency maxConcurrency.
func sandboxProcs(t testing.TB, base, maxConcurrency int) []string {
	t.Helper()
	if base == 0 {
		base = 1_000_000
	}
	if maxConcurrency == 0 {
		maxConcurrency = svc.DefaultLimits().MaxConcurrency
	}
	slots := svc.IdentitySlotsForTest(maxConcurrency)
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "Uid:" {
				var uid int
				for _, c := range f[1] {
					uid = uid*10 + int(c-'0')
				}
				if uid >= base && uid < base+2*slots {
					cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
					out = append(out, d+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
				}
			}
		}
	}
	return out
}

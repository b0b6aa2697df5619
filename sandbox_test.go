package svc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

func TestRunHello(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	r := runC(t, sb, `#include <stdio.h>
int main(void) { printf("hello\n"); fprintf(stderr, "err\n"); return 3; }`, svc.Task{})
	expect(t, r, svc.OutcomeExited, 3)
	if r.Stdout != "hello\n" || r.Stderr != "err\n" {
		t.Errorf("stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	if r.Stats.CPUUsageUsec == nil || r.Stats.MemoryPeakBytes == nil || r.Stats.CPUThrottledUsec == nil {
		t.Errorf("stats missing: %+v", r.Stats)
	}
	assertClean(t, sb)
}

func TestCommandNotFound(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	for _, cmd := range []string{"no-such-command", "/svc/nothing", "/etc"} {
		r := one(t, sb, svc.Task{Cmd: cmd})
		expect(t, r, svc.OutcomeExited, 127)
		if !strings.HasPrefix(r.Stderr, "svc: "+cmd+": ") {
			t.Errorf("%s: stderr %q", cmd, r.Stderr)
		}
	}
	// Not executable.
	r := run(t, sb, svc.Single(svc.Task{Cmd: "./data", Files: map[string]svc.File{"data": {Content: "x"}}})).Results[0].Results[0]
	expect(t, r, svc.OutcomeExited, 127)
	if !strings.HasPrefix(r.Stderr, "svc: ./data: ") {
		t.Errorf("stderr %q", r.Stderr)
	}
}

func TestWorkingDir(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	r := one(t, sb, svc.Task{Cmd: "pwd", WorkingDir: "/tmp"})
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "/tmp\n" {
		t.Errorf("pwd %q", r.Stdout)
	}
	r = one(t, sb, svc.Task{Cmd: "pwd", WorkingDir: "/nonexistent"})
	if r.Outcome != svc.OutcomeInfrastructureFailure || !strings.Contains(r.Error, "/nonexistent") {
		t.Fatalf("missing working_dir: %+v", r)
	}
	assertClean(t, sb)
}

func TestStepsShareWorkspace(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	resp := run(t, sb,
		svc.Single(sh("echo one > /svc/a; echo two > /tmp/b")),
		svc.Parallel(sh("cat /svc/a"), sh("cat /tmp/b")),
	)
	p := resp.Results[1]
	if !p.Parallel || len(p.Results) != 2 {
		t.Fatalf("parallel result shape: %+v", p)
	}
	if p.Results[0].Stdout != "one\n" || p.Results[1].Stdout != "two\n" {
		t.Errorf("got %q %q", p.Results[0].Stdout, p.Results[1].Stdout)
	}
}

func TestStopOnFailure(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		svc.Single(sh("exit 0")), svc.Single(sh("exit 1")), svc.Single(sh("echo never")),
	}}
	resp, err := sb.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Results[2].Results[0]; got.Outcome != svc.OutcomeNotStarted {
		t.Fatalf("third step: %+v", got)
	}
	req.StopOnFailure = false
	resp, err = sb.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Results[2].Results[0]; got.Stdout != "never\n" {
		t.Fatalf("without stop_on_failure: %+v", got)
	}
}

func TestCancel(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{svc.Single(sh("sleep 30"))}})
		done <- err
	}()
	// Wait until the task runs, then cancel.
	for sb.SlotsInUse() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-done
	if !errors.Is(err, svc.ErrCancelled) {
		t.Fatalf("got %v, want cancelled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}
	assertClean(t, sb)
}

// TestEndToEndNative compiles with gcc under compile_v2 and runs the
// program under native_v2, where forking is a policy violation.
func TestEndToEndNative(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	src := `#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
	if (argc > 1) { fork(); puts("forked"); return 0; }
	puts("native"); return 0;
}`
	r := runC(t, sb, src, svc.Task{SandboxProfile: svc.ProfileNativeV2})
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "native\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	r = runC(t, sb, src, svc.Task{Args: []string{"fork"}, SandboxProfile: svc.ProfileNativeV2})
	expect(t, r, svc.OutcomePolicyViolation, 159)
	if r.Signal != 31 || r.Stdout != "" {
		t.Errorf("signal %d stdout %q", r.Signal, r.Stdout)
	}
	assertClean(t, sb)
}

// TestFreopenNative: the judges' freopen("input.txt", "r", stdin) idiom
// works under native_v2 (glibc implements it with dup3).
func TestFreopenNative(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	r := runC(t, sb, `#include <stdio.h>
int main(void) {
	if (!freopen("input.txt", "r", stdin)) { perror("freopen"); return 1; }
	int a, b; if (scanf("%d %d", &a, &b) != 2) return 2;
	printf("%d\n", a + b); return 0;
}`, svc.Task{SandboxProfile: svc.ProfileNativeV2, Files: map[string]svc.File{"input.txt": {Content: "2 40\n"}}})
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "42\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
}

// TestWorkspaceHiddenFromHostUsers: while a request runs, another host user
// cannot reach its workspace through the state directory.
func TestWorkspaceHiddenFromHostUsers(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	done := make(chan error, 1)
	go func() {
		_, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			svc.Single(sh("echo secret > /svc/s; while [ ! -e /svc/go ]; do sleep 0.05; done")),
		}})
		done <- err
	}()
	run := filepath.Join(sb.Config().StateDir, "run")
	var ws string
	for deadline := time.Now().Add(20 * time.Second); ws == ""; {
		m, _ := filepath.Glob(filepath.Join(run, "r*", "svc", "s"))
		if len(m) > 0 {
			ws = filepath.Dir(m[0])
		} else if time.Now().After(deadline) {
			t.Fatal("the request's workspace never appeared")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	cmd := exec.Command("cat", filepath.Join(ws, "s"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "secret") {
		t.Errorf("user nobody read the workspace: %q %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceBoundsSvcAndTmpTogether: a task that fills /svc to most of
// the workspace size cannot write as much again to /tmp (they share one
// tmpfs), and the space is the request's: the next request has all of it.
func TestWorkspaceBoundsSvcAndTmpTogether(t *testing.T) {
	const ws = 8 * svc.MiB
	sb := newSandbox(t, svc.Config{WorkspaceSize: ws})
	fill := sh(`head -c 6M /dev/zero > /svc/a && echo svc ok
if head -c 6M /dev/zero > /tmp/b 2>/dev/null; then echo tmp ok; else echo tmp full; fi
echo "tmp has $(stat -c %s /tmp/b)"`)
	for i := range 2 {
		r := one(t, sb, fill)
		expect(t, r, svc.OutcomeExited, 0)
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if len(lines) != 3 || lines[0] != "svc ok" || lines[1] != "tmp full" {
			t.Fatalf("request %d: %q, want svc ok, tmp full", i, r.Stdout)
		}
		var n int64
		if _, err := fmt.Sscanf(lines[2], "tmp has %d", &n); err != nil || n+6*svc.MiB > ws {
			t.Errorf("request %d: %q: /svc and /tmp hold more than %d bytes together", i, lines[2], ws)
		}
	}
}

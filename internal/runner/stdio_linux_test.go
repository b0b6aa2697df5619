package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stdinFile returns a file of content, open for reading, closed at the
// test's end.
func stdinFile(t *testing.T, content string) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestShellStdinFile: a cell made before its task is known (with a pipe
// for its stdin) runs a task whose stdin is a file: the task process
// takes the file with its command, so fd 0 is the file itself (regular,
// seekable), the task has no other fd than its streams, and the next
// task of the shell has its pipe again. Merged output takes a cell made
// the same way.
func TestShellStdinFile(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	const listFDs = "stat -L -c %F /proc/self/fd/0; ls /proc/self/fd | tr '\\n' ' '; echo; "
	for i, c := range []struct {
		task         func() *Task
		stdout, errs string
	}{
		{func() *Task {
			task := testTask("sh", "-c", listFDs+"cat; tail -c 3 /proc/self/fd/0")
			task.StdinFile = stdinFile(t, "from the file\n")
			return task
		}, "regular file\n0 1 2 3 \nfrom the file\nle\n", ""},
		{func() *Task {
			task := testTask("sh", "-c", listFDs+"cat")
			task.Stdin = "from the pipe\n"
			return task
		}, "fifo\n0 1 2 3 \nfrom the pipe\n", ""},
		{func() *Task {
			task := testTask("sh", "-c", "echo 1; echo 2 >&2; echo 3; nosuchcommand")
			task.MergeOutput = true
			return task
		}, "1\n2\n3\nsh: 1: nosuchcommand: not found\n", ""},
		{func() *Task {
			task := testTask("sh", "-c", "wc -c; echo err >&2")
			task.StdinFile, task.MergeOutput = stdinFile(t, strings.Repeat("x", 100000)), true
			return task
		}, "100000\nerr\n", ""},
	} {
		cl, err := s.Cell(context.Background(), shellTask(t))
		if err != nil {
			t.Fatal(err)
		}
		task := c.task()
		r, err := cl.Run(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
		if r.Report.SetupError != "" || !r.Report.Exited {
			t.Fatalf("task %d: report %+v", i, r.Report)
		}
		if got, errs := string(r.Stdout), string(r.Stderr); got != c.stdout || errs != c.errs {
			t.Errorf("task %d: stdout %q, stderr %q; want %q, %q", i, got, errs, c.stdout, c.errs)
		}
	}
}

// TestShellPassedFDRefused: the task process runs no task whose records
// and passed fds disagree: an fd with no stdio record to place it, or a
// record with no fd. Each is a setup failure, and the shell runs the
// next task.
func TestShellPassedFDRefused(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	for i, c := range []struct {
		passed bool // the spec says StdinPassed
		file   bool // an fd goes with the records
	}{{false, true}, {true, false}} {
		cl, err := s.Cell(context.Background(), shellTask(t))
		if err != nil {
			t.Fatal(err)
		}
		spec := testTask("true").Spec
		spec.StdinPassed = c.passed
		var f *os.File
		if c.file {
			f = stdinFile(t, "x")
		}
		if err := sendRecords(cl.config, spec.Encode(), f); err != nil {
			t.Fatal(err)
		}
		closeFD(&cl.config)
		cl.used = true
		rep, _ := cl.status.FinishFrom(cl.pump(nil, &collector{}, &collector{}, nil, nil))
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
		if rep.SetupError == "" || rep.Status.ExitStatus() != 125 {
			t.Errorf("case %d: report %+v, want a setup failure", i, rep)
		}
	}
	if r := runShell(t, s, "echo", "ok"); string(r.Stdout) != "ok\n" {
		t.Errorf("the next task: %+v", r)
	}
}

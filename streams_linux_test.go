package svc_test

// Stream paths (Task.StdinPath, StdoutPath, StderrPath) through real
// sandboxes: a workspace file is the task's fd 0 itself, a stream goes
// to a file bounded exactly by the output limit, and every hostile
// thing an earlier step can leave at a path (a symlink at any
// component, a FIFO, a directory) stops the task before it starts,
// never reaches a host file, never hangs. They need root: see
// newSandbox.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
)

// TestStdinPath: the file, placed by the step's files, stored, or left by
// an earlier step, is the task's stdin, and the task's fd 0 is that file
// itself, not a pipe.
func TestStdinPath(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	in := strings.Repeat("line\n", 10000)
	stored, _, err := fs.Put(context.Background(), strings.NewReader(in), "in.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	resp := run(t, sb,
		svc.Single(svc.Task{Cmd: "cat", StdinPath: "a/in.txt", Files: map[string]svc.File{"a/in.txt": {Content: "inline\n"}}}),
		svc.Single(svc.Task{Cmd: "wc", Args: []string{"-c"}, StdinPath: "s.txt", Files: map[string]svc.File{"s.txt": {FileID: stored.ID}},
			SandboxProfile: svc.ProfileNativeV2}),
		svc.Single(sh("printf left > left.txt")),
		svc.Single(svc.Task{Cmd: "cat", StdinPath: "./left.txt", SandboxProfile: svc.ProfileNativeV2}),
		// fd 0 is the workspace file: a regular file, seekable, named
		// from the workspace's root (no host path shows).
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "readlink /proc/self/fd/0; stat -L -c %F /proc/self/fd/0; tail -c 5 /proc/self/fd/0"},
			StdinPath: "s.txt"}),
	)
	want := []string{"inline\n", strconv.Itoa(len(in)) + "\n", "", "left", "/s.txt\nregular file\nline\n"}
	for i, w := range want {
		r := resp.Results[i].Results[0]
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != w {
			t.Errorf("step %d: stdout %q, want %q", i, r.Stdout, w)
		}
	}
}

// TestStdinPathRefused: a path with nothing at it, a directory, a FIFO
// (which must not hang the service), and a symlink at the last or an
// inner component, all planted by an earlier step: the task does not
// start, and its result says why as for a command that is not found.
// The host's file behind the link is never read.
func TestStdinPathRefused(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := sh("mkdir dir && mkfifo fifo && ln -s " + secret + " link && ln -s " + filepath.Dir(secret) + " dirlink && ln -s in.txt rel && echo in > in.txt")
	for _, tc := range []struct{ path, why string }{
		{"missing", "no such file in the workspace"},
		{"dir", "not a regular file"},
		{"fifo", "not a regular file"},
		{"link", "symlink"},
		{"rel", "symlink"},
		{"dirlink/secret", "symlink"},
		{"in.txt/x", "not a directory"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp := run(t, sb, svc.Single(plant), svc.Single(svc.Task{Cmd: "cat", StdinPath: tc.path}))
			expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
			r := resp.Results[1].Results[0]
			expect(t, r, svc.OutcomeExited, 127)
			if !strings.HasPrefix(r.Stderr, "svc: stdin_path \""+tc.path+"\": ") || !strings.Contains(r.Stderr, tc.why) {
				t.Errorf("stderr %q, want svc: stdin_path %q: ...%s...", r.Stderr, tc.path, tc.why)
			}
			if strings.Contains(r.Stdout, "host secret") {
				t.Fatalf("the host's file reached the task: %q", r.Stdout)
			}
		})
	}
}

// TestStdoutPath: the stream goes to the file, created owned by the task's
// user, and not to the result; a later step, outputs and the next
// request's cache see it like any file. Both streams may go to one file
// in the order written, as 2>&1.
func TestStdoutPath(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	resp := run(t, sb,
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "echo out; echo err >&2"}, StdoutPath: "o/out.txt", StderrPath: "o/err.txt",
			Outputs: []string{"o/out.txt"}}),
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "echo 1; echo 2 >&2; echo 3; echo 4 >&2"}, StdoutPath: "both", StderrPath: "both"}),
		svc.Single(sh("cat o/out.txt o/err.txt both; stat -c '%u %a' o/out.txt both; id -u")),
	)
	for i := 0; i < 2; i++ {
		r := resp.Results[i].Results[0]
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != "" || r.Stderr != "" {
			t.Errorf("step %d: stdout %q stderr %q, want both empty", i, r.Stdout, r.Stderr)
		}
	}
	wantOutput(t, fs, resp.Results[0].Results[0], "o/out.txt", "out\n")
	r := resp.Results[2].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	lines := strings.Split(r.Stdout, "\n")
	if len(lines) < 9 || strings.Join(lines[:6], ",") != "out,err,1,2,3,4" {
		t.Fatalf("files hold %q", r.Stdout)
	}
	uid := lines[8]
	if lines[6] != uid+" 644" || lines[7] != uid+" 644" {
		t.Errorf("owner and mode %q %q, want the task's uid %s and 644", lines[6], lines[7], uid)
	}
}

// TestStdoutPathLimit: past the task's output limit the file holds
// exactly the limit and the outcome is output_limit; at the limit it
// holds all of it and the task exits. A redirected stream does not count
// against the request's output budget, which here is smaller than what
// the tasks write to their files.
func TestStdoutPathLimit(t *testing.T) {
	const limit = 100 << 10
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{RequestOutputLimit: 4 << 10}})
	low := svc.TaskLimits{OutputLimit: limit}
	resp := run(t, sb,
		svc.Single(svc.Task{Cmd: "head", Args: []string{"-c", strconv.Itoa(limit), "/dev/zero"}, StdoutPath: "at", Limits: low}),
		svc.Single(svc.Task{Cmd: "head", Args: []string{"-c", strconv.Itoa(10 * limit), "/dev/zero"}, StdoutPath: "past", Limits: low}),
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "yes >&2"}, StderrPath: "errs", Limits: low}),
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "yes; yes >&2"}, StdoutPath: "both", StderrPath: "both", Limits: low}),
		svc.Single(sh("wc -c < at; wc -c < past; wc -c < errs; wc -c < both")),
	)
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
	for i := 1; i <= 3; i++ {
		r := resp.Results[i].Results[0]
		if r.Outcome != svc.OutcomeOutputLimit || r.Stdout != "" || r.Stderr != "" {
			t.Errorf("step %d: %s stdout %q stderr %q, want output_limit and nothing", i, r.Outcome, clip(r.Stdout), clip(r.Stderr))
		}
	}
	r := resp.Results[4].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	n := strconv.Itoa(limit)
	if want := strings.Repeat(n+"\n", 4); r.Stdout != want {
		t.Errorf("sizes %q, want %q", r.Stdout, want)
	}
}

// TestStdoutPathRefused: a symlink planted at the path or at a
// component of it, a FIFO or a directory there: the task does not
// start, nothing is written on the host, the service does not hang.
func TestStdoutPathRefused(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	hostDir := t.TempDir()
	victim := filepath.Join(hostDir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := sh("mkdir dir && mkfifo fifo && ln -s " + victim + " link && ln -s " + filepath.Join(hostDir, "new") +
		" dangling && ln -s " + hostDir + " dirlink && echo f > file")
	for _, tc := range []struct{ field, path, why string }{
		{"stdout_path", "link", "symlink"},
		{"stdout_path", "dangling", "symlink"},
		{"stderr_path", "dirlink/new", "symlink"},
		{"stdout_path", "fifo", "not a regular file"},
		{"stderr_path", "dir", "is a directory"},
		{"stdout_path", "file/x", "not a directory"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			task := svc.Task{Cmd: "echo", Args: []string{"written"}}
			if tc.field == "stdout_path" {
				task.StdoutPath = tc.path
			} else {
				task.StderrPath = tc.path
			}
			resp := run(t, sb, svc.Single(plant), svc.Single(task))
			expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
			r := resp.Results[1].Results[0]
			expect(t, r, svc.OutcomeExited, 127)
			if !strings.HasPrefix(r.Stderr, "svc: "+tc.field+" \""+tc.path+"\": ") || !strings.Contains(r.Stderr, tc.why) {
				t.Errorf("stderr %q, want svc: %s %q: ...%s...", r.Stderr, tc.field, tc.path, tc.why)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
				t.Fatalf("host file: %q, %v", b, err)
			}
			if _, err := os.Lstat(filepath.Join(hostDir, "new")); !os.IsNotExist(err) {
				t.Fatalf("a host file was made through the link: %v", err)
			}
		})
	}
}

// TestStdinPathGrowing: a task reads a file that a task beside it writes
// meanwhile (its stdout_path): it reads what is there until it reaches
// the end, then end-of-file; nothing waits or fails. The file is opened
// for reading before the writer's open truncates it.
func TestStdinPathGrowing(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	resp := run(t, sb,
		svc.Single(sh("seq 100000 > grow")),
		svc.Parallel(
			svc.Task{Cmd: "sh", Args: []string{"-c", "for i in $(seq 2000); do echo $i; done"}, StdoutPath: "grow"},
			svc.Task{Cmd: "wc", Args: []string{"-c"}, StdinPath: "grow"},
		),
		svc.Single(sh("wc -c < grow")),
	)
	for _, sr := range resp.Results {
		for _, r := range sr.Results {
			expect(t, r, svc.OutcomeExited, 0)
		}
	}
	read, _ := strconv.Atoi(strings.TrimSpace(resp.Results[1].Results[1].Stdout))
	final, _ := strconv.Atoi(strings.TrimSpace(resp.Results[2].Results[0].Stdout))
	if final != 8893 || read > final {
		t.Errorf("read %d bytes of a file that ended with %d (want 8893)", read, final)
	}
}

// TestStreamPathsCached: a step with stream paths is stored and replayed
// like any other: its files come back from the layer, and a later step
// reads them.
func TestStreamPathsCached(t *testing.T) {
	sb := newCacheSandbox(t, newCache(t, svc.CacheConfig{}), svc.Config{})
	req := func() *svc.Request {
		return &svc.Request{Cache: true, Steps: []svc.Step{
			svc.Single(svc.Task{Cmd: "tr", Args: []string{"a-z", "A-Z"}, StdinPath: "in", StdoutPath: "out",
				Files: map[string]svc.File{"in": {Content: "judge\n"}}}),
			svc.Single(svc.Task{Cmd: "cat", Args: []string{"out"}, Cache: new(bool)}),
		}}
	}
	for i, replayed := range []bool{false, true} {
		resp, err := sb.Run(context.Background(), req())
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Results[0].Results[0]; r.Replayed != replayed || r.Outcome != svc.OutcomeExited {
			t.Fatalf("run %d: replayed %v outcome %s, want %v", i, r.Replayed, r.Outcome, replayed)
		}
		if r := resp.Results[1].Results[0]; r.Stdout != "JUDGE\n" {
			t.Errorf("run %d: the file holds %q", i, r.Stdout)
		}
	}
}

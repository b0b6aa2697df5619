package svc_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
)

// TestStdinPathParallel: the tasks of a parallel step each read their own
// file as stdin, in cells built ahead while the step before ran (their
// stdin goes to the task process with its command), through one clone
// of the workspace: each fd 0 is its own file, regular, named from the
// workspace's root; a merged stdout and stderr beside them keep their
// order. The step after finds the inputs as they were placed.
func TestStdinPathParallel(t *testing.T) {
	sb, fs := outputsSandbox(t, svc.Config{}, svc.FileStoreConfig{})
	stored, _, err := fs.Put(context.Background(), strings.NewReader(strings.Repeat("s\n", 5000)), "s.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) svc.Task {
		return svc.Task{Cmd: "sh", Args: []string{"-c", "readlink /proc/self/fd/0; stat -L -c %F /proc/self/fd/0; wc -l"}, StdinPath: p}
	}
	stored1, stored2 := read("in/s1.txt"), read("s2.txt")
	stored1.Files = map[string]svc.File{"in/s1.txt": {FileID: stored.ID}}
	stored2.Files = map[string]svc.File{"s2.txt": {FileID: stored.ID}}
	// Under native_v2 the cell's task process installs its filter before
	// it is ready: it takes its stdin under that filter.
	native := svc.Task{Cmd: "wc", Args: []string{"-c"}, StdinPath: "s2.txt", SandboxProfile: svc.ProfileNativeV2}
	merged := svc.Task{Cmd: "sh", Args: []string{"-c", "cat; echo err >&2; echo out"}, StdinPath: "a.txt",
		StdoutPath: "both.txt", StderrPath: "both.txt"}
	resp := run(t, sb,
		svc.Single(sh("printf 'a\\nb\\n' > a.txt")),
		svc.Parallel(read("a.txt"), stored1, stored2, merged, native),
		svc.Single(sh("cat both.txt; wc -l < in/s1.txt")),
	)
	want := []string{"/a.txt\nregular file\n2\n", "/in/s1.txt\nregular file\n5000\n", "/s2.txt\nregular file\n5000\n", "", "10000\n"}
	for i, w := range want {
		r := resp.Results[1].Results[i]
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != w {
			t.Errorf("task %d: stdout %q, want %q", i, r.Stdout, w)
		}
	}
	if got, w := resp.Results[2].Results[0].Stdout, "a\nb\nerr\nout\n5000\n"; got != w {
		t.Errorf("after: %q, want %q", got, w)
	}
}

// BenchmarkStdinPathSteps: six steps of width tasks (cat, native_v2)
// after a first step that places a small file, each task reading the
// file by stdin_path or its bytes as inline stdin: what a stdin_path
// costs a request beside inline stdin. With width 1 the machine has a
// CPU to spare, and a cell built on the step's critical path would show.
func BenchmarkStdinPathSteps(b *testing.B) {
	for _, c := range []struct {
		byPath bool
		width  int
	}{{true, 1}, {false, 1}, {true, 8}, {false, 8}} {
		name := "inline"
		if c.byPath {
			name = "stdin_path"
		}
		b.Run(name+"-width"+strconv.Itoa(c.width), func(b *testing.B) {
			sb := newSandbox(b, svc.Config{})
			steps := []svc.Step{svc.Single(svc.Task{Cmd: "true", Files: map[string]svc.File{"in": {Content: "hello\n"}}})}
			for range 6 {
				tasks := make([]svc.Task, c.width)
				for j := range tasks {
					tasks[j] = svc.Task{Cmd: "cat", SandboxProfile: svc.ProfileNativeV2}
					if c.byPath {
						tasks[j].StdinPath = "in"
					} else {
						tasks[j].Stdin = "hello\n"
					}
				}
				steps = append(steps, svc.Parallel(tasks...))
			}
			run(b, sb, steps...)
			b.ResetTimer()
			for range b.N {
				resp := run(b, sb, steps...)
				if got := resp.Results[6].Results[c.width-1].Stdout; got != "hello\n" {
					b.Fatalf("stdout %q", got)
				}
			}
		})
	}
}

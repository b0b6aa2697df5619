package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/internal/initproc"
	"golang.org/x/sys/unix"
)

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates namespaces and mounts")
	}
}

// testRun runs argv in a task of a new shell, with a workspace and /tmp
// of its own.
func testRun(t testing.TB, argv ...string) *Result {
	t.Helper()
	c, err := testShell(t).Cell(context.Background(), shellTask(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Run(context.Background(), testTask(argv...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testTask(argv ...string) *Task {
	return &Task{
		Spec:        initproc.TaskSpec{Dir: "/svc", Cmd: argv[0], Args: argv, Env: []string{"PATH=/usr/bin:/bin"}},
		WallTimeout: 10 * time.Second, OutputLimit: 1 << 20,
	}
}

func TestRunEcho(t *testing.T) {
	requireRoot(t)
	r := testRun(t, "sh", "-c", "echo hello; id -u; hostname; echo err >&2; exit 3")
	if r.Report.SetupError != "" {
		t.Fatalf("setup: %s", r.Report.SetupError)
	}
	if !r.Report.Exited || r.Report.Status.ExitStatus() != 3 {
		t.Fatalf("report %+v", r.Report)
	}
	if got := string(r.Stdout); got != "hello\n1000\nsvc\n" {
		t.Errorf("stdout %q", got)
	}
	if got := string(r.Stderr); got != "err\n" {
		t.Errorf("stderr %q", got)
	}
}

func TestRunNotFound(t *testing.T) {
	requireRoot(t)
	r := testRun(t, "no-such-command")
	if r.Report.Status.ExitStatus() != 127 || !strings.HasPrefix(string(r.Stderr), "svc: no-such-command: ") {
		t.Fatalf("report %+v stderr %q", r.Report, r.Stderr)
	}
}

// TestShellClose: a closed shell leaves no process.
func TestShellClose(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", s.pid)); err == nil {
		t.Errorf("init %d still there after Close", s.pid)
	}
}

// BenchmarkBuildShell is the cost of a shell, built and closed unused.
func BenchmarkBuildShell(b *testing.B) {
	requireRoot(b)
	cfg := testShellConfig(b)
	for b.Loop() {
		s, err := BuildShell(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// TestBuildFailureReaps: when the zygote cannot finish an init it made
// (here the uid map is refused: host id 2^32-1 is no id), the build fails
// with the reason and the killed init, a child of this process, is
// reaped: no zombie is left.
func TestBuildFailureReaps(t *testing.T) {
	requireRoot(t)
	cfg := testShellConfig(t)
	cfg.InitUID = 1<<32 - 1
	_, err := BuildShell(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "uid_map") || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("BuildShell: %v, want the uid_map write failing with EINVAL", err)
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

// TestBuildJoinFailure: a task process that cannot join its cgroup (its
// cgroup.procs write fails: /dev/full) fails the task's start with the
// reason, the shell goes, and nothing of it is left.
func TestBuildJoinFailure(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	task := shellTask(t)
	full, err := unix.Open("/dev/full", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	task.CgroupProcs = []int{full}
	_, err = s.Cell(context.Background(), task)
	if err == nil || !strings.Contains(err.Error(), "join the task's cgroup") || !strings.Contains(strings.ToLower(err.Error()), unix.ENOSPC.Error()) {
		t.Fatalf("Cell: %v, want the cgroup join failing with %q", err, unix.ENOSPC.Error())
	}
	if s.Usable() {
		t.Error("the shell of a failed task is usable")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

// zombieChildren lists this process's children that are zombies.
func zombieChildren(t testing.TB) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) >= 2 && f[0] == "Z" && f[1] == fmt.Sprint(os.Getpid()) {
			out = append(out, p)
		}
	}
	return out
}

// collectPipe writes in to a non-blocking pipe from another goroutine
// and reads it into c as pump does: poll(2), then fill, until its end.
func collectPipe(t *testing.T, in []byte, c *collector) ([]byte, bool) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	w := os.NewFile(uintptr(p[1]), "|w")
	go func() {
		w.Write(in)
		w.Close()
	}()
	for {
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}, -1); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		if c.fill(p[0]) {
			return c.result()
		}
	}
}

// TestCollect: output is kept up to the limit and the budget, exactly;
// past them the stream is drained and reported truncated once.
func TestCollect(t *testing.T) {
	const big = 300 * 1024 // several rounds of the room's growth
	data := make([]byte, big)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, c := range []struct {
		name          string
		n             int
		limit, budget int64 // 0: none
		want          int
		truncated     bool
	}{
		{"empty", 0, 0, 0, 0, false},
		{"no limit", big, 0, 0, big, false},
		{"exact fit", big, big, 0, big, false},
		{"one past", big + 1, big, 0, big, true},
		{"far past", big, 1000, 0, 1000, true},
		{"budget first", big, big, 5000, 5000, true},
		{"limit first", big, 4000, 5000, 4000, true},
		// Around the collector's own first room (128 bytes).
		{"small", 5, 0, 0, 5, false},
		{"first room full", 128, 0, 0, 128, false},
		{"past first room", 129, 0, 0, 129, false},
		{"limit in first room", big, 10, 0, 10, true},
		{"limit is first room", 128, 128, 0, 128, false},
		{"one past first room's limit", 129, 128, 0, 128, true},
		{"budget in first room", big, 0, 7, 7, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := data
			if c.n > big {
				in = append(slices.Clone(data), 'x')
			}
			in = in[:c.n]
			var b *Budget
			if c.budget > 0 {
				b = NewBudget(c.budget)
			}
			kills := 0
			out, trunc := collectPipe(t, in, &collector{limit: c.limit, budget: b, exceeded: func() { kills++ }})
			if len(out) != c.want || !bytes.Equal(out, in[:c.want]) || trunc != c.truncated {
				t.Errorf("got %d bytes (equal %v), truncated %v; want %d, %v", len(out), bytes.Equal(out, in[:min(len(out), len(in))]), trunc, c.want, c.truncated)
			}
			if wantKills := map[bool]int{true: 1, false: 0}[c.truncated]; kills != wantKills {
				t.Errorf("exceeded called %d times, want %d", kills, wantKills)
			}
		})
	}
}

// TestRunStreams: one loop moves a task's stdin, stdout, stderr and status
// (Cell.pump). Each case would hang or lose bytes if a stream waited on
// another: both directions past a pipe's buffer at once, stdout and
// stderr filled in turn, stdin never read or closed early by the task.
// Every case runs with the loop waiting in poll(2) and parked in the
// shell's poller (Task.Park); the parked ones one after another in one
// shell, whose poller each task leaves cleared for the next.
func TestRunStreams(t *testing.T) {
	requireRoot(t)
	parkShell := testShell(t)
	big := strings.Repeat("0123456789abcdef", 48<<10) // 768 KiB
	for _, c := range []struct {
		name, script, stdin string
		wantOut, wantErr    string
		wantExit            int
	}{
		{"stdin through to stdout, both past a pipe's buffer", "cat", big, big, "", 0},
		{"stdin through to stderr", "cat >&2", big, "", big, 0},
		{"stdout and stderr in turn", "for i in 1 2 3; do head -c 100000 /dev/zero | tr '\\0' o; head -c 100000 /dev/zero | tr '\\0' e >&2; done", "",
			strings.Repeat(strings.Repeat("o", 100000), 3), strings.Repeat(strings.Repeat("e", 100000), 3), 0},
		{"stdin never read", "echo done", big, "done\n", "", 0},
		{"stdin closed after a line", "head -n 1; exec 0<&-; echo closed", "first\n" + big, "first\nclosed\n", "", 0},
		{"no stdin, exit status", "cat; exit 7", "", "", "", 7},
	} {
		for _, park := range []bool{false, true} {
			name := c.name
			sh := parkShell
			if park {
				name += ", parked"
			} else {
				sh = testShell(t)
			}
			t.Run(name, func(t *testing.T) {
				if park && sh.poll == nil {
					t.Fatal("the shell has no poller")
				}
				cell, err := sh.Cell(context.Background(), shellTask(t))
				if err != nil {
					t.Fatal(err)
				}
				defer cell.Close()
				task := testTask("sh", "-c", c.script)
				task.Stdin, task.Park = c.stdin, park
				r, err := cell.Run(context.Background(), task)
				if err != nil {
					t.Fatal(err)
				}
				if !r.Report.Exited || r.Report.Status.ExitStatus() != c.wantExit {
					t.Fatalf("report %+v, want exit %d; stderr %.200q", r.Report, c.wantExit, r.Stderr)
				}
				if string(r.Stdout) != c.wantOut || string(r.Stderr) != c.wantErr || r.StdoutTruncated || r.StderrTruncated {
					t.Errorf("stdout %d bytes (want %d, equal %v, truncated %v), stderr %d bytes (want %d, equal %v, truncated %v)",
						len(r.Stdout), len(c.wantOut), string(r.Stdout) == c.wantOut, r.StdoutTruncated,
						len(r.Stderr), len(c.wantErr), string(r.Stderr) == c.wantErr, r.StderrTruncated)
				}
			})
		}
	}
}

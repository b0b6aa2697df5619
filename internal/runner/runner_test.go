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
	"github.com/svc-sandbox/svc/internal/mount"
	"golang.org/x/sys/unix"
)

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates namespaces and mounts")
	}
}

// testCell builds a cell whose workspace is a temporary directory and runs
// argv in it.
func testRun(t testing.TB, argv ...string) *Result {
	t.Helper()
	cfg := testCell(t)
	cell, err := Build(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	r, err := cell.Run(context.Background(), testTask(argv...))
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

// testCell returns the config of a sandbox whose workspace is a temporary
// directory.
func testCell(t testing.TB) *CellConfig {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"svc", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"svc", "tmp"} {
		os.Chown(filepath.Join(dir, d), 1_500_001, 1_500_001)
	}
	// The temp dir is 0700 root: let the sandbox identities through.
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	sys, err := mount.ScanRootFS("/")
	if err != nil {
		t.Fatal(err)
	}
	if err := mount.MakeSkeleton(filepath.Join(dir, "skel"), sys); err != nil {
		t.Fatal(err)
	}
	plan := mount.Build(mount.Params{
		RootFS: "/", Skeleton: filepath.Join(dir, "skel"), ShmSize: 1 << 20,
	}, sys)
	return &CellConfig{
		Spec:    initproc.CellSpec{Mounts: plan, Hostname: "svc", UID: 1000, GID: 1000},
		InitUID: 1_500_000, TaskUID: 1_500_001,
		Trees: []string{mount.WorkspaceTree: filepath.Join(dir, "svc"), mount.TmpTree: filepath.Join(dir, "tmp")},
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

// TestCellClose: a cell closed unused leaves no process.
func TestCellClose(t *testing.T) {
	requireRoot(t)
	cell, err := Build(context.Background(), testCell(t))
	if err != nil {
		t.Fatal(err)
	}
	pid := cell.Pid()
	if err := cell.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		t.Errorf("init %d still there after Close", pid)
	}
}

// BenchmarkBuild is the cost of a cell, built and closed unused.
func BenchmarkBuild(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	cfg := testCell(b)
	for b.Loop() {
		cell, err := Build(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		cell.Close()
	}
}

// BenchmarkRunTrue is the cost of releasing a built cell's /bin/true, the
// build excluded.
func BenchmarkRunTrue(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	cfg := testCell(b)
	for b.Loop() {
		b.StopTimer()
		cell, err := Build(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := cell.Run(context.Background(), testTask("/bin/true")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cell.Close()
		b.StartTimer()
	}
}

// TestBuildFailureReaps: when the zygote cannot finish an init it made
// (here the uid map is refused: host id 2^32-1 is no id), the build fails
// with the reason and the killed init, a child of this process, is
// reaped: no zombie is left.
func TestBuildFailureReaps(t *testing.T) {
	requireRoot(t)
	cfg := testCell(t)
	cfg.InitUID = 1<<32 - 1
	_, err := Build(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "uid_map") || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Build: %v, want the uid_map write failing with EINVAL", err)
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

// TestBuildJoinFailure: a task process that cannot join its cgroup (its
// cgroup.procs write fails: /dev/full) fails the build with the reason,
// and nothing of the cell is left.
func TestBuildJoinFailure(t *testing.T) {
	requireRoot(t)
	cfg := testCell(t)
	cfg.CgroupProcs = []string{"/dev/full"}
	_, err := Build(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "join the task's cgroup") || !strings.Contains(strings.ToLower(err.Error()), unix.ENOSPC.Error()) {
		t.Fatalf("Build: %v, want the cgroup join failing with %q", err, unix.ENOSPC.Error())
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

// zombieChildren lists this process's children that are zombies.
func zombieChildren(t *testing.T) []string {
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
			out, trunc := collect(bytes.NewReader(in), c.limit, b, func() { kills++ })
			if len(out) != c.want || !bytes.Equal(out, in[:c.want]) || trunc != c.truncated {
				t.Errorf("got %d bytes (equal %v), truncated %v; want %d, %v", len(out), bytes.Equal(out, in[:min(len(out), len(in))]), trunc, c.want, c.truncated)
			}
			if wantKills := map[bool]int{true: 1, false: 0}[c.truncated]; kills != wantKills {
				t.Errorf("exceeded called %d times, want %d", kills, wantKills)
			}
		})
	}
}

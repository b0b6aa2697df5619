package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/mount"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates namespaces and mounts")
	}
}

// testTask builds a task running argv in a fresh sandbox whose workspace is
// a temporary directory.
func testTask(t *testing.T, argv ...string) *Task { return testTaskB(t, argv...) }

func testTaskB(t testing.TB, argv ...string) *Task {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"root", "svc", "tmp"} {
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
	plan := mount.Build(mount.Params{
		RootFS: "/", NewRoot: filepath.Join(dir, "root"),
		Workspace: filepath.Join(dir, "svc"), Tmp: filepath.Join(dir, "tmp"), ShmSize: 1 << 20,
	}, sys)
	return &Task{
		Spec: initproc.Spec{
			Mounts: plan, Hostname: "svc", UID: 1000, GID: 1000, Dir: "/svc",
			Cmd: argv[0], Args: argv, Env: []string{"PATH=/usr/bin:/bin"},
		},
		InitUID: 1_500_000, TaskUID: 1_500_001,
		WallTimeout: 10 * time.Second, OutputLimit: 1 << 20,
	}
}

func TestRunEcho(t *testing.T) {
	requireRoot(t)
	task := testTask(t, "sh", "-c", "echo hello; id -u; hostname; echo err >&2; exit 3")
	r, err := Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
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
	r, err := Run(context.Background(), testTask(t, "no-such-command"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Report.Status.ExitStatus() != 127 || !strings.HasPrefix(string(r.Stderr), "svc: no-such-command: ") {
		t.Fatalf("report %+v stderr %q", r.Report, r.Stderr)
	}
}

func BenchmarkRunTrue(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	task := testTaskB(b, "/bin/true")
	for b.Loop() {
		if _, err := Run(context.Background(), task); err != nil {
			b.Fatal(err)
		}
	}
}

package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/mount"
	"github.com/svc-sandbox/svc/internal/seccomp"
)

// testShellConfig returns the config of a shell whose root is a skeleton
// in a temporary directory.
func testShellConfig(t testing.TB) *ShellConfig {
	t.Helper()
	sys, err := mount.ScanRootFS("/")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The temp dir is 0700 root: let the sandbox identities through.
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	if err := mount.MakeSkeleton(filepath.Join(dir, "skel"), sys); err != nil {
		t.Fatal(err)
	}
	plan := mount.ShellPlan(mount.Params{RootFS: "/", Skeleton: filepath.Join(dir, "skel"), ShmSize: 1 << 20}, sys)
	return &ShellConfig{
		Spec:    initproc.CellSpec{Mounts: plan, Hostname: "svc", UID: 1000, GID: 1000},
		InitUID: 1_500_000, TaskUID: 1_500_001,
	}
}

// testShell builds a shell of testShellConfig, closed at the test's end.
func testShell(t testing.TB) *Shell {
	t.Helper()
	s, err := BuildShell(context.Background(), testShellConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// shellTask returns a task of a shell with a workspace and /tmp of its
// own, as each request has.
func shellTask(t testing.TB) *ShellTask {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	var trees []string
	for _, d := range []string{"svc", "tmp"} {
		p := filepath.Join(dir, d)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, 1_500_001, 1_500_001)
		trees = append(trees, p)
	}
	return &ShellTask{Trees: trees, Mounts: mount.TaskMounts(mount.Params{ShmSize: 1 << 20})}
}

func runShell(t *testing.T, s *Shell, argv ...string) *Result {
	t.Helper()
	c, err := s.Cell(context.Background(), shellTask(t))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Run(context.Background(), testTask(argv...))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return r
}

// leaver is a hostile first task: it leaves what it can for the next one
// to find. Processes of its own (in the background, in a new session,
// stopped), files in /tmp and /dev/shm, a SysV shared memory segment, a
// POSIX message queue and an abstract unix socket listening, then exits.
const leaver = `
import ctypes, os, signal, socket, subprocess, time
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget(0x5cc, 4096, 0o1000 | 0o600) >= 0, "shmget"
mq = libc.mq_open(b"/svc-left", os.O_CREAT | os.O_RDWR, 0o600, None)
assert mq >= 0, "mq_open"
open("/tmp/left", "w").write("x")
open("/dev/shm/left", "w").write("x")
s = socket.socket(socket.AF_UNIX); s.bind("\0svc-left"); s.listen()
subprocess.Popen(["sleep", "1000"], start_new_session=True)
p = subprocess.Popen(["sleep", "1000"]); os.kill(p.pid, signal.SIGSTOP)
if os.fork() == 0:
    time.sleep(1000)
print(os.getpid(), sorted(int(d) for d in os.listdir("/proc") if d.isdigit()))
`

// finder is the next task: what does it see?
const finder = `
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
found = []
if libc.shmget(0x5cc, 0, 0) >= 0: found.append("shm segment")
if libc.mq_open(b"/svc-left", os.O_RDWR) >= 0: found.append("message queue")
for f in ["/tmp/left", "/dev/shm/left"]:
    if os.path.exists(f): found.append(f)
s = socket.socket(socket.AF_UNIX)
try: s.bind("\0svc-left")
except OSError: found.append("abstract socket")
procs = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
print(os.getpid(), procs, found)
`

// TestShellReuse: a shell runs a second task after a hostile first one,
// and the second finds nothing of the first: no process, no file, no
// IPC object, no socket name, and the same PIDs a fresh sandbox gives.
func TestShellReuse(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	made, cells := ShellCounts()
	r := runShell(t, s, "python3", "-c", leaver)
	if !r.Report.Exited || r.Report.Status.ExitStatus() != 0 {
		t.Fatalf("leaver: %+v, stderr %s", r.Report, r.Stderr)
	}
	first := strings.TrimSpace(string(r.Stdout))
	t.Logf("leaver: %s", first)
	if !strings.HasPrefix(first, "2 [2") || strings.Contains(first, "[1,") {
		t.Errorf("first task: %q, want pid 2 and no pid 1 in /proc", first)
	}
	for i := range 3 {
		if !s.Usable() {
			t.Fatalf("shell not usable after task %d", i+1)
		}
		r = runShell(t, s, "python3", "-c", finder)
		got := strings.TrimSpace(string(r.Stdout))
		t.Logf("task %d: %s", i+2, got)
		if got != "2 [2] []" {
			t.Errorf("task %d after the leaver: %q (stderr %s), want pid 2, /proc of itself alone, nothing found", i+2, got, r.Stderr)
		}
	}
	if m, c := ShellCounts(); m != made || c != cells+4 {
		t.Errorf("shells made %d, cells %d; want no new shell and 4 cells", m-made, c-cells)
	}
}

// shellMounts counts the mounts of the shell's namespace.
func shellMounts(t *testing.T, s *Shell) int {
	t.Helper()
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", s.pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(mi), "\n")
}

// TestShellUndoMounts: a task's mounts are undone with one unmount, the
// others moved into fresh directories of its /dev/shm tmpfs first; hostile
// tasks that take those names (with a symlink to /svc, or a directory) or
// use up the tmpfs's inodes get them undone one by one. After each, the
// shell holds the mounts it held idle, and the next task finds an empty
// /dev/shm and the mounts a first task finds.
func TestShellUndoMounts(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	const look = "ls -A /dev/shm; grep -c . /proc/self/mountinfo"
	idle := shellMounts(t, s)
	want := strings.TrimSpace(string(runShell(t, s, "sh", "-c", look).Stdout))
	if want == "" || strings.Contains(want, "\n") {
		t.Fatalf("first task: %q, want a fresh /dev/shm and a mount count", want)
	}
	for _, hostile := range []struct{ name, script string }{
		{"plain", "true"},
		{"first name a symlink", "ln -s /svc /dev/shm/.svc-undo-0"},
		{"second name taken", "mkdir /dev/shm/.svc-undo-1"},
		{"inodes used up", "i=0; while true >/dev/shm/f$i; do i=$((i+1)); done 2>/dev/null; [ $i -gt 1000 ]"},
	} {
		t.Run(hostile.name, func(t *testing.T) {
			r := runShell(t, s, "sh", "-c", hostile.script)
			if !r.Report.Exited || r.Report.Status.ExitStatus() != 0 {
				t.Fatalf("%s: %+v, stderr %s", hostile.script, r.Report, r.Stderr)
			}
			if !s.Usable() {
				t.Fatal("shell not usable")
			}
			if n := shellMounts(t, s); n != idle {
				t.Errorf("the shell holds %d mounts after the task, %d idle before", n, idle)
			}
			if got := strings.TrimSpace(string(runShell(t, s, "sh", "-c", look).Stdout)); got != want {
				t.Errorf("the next task finds %q, the first found %q", got, want)
			}
		})
	}
}

// TestShellTaskSession: a task is the leader of a process group of its
// own, in the session of its shell's init (PID 1 of the namespace), with
// no controlling terminal, whatever the service's: two tasks in a row find
// the same.
func TestShellTaskSession(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	const look = `read -r _ _ _ _ _ _ tty tpgid _ </proc/self/stat; echo "$$ $(ps -o pgid= -p $$) $(ps -o sid= -p $$) tty=$tty tpgid=$tpgid"`
	for i := range 2 {
		r := runShell(t, s, "sh", "-c", look)
		got := strings.Join(strings.Fields(string(r.Stdout)), " ")
		if want := "2 2 1 tty=0 tpgid=-1"; got != want {
			t.Errorf("task %d: pid pgid sid, terminal: %q (stderr %s), want %q", i+1, got, r.Stderr, want)
		}
	}
}

// TestShellKilled: a task killed for its wall time takes its shell with
// it, and closing the shell leaves nothing behind.
func TestShellKilled(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	c, err := s.Cell(context.Background(), shellTask(t))
	if err != nil {
		t.Fatal(err)
	}
	task := testTask("sleep", "100")
	task.WallTimeout = 100 * time.Millisecond
	r, err := c.Run(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if !r.TimedOut {
		t.Errorf("result %+v, want timed out", r)
	}
	c.Close()
	if s.Usable() {
		t.Error("a shell whose task was killed is usable")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("zombie children left: %v", z)
	}
}

// TestShellUnusedCell: a cell taken and closed unused gives the shell
// back.
func TestShellUnusedCell(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	c, err := s.Cell(context.Background(), shellTask(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !s.Usable() {
		t.Fatal("shell not usable after an unused cell")
	}
	if r := runShell(t, s, "sh", "-c", "echo $$"); strings.TrimSpace(string(r.Stdout)) != "2" {
		t.Errorf("stdout %q, want 2", r.Stdout)
	}
}

// BenchmarkShellTrue is a /bin/true task in a reused shell: cell taken,
// run and closed.
func BenchmarkShellTrue(b *testing.B) {
	requireRoot(b)
	s := testShell(b)
	task := shellTask(b)
	for b.Loop() {
		c, err := s.Cell(context.Background(), task)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Run(context.Background(), testTask("/bin/true")); err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestShellMemoryBounded: a shell's init does not grow with the tasks it
// runs. Each task process shares the init's memory until its execve, so
// whatever it allocates there must be given back (before the fix the init
// grew by 1.2 MB a task here); its open files and mounts stay the same.
func TestShellMemoryBounded(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	vmData := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "VmData:" {
				n, _ := strconv.Atoi(f[1])
				return n
			}
		}
		t.Fatal("no VmData")
		return 0
	}
	task := shellTask(t)
	run := func() {
		c, err := s.Cell(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		// Big enough records that a leak shows: 200 KB of environment.
		tt := testTask("/bin/true")
		tt.Spec.Env = append(tt.Spec.Env, "BIG="+strings.Repeat("x", 200<<10))
		if _, err := c.Run(context.Background(), tt); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Its open files and its mounts stay as they were too.
	count := func() (fds, mounts int) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents), shellMounts(t, s)
	}
	run()
	before := vmData()
	fds, mounts := count()
	for range 100 {
		run()
	}
	if after := vmData(); after > before+1024 {
		t.Errorf("the shell's data grew from %d to %d kB over 100 tasks", before, after)
	}
	if f, m := count(); f != fds || m != mounts {
		t.Errorf("the shell's open files %d -> %d, mounts %d -> %d over 100 tasks", fds, f, mounts, m)
	}
}

// TestShellForgetsTask: once a task is done, its command line and
// environment are nowhere in its shell's init, whose memory the task
// process shared until its execve: neither a small config, cleared in
// place, nor a large one, whose pages are dropped or unmapped.
func TestShellForgetsTask(t *testing.T) {
	requireRoot(t)
	s := testShell(t)
	for _, pad := range []int{0, 100 << 10} {
		marker := fmt.Sprintf("svc-secret-%d-%d", time.Now().UnixNano(), pad)
		c, err := s.Cell(context.Background(), shellTask(t))
		if err != nil {
			t.Fatal(err)
		}
		tt := testTask("/bin/true", "arg-"+marker)
		tt.Spec.Env = append(tt.Spec.Env, "SECRET="+marker, "PAD="+strings.Repeat("x", pad))
		r, err := c.Run(context.Background(), tt)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if !r.Report.Exited || r.Report.Status.ExitStatus() != 0 {
			t.Fatalf("task: %+v\nstderr: %s", r.Report, r.Stderr)
		}
		if n := memoryHolds(t, s.pid, marker); n > 0 {
			t.Errorf("config of %d bytes: the init's memory holds the task's marker %d times after the task", len(marker)+pad, n)
		}
	}
	// The check can see a marker where it is: the test's own process.
	if n := memoryHolds(t, os.Getpid(), "svc-secret-"); n == 0 {
		t.Error("memoryHolds finds nothing in this process, which holds the markers")
	}
}

// memoryHolds counts the occurrences of s in the writable memory of
// process pid, read through /proc/pid/mem a megabyte at a time. Mappings
// over 256 MiB are passed over: an init has none, and the race
// detector's shadow of this process is terabytes of reserved memory.
func memoryHolds(t *testing.T, pid int, s string) int {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	n := 0
	buf := make([]byte, 1<<20+len(s))
	for _, l := range strings.Split(strings.TrimSpace(string(maps)), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(f[1], "rw") || (len(f) > 5 && f[5] == "[vvar]") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("maps line %q", l)
		}
		if end-start > 256<<20 {
			continue
		}
		// Chunks overlap by len(s)-1 bytes, so that a match across a
		// boundary is seen once.
		for off := start; off < end; off += 1 << 20 {
			m := min(uint64(len(buf)), end-off)
			k, _ := mem.ReadAt(buf[:m], int64(off))
			n += strings.Count(string(buf[:k]), s)
			if k == int(m) && off+m < end {
				n -= strings.Count(string(buf[1<<20:k]), s) // counted again in the next chunk
			}
		}
	}
	return n
}

// TestShellWatchedSockets: under a watched filter (seccomp.WatchedProgram)
// a cell learns of every socket its task's processes make, from the main
// process, a child, a thread, or one that outlives the task, and a task
// that made none leaves its network namespace as it was made: the read
// the cell then skips would find nothing. Sockets still work, and no
// process of the task holds the filter's listener.
func TestShellWatchedSockets(t *testing.T) {
	requireRoot(t)
	prog, err := seccomp.WatchedProgram(seccomp.CompileV2)
	if err != nil {
		t.Fatal(err)
	}
	const udp = `s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
s.sendto(b"x", s.getsockname()); assert s.recv(1) == b"x"
`
	const (
		none = iota
		seen
		either
	)
	for _, c := range []struct {
		name, script string
		sockets      int // none, seen (the cell must have seen one), either
	}{
		{"none", `import socket; print("ok")`, none},
		{"main", "import socket\n" + udp + `print("ok")`, seen},
		{"child socketpair", `import os, socket
if os.fork() == 0:
    a, b = socket.socketpair(); a.send(b"x"); assert b.recv(1) == b"x"; os._exit(0)
_, st = os.wait(); assert st == 0; print("ok")`, seen},
		{"thread", `import socket, threading
def f():
` + "    " + strings.ReplaceAll(udp, "\n", "\n    ") + `
th = threading.Thread(target=f); th.start(); th.join(); print("ok")`, seen},
		// A process left tries as soon as the task's main process is
		// gone, racing the shell's kill: seen, or waiting unanswered
		// until it is killed, without a socket. Either way the
		// namespace is read or as made (checked below).
		{"after the task", `import os, socket
if os.fork() == 0:
    os.setsid()
    for fd in (0, 1, 2): os.close(fd)
    while os.getppid() != 1: pass
    while True:
        ` + strings.ReplaceAll(udp, "\n", "\n        ") + `
print("ok")`, either},
		{"listener", `import os
fds = sorted(os.listdir("/proc/self/fd"))
links = [os.readlink("/proc/self/fd/" + f) for f in fds if os.path.exists("/proc/self/fd/" + f)]
assert not any("seccomp" in l or "anon_inode" in l for l in links), links
print("ok")`, none},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testShell(t)
			task := shellTask(t)
			task.Filter, task.Watched = prog, true
			cell, err := s.Cell(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			if cell.notify < 0 {
				t.Fatal("a watched cell without the filter's listener")
			}
			// HOME set, as svc's tasks have it: without, Python looks
			// its user up, and glibc tries nscd's unix socket.
			rt := testTask("python3", "-c", c.script)
			rt.Spec.Env = append(rt.Spec.Env, "HOME=/svc")
			r, err := cell.Run(context.Background(), rt)
			if err != nil {
				cell.Close()
				t.Fatal(err)
			}
			used := cell.netUsed
			if err := cell.Close(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(r.Stdout)); got != "ok" {
				t.Fatalf("stdout %q, stderr %s", got, r.Stderr)
			}
			if c.sockets != either && used != (c.sockets == seen) {
				t.Errorf("sockets seen: %v, want %v", used, c.sockets == seen)
			}
			t.Logf("sockets seen: %v", used)
			// Unseen, the namespace was given back unread: it must read
			// as when it was made.
			if !used && (!s.Usable() || !unchanged(t, s.netns)) {
				t.Error("no socket seen, but the network namespace changed")
			}
		})
	}
}

// BenchmarkSocketCalls times what a socket call costs a task under its
// profile's filter (compile_v2), unwatched and watched (each call waits
// for the cell's answer): a task makes and closes 20000 unix sockets.
// ns/socket includes Python's start, about 15 ms an op; the difference of
// the two is what the watch costs a call.
func BenchmarkSocketCalls(b *testing.B) {
	requireRoot(b)
	const n = 20000
	for _, watched := range []bool{false, true} {
		b.Run(fmt.Sprintf("watched=%v", watched), func(b *testing.B) {
			prog, err := seccomp.Program(seccomp.CompileV2)
			if watched {
				prog, err = seccomp.WatchedProgram(seccomp.CompileV2)
			}
			if err != nil {
				b.Fatal(err)
			}
			s := testShell(b)
			rt := testTask("python3", "-c", fmt.Sprintf("import socket\nfor i in range(%d): socket.socket(socket.AF_UNIX).close()", n))
			rt.Spec.Env = append(rt.Spec.Env, "HOME=/svc")
			for b.Loop() {
				task := shellTask(b)
				task.Filter, task.Watched = prog, watched
				cell, err := s.Cell(context.Background(), task)
				if err != nil {
					b.Fatal(err)
				}
				r, err := cell.Run(context.Background(), rt)
				cell.Close()
				if err != nil || !r.Report.Exited || r.Report.Status.ExitStatus() != 0 {
					b.Fatalf("%v %+v %s", err, r, r.Stderr)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/socket")
		})
	}
}

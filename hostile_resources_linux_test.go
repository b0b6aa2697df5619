package svc_test

// The resource tests run hostile programs that take as much as they can of
// a kernel resource the kernel counts outside the sandbox: per user up the
// chain of user namespaces (inotify, POSIX message queues, queued
// signals), or host-wide (Linux AIO). Each program (testdata/hostile,
// with probe.h and hold.h) holds its maximum until the test releases it;
// meanwhile the test, as root on the host, and a concurrent request each
// make one of the same resource, which must work. docs/security.md has
// the table of these counters and how each is bounded.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/internal/initproc"
)

// resourceProfile is the profile the resource programs run under: the
// one submissions run under, with which the reproductions were made.
const resourceProfile = svc.ProfileNativeV2

// newResourceSandbox is newIsolationSandbox with time for a compile in a
// concurrent request while a resource program holds its maximum.
func newResourceSandbox(t *testing.T) *svc.Sandbox {
	t.Helper()
	return newIsolationSandbox(t, svc.Config{Limits: svc.Limits{
		WallTimeout: 120 * time.Second, CPUTimeLimit: 60 * time.Second, MaxConcurrency: 2, MaxParallelTasks: 1,
	}})
}

// compileResource is a step compiling testdata/hostile/<name>.c, with
// probe.h and hold.h inlined, to /svc/<name>.
func compileResource(t *testing.T, name string) svc.Step {
	t.Helper()
	h, err := os.ReadFile(filepath.Join("testdata", "hostile", "hold.h"))
	if err != nil {
		t.Fatal(err)
	}
	src := hostile(t, name)
	const inc = "#include \"hold.h\"\n"
	if !strings.Contains(src, inc) {
		t.Fatalf("%s.c does not include hold.h", name)
	}
	src = strings.Replace(src, inc, string(h), 1)
	return svc.Single(svc.Task{
		Cmd:   "gcc",
		Args:  []string{"-O1", "-Wall", "-o", name, name + ".c"},
		Files: map[string]svc.File{name + ".c": {Content: src}},
	})
}

// runResource runs the compile of name and then the program with args
// under resourceProfile, in one request, and returns the program's
// result.
func runResource(t *testing.T, ctx context.Context, sb *svc.Sandbox, name string, args ...string) (svc.Result, error) {
	resp, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{compileResource(t, name),
		svc.Single(svc.Task{Cmd: "./" + name, Args: args, SandboxProfile: resourceProfile})}})
	if err != nil {
		return svc.Result{}, err
	}
	if c := resp.Results[0].Results[0]; c.Outcome != svc.OutcomeExited || c.ExitCode != 0 {
		t.Errorf("compile %s: %s exit %d\n%s%s", name, c.Outcome, c.ExitCode, c.Stdout, c.Stderr)
	}
	return resp.Results[1].Results[0], nil
}

// whileHeld runs the resource program name in a request of its own, waits
// until it holds its maximum (its command line says "-held"), calls during
// and then releases it, and returns the program's lines (its figures) and
// its result.
func whileHeld(t *testing.T, sb *svc.Sandbox, name string, during func()) (lines, svc.Result) {
	t.Helper()
	marker := "svc-hold-" + randomHex(8)
	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		r   svc.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := runResource(t, ctx, sb, name, marker+"-wait")
		done <- answer{r, err}
	}()
	// On a failure, the request is cancelled and gone before the
	// sandbox's cleanup looks for leftovers.
	released := false
	defer func() {
		if !released {
			cancel()
			<-done
		}
	}()
	deadline := time.Now().Add(2 * time.Minute)
	pid, _ := hostProcess(marker + "-held")
	for ; pid == 0; pid, _ = hostProcess(marker + "-held") {
		select {
		case a := <-done:
			t.Fatalf("%s ended before it held its maximum: %v %s exit %d\n%s%s", name, a.err, a.r.Outcome, a.r.ExitCode, a.r.Stdout, a.r.Stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not hold its maximum within 2 minutes", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	during()
	// Release: open the FIFO the program waits on, through its root.
	fifo, err := os.OpenFile(filepath.Join("/proc", strconv.Itoa(pid), "root", "tmp", marker), os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("release %s: %v", name, err)
	}
	fifo.Close()
	released = true
	a := <-done
	cancel()
	if a.err != nil {
		t.Fatalf("%s: %v", name, a.err)
	}
	expect(t, a.r, svc.OutcomeExited, 0)
	t.Logf("%s held:\n%s", name, a.r.Stdout)
	return parseLines(t, a.r.Stdout), a.r
}

// concurrent runs the resource program name with "once" in a request of
// its own and checks its lines against want (anchored patterns).
func concurrent(t *testing.T, sb *svc.Sandbox, name string, want map[string]string) {
	t.Helper()
	r, err := runResource(t, context.Background(), sb, name, "once")
	if err != nil {
		t.Errorf("concurrent request: %v", err)
		return
	}
	expect(t, r, svc.OutcomeExited, 0)
	t.Logf("concurrent request: %s", strings.ReplaceAll(strings.TrimSpace(r.Stdout), "\n", "; "))
	parseLines(t, r.Stdout).expectAll(t, want)
}

// figure checks that the hostile program's line key has the form "<n>
// <errno>", with the errno matching want, and returns n.
func figure(t *testing.T, l lines, key, want string) int {
	t.Helper()
	v := l.take(t, key)
	n, e, _ := strings.Cut(v, " ")
	count, err := strconv.Atoi(n)
	if err != nil || !regexp.MustCompile("^(?:"+want+")$").MatchString(e) {
		t.Errorf("%s: %q, want a count and %s", key, v, want)
	}
	return count
}

// TestResourceInotify: a task that makes every inotify instance and
// watch it can leaves root and a concurrent request able to make theirs.
// The kernel charges them to the user that made each user namespace up
// the chain; the sandbox's is made by its init's own host id, and its
// limits are the sandbox's share (docs/security.md).
func TestResourceInotify(t *testing.T) {
	sb := newResourceSandbox(t)
	l, _ := whileHeld(t, sb, "inotify", func() {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			t.Errorf("root's inotify_init1 while the task holds its maximum: %v", err)
		} else {
			if _, err := unix.InotifyAddWatch(fd, "/", unix.IN_ATTRIB); err != nil {
				t.Errorf("root's inotify_add_watch while the task holds its maximum: %v", err)
			}
			unix.Close(fd)
		}
		concurrent(t, sb, "inotify", map[string]string{"inotify_init1": "ok", "inotify_add_watch": "ok"})
	})
	kept, _ := strconv.Atoi(l.take(t, "kept"))
	made := kept + figure(t, l, "instances", "EMFILE")
	watches := figure(t, l, "watches", "ENOSPC|max")
	for _, lim := range initproc.UserNamespaceLimits {
		if lim.Name == "max_inotify_instances" && made > lim.Max || lim.Name == "max_inotify_watches" && watches > lim.Max {
			t.Errorf("the task made %d instances and %d watches, over its namespace's %s of %d", made, watches, lim.Name, lim.Max)
		}
	}
}

// mqOpen makes a POSIX message queue of 10 messages of 8192 bytes in the
// host's IPC namespace, as root, and removes it.
func mqOpen() error {
	name, err := unix.BytePtrFromString("svc-root-" + randomHex(8)) // the kernel's name: no slash
	if err != nil {
		return err
	}
	attr := struct{ flags, maxmsg, msgsize, curmsgs int64 }{maxmsg: 10, msgsize: 8192}
	fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)),
		uintptr(unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC), 0o600, uintptr(unsafe.Pointer(&attr)), 0, 0)
	if errno != 0 {
		return errno
	}
	unix.Close(int(fd))
	unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0)
	return nil
}

// TestResourceMessageQueues: a task that makes POSIX message queues until
// its RLIMIT_MSGQUEUE refuses one leaves root and a concurrent request
// able to make theirs: the bytes are charged to the task's user, and up
// the chain to its sandbox's init's, never to root.
func TestResourceMessageQueues(t *testing.T) {
	sb := newResourceSandbox(t)
	l, _ := whileHeld(t, sb, "mqueue", func() {
		if err := mqOpen(); err != nil {
			t.Errorf("root's mq_open while the task holds its maximum: %v", err)
		}
		concurrent(t, sb, "mqueue", map[string]string{"mq_open": "ok"})
	})
	figure(t, l, "queues", "EMFILE")
}

// TestResourceAIO: Linux AIO contexts are counted host-wide (fs.aio-nr,
// up to fs.aio-max-nr) and no limit of a sandbox bounds them, so every
// profile refuses io_setup (ENOSYS): a task makes none, and root's
// io_setup works while it tries. glibc's POSIX AIO uses threads.
func TestResourceAIO(t *testing.T) {
	sb := newResourceSandbox(t)
	l, r := whileHeld(t, sb, "aio", func() {
		var ctx uint64
		if _, _, errno := unix.Syscall(unix.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); errno != 0 {
			t.Errorf("root's io_setup(1) while the task holds its maximum: %v", errno)
		} else {
			unix.Syscall(unix.SYS_IO_DESTROY, uintptr(ctx), 0, 0)
		}
		// Refused to every request alike: none holds a context.
		concurrent(t, sb, "aio", map[string]string{"io_setup": "ENOSYS"})
	})
	if n := figure(t, l, "contexts", "ENOSYS"); n != 0 {
		t.Errorf("the task made %d AIO contexts", n)
	}
	l.take(t, "events")
	if n := r.Stats.DeniedSyscalls["io_setup"]; n != 1 {
		t.Errorf("denied_syscalls: io_setup %d times, want 1", n)
	}
}

// timerCreate makes a POSIX timer (SIGEV_NONE, which still holds a
// queued signal) as root, and deletes it.
func timerCreate() error {
	var ev [64]byte                        // struct sigevent; sigev_notify at 12
	*(*int32)(unsafe.Pointer(&ev[12])) = 1 // SIGEV_NONE
	var id int32
	if _, _, errno := unix.Syscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC,
		uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); errno != 0 {
		return errno
	}
	unix.Syscall(unix.SYS_TIMER_DELETE, uintptr(id), 0, 0)
	return nil
}

// TestResourceTimers: a task that makes POSIX timers until its
// RLIMIT_SIGPENDING refuses one leaves root and a concurrent request able
// to make theirs (each timer holds a queued signal, counted per user up
// the chain of user namespaces).
func TestResourceTimers(t *testing.T) {
	sb := newResourceSandbox(t)
	l, _ := whileHeld(t, sb, "timers", func() {
		if err := timerCreate(); err != nil {
			t.Errorf("root's timer_create while the task holds its maximum: %v", err)
		}
		concurrent(t, sb, "timers", map[string]string{"timer_create": "ok"})
	})
	figure(t, l, "timers", "EAGAIN")
}

// The /proc of a task: the files and directories that say something of
// the host as a whole (its activity, hardware, configuration, kernel
// internals and other users' state) read as nothing, each masked or
// absent; those real programs read (the CPUs, memory, load, uptime,
// kernel version, the task's own processes, mounts and network) read as
// on a host.
var (
	procMaskedFiles = []string{
		// The red team's.
		"diskstats", "vmstat", "softirqs", "cmdline", "config.gz", "partitions",
		"pressure/cpu", "pressure/io", "pressure/memory", "pressure/irq",
		// The rest of the host's activity and internals.
		"interrupts", "zoneinfo", "buddyinfo", "slabinfo", "pagetypeinfo", "vmallocinfo",
		"sched_debug", "schedstat", "timer_list", "kallsyms", "modules", "keys", "key-users",
		"sysrq-trigger", "locks", "swaps", "iomem", "ioports", "dma", "devices", "misc",
		"consoles", "crypto", "mdstat", "bootconfig", "allocinfo", "latency_stats", "kmsg",
		"kcore", "kpagecount", "kpageflags", "kpagecgroup", "mtrr", "fb",
		"sys/fs/file-nr", "sys/fs/inode-nr", "sys/fs/inode-state", "sys/fs/dentry-state",
		"sys/fs/aio-nr", "sys/kernel/pty/nr",
	}
	procMaskedDirs = []string{"pressure", "acpi", "scsi", "bus", "fs", "irq", "driver", "tty",
		"sysvipc", "dynamic_debug"}
	procKept = []string{"cpuinfo", "meminfo", "stat", "loadavg", "uptime", "version", "filesystems",
		"cgroups", "self/status", "self/mountinfo", "mounts", "net/dev", "sys/kernel/osrelease",
		"sys/kernel/pid_max"}
)

// TestResourceProcMasked: a task reads nothing host-wide through /proc,
// and what real programs read is there.
func TestResourceProcMasked(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	var args []string
	want := map[string]string{}
	for _, f := range procMaskedFiles {
		p := "/proc/" + f
		args = append(args, p)
		want[p] = "absent"
		if _, err := os.Stat(p); err == nil && !slices.Contains(procMaskedDirs, filepath.Dir(f)) {
			want[p] = "0 bytes"
		}
	}
	for _, d := range procMaskedDirs {
		p := "/proc/" + d
		args = append(args, p)
		want[p] = "absent"
		if _, err := os.Stat(p); err == nil {
			want[p] = "dir 0"
		}
	}
	for _, f := range procKept {
		p := "/proc/" + f
		args = append(args, p)
		want[p] = "[1-9][0-9]* bytes"
	}
	r := runHostile(t, sb, "procview", svc.Single(prog("procview", args...)))[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	parseLines(t, r.Stdout).expectAll(t, want)
}

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// These tests drive the real kernel: they need root and skip without it.

const (
	mib = 1 << 20
	// patience bounds every wait for the kernel; generous for the emulated
	// v2 guest, where a fork+exec takes ~80 times longer.
	patience = 2 * time.Minute
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: makes and writes cgroups (euid %d)", os.Geteuid())
	}
}

func hierarchy(t *testing.T) *Hierarchy {
	t.Helper()
	needRoot(t)
	h, err := Detect()
	if err != nil {
		t.Skipf("no usable cgroup hierarchy: %v", err)
	}
	return h
}

// uniqueName is a cgroup name unique to this test and process.
func uniqueName(t *testing.T) string {
	return fmt.Sprintf("t-%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid())
}

// service makes a service group under this process's own cgroup, destroyed
// when the test ends.
func service(t *testing.T, h *Hierarchy) *Group {
	t.Helper()
	g, err := h.Service("", uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Destroy(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return g
}

func child(t *testing.T, g *Group, name string) *Group {
	t.Helper()
	c, err := g.Child(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func setLimits(t *testing.T, g *Group, l Limits) {
	t.Helper()
	if err := g.SetLimits(l); err != nil {
		t.Fatal(err)
	}
}

// start runs script with sh in g. The shell waits on stdin until it is in
// g, so nothing of script runs outside. The process is killed and reaped
// when the test ends.
func start(t *testing.T, g *Group, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "read _; "+script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	in.Close()
	return cmd
}

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", patience, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitKilled waits for cmd and checks that SIGKILL ended it.
func waitKilled(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	err := cmd.Wait()
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok {
		t.Fatalf("wait: %v, want killed", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("wait: %v, want killed by SIGKILL", err)
	}
}

// read returns the trimmed contents of g's file name in controller c.
func read(t *testing.T, g *Group, c, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(g.dir(c), name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func exists(g *Group, c, name string) bool {
	_, err := os.Stat(filepath.Join(g.dir(c), name))
	return err == nil
}

func stats(t *testing.T, g *Group) Stats {
	t.Helper()
	s, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func val(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

// procs returns the processes in g and below, in every controller.
func procs(t *testing.T, g *Group) []int {
	t.Helper()
	var all []int
	seen := make(map[int]bool)
	for _, d := range g.uniq() {
		dirs, err := subtree(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, sd := range dirs {
			p, err := readProcs(sd)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range p {
				if !seen[x] {
					seen[x] = true
					all = append(all, x)
				}
			}
		}
	}
	return all
}

// gone checks that none of g's directories exist.
func gone(t *testing.T, g *Group) {
	t.Helper()
	for _, d := range g.dirs {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: stat: %v, want not exist", d, err)
		}
	}
}

func TestServiceAndChild(t *testing.T) {
	h := hierarchy(t)
	g := service(t, h)
	t.Logf("version %d, own %s, service %s, dirs %q", h.Version(), h.Own(), g.Path(), g.uniq())
	if want := path.Join(h.Own(), uniqueName(t)); g.Path() != want {
		t.Errorf("Path() = %q, want %q", g.Path(), want)
	}
	c := child(t, g, "req-1")
	if want := g.Path() + "/req-1"; c.Path() != want {
		t.Errorf("child Path() = %q, want %q", c.Path(), want)
	}
	for _, d := range append(g.uniq(), c.uniq()...) {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if _, err := g.Child("req-1"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Child of an existing name: %v, want ErrExist", err)
	}
	for _, bad := range []string{"", ".", "..", "a/b"} {
		if _, err := g.Child(bad); err == nil {
			t.Errorf("Child(%q) succeeded", bad)
		}
	}
	// Service reuses an existing group (the startup sweep's way in).
	again, err := h.Service("", uniqueName(t))
	if err != nil {
		t.Fatalf("Service again: %v", err)
	}
	if again.Path() != g.Path() {
		t.Errorf("Service again: %q, want %q", again.Path(), g.Path())
	}
	if h.Version() == V2 {
		for _, x := range []*Group{g, c} {
			if err := enable(x.dirs[0]); err != nil {
				t.Fatal(err)
			}
			on := read(t, x, "", "cgroup.subtree_control")
			for _, want := range v2Controllers {
				if !hasField(on, want) {
					t.Errorf("%s: subtree_control %q lacks %s", x.Path(), on, want)
				}
			}
		}
	}
}

func TestOpen(t *testing.T) {
	h := hierarchy(t)
	rel := "/" + uniqueName(t)
	if _, err := h.Open(rel, false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing group: %v, want ErrNotExist", err)
	}
	g, err := h.Open(rel, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Destroy() })
	o, err := h.Open(rel, false)
	if err != nil {
		t.Fatal(err)
	}
	if o.Path() != rel {
		t.Errorf("Path() = %q, want %q", o.Path(), rel)
	}
	if err := o.Destroy(); err != nil {
		t.Fatal(err)
	}
	gone(t, g)
	if _, err := h.Open("relative", true); err == nil {
		t.Error("Open of a relative path succeeded")
	}
}

func TestSetLimits(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "c")
	check := func(c, name, want string) {
		t.Helper()
		if got := read(t, g, c, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	memory := func(want int64) {
		t.Helper()
		w := strconv.FormatInt(want, 10)
		if h.Version() == V2 {
			check("", "memory.max", w)
			if exists(g, "", "memory.swap.max") {
				check("", "memory.swap.max", "0")
			}
			return
		}
		check("memory", "memory.limit_in_bytes", w)
		if exists(g, "memory", "memory.memsw.limit_in_bytes") {
			check("memory", "memory.memsw.limit_in_bytes", w)
		}
	}

	setLimits(t, g, Limits{MemoryMax: 32 * mib, PidsMax: 5, CPUQuota: 50000, CPUPeriod: 100000})
	memory(32 * mib)
	check("pids", "pids.max", "5")
	if h.Version() == V2 {
		check("", "cpu.max", "50000 100000")
	} else {
		check("cpu", "cpu.cfs_period_us", "100000")
		check("cpu", "cpu.cfs_quota_us", "50000")
	}

	// Raising needs memsw first on v1, lowering the limit first.
	setLimits(t, g, Limits{MemoryMax: 64 * mib})
	memory(64 * mib)
	setLimits(t, g, Limits{MemoryMax: 16 * mib})
	memory(16 * mib)
	check("pids", "pids.max", "5") // untouched by a zero field

	// Period alone: quota unlimited.
	setLimits(t, g, Limits{CPUPeriod: 20000})
	if h.Version() == V2 {
		check("", "cpu.max", "max 20000")
	} else {
		check("cpu", "cpu.cfs_period_us", "20000")
		check("cpu", "cpu.cfs_quota_us", "-1")
	}
	// Quota alone: the default period.
	setLimits(t, g, Limits{CPUQuota: 30000})
	if h.Version() == V2 {
		check("", "cpu.max", "30000 100000")
	} else {
		check("cpu", "cpu.cfs_period_us", "100000")
		check("cpu", "cpu.cfs_quota_us", "30000")
	}

	if err := g.SetLimits(Limits{PidsMax: -1}); err == nil {
		t.Error("negative PidsMax accepted")
	}
	err := g.SetLimits(Limits{CPUQuota: 10}) // below the kernel's 1ms minimum
	if err == nil {
		t.Fatal("CPUQuota 10 accepted")
	}
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "cpu.") {
		t.Errorf("err = %v, want EINVAL naming the cpu file", err)
	}
}

func TestAddProc(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "task-0")
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	expectIn(t, g, cmd.Process.Pid)
	if got := procs(t, g); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Errorf("cgroup.procs = %v, want [%d]", got, cmd.Process.Pid)
	}
	if err := g.AddProc(1 << 30); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("AddProc of no process: %v, want ESRCH", err)
	}
}

// expectIn checks that process pid is in g in every controller.
func expectIn(t *testing.T, g *Group, pid int) {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v1, v2, err := ParseProcCgroup(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range g.h.ctrls {
		got := v2
		if g.h.Version() == V1 {
			got = v1[c.name]
		}
		if got != g.rels[i] {
			t.Errorf("controller %q: process in %q, want %q", c.name, got, g.rels[i])
		}
	}
}

// TestOpenProcs: the join files a StatsReader opens move a process of one
// thread into the group in every controller, its own directories and, on
// v1, those it shares with a CPUShare's group. On v1 they are the tasks
// files, whose move takes no global lock (see Hierarchy.joinFile).
func TestOpenProcs(t *testing.T) {
	h := hierarchy(t)
	svc := service(t, h)
	readers := map[string]func() (*Group, *StatsReader, error){
		"own": func() (*Group, *StatsReader, error) {
			g := child(t, svc, "task-own")
			r, err := g.OpenStats()
			return g, r, err
		},
	}
	if h.Version() == V1 {
		readers["shared"] = func() (*Group, *StatsReader, error) {
			keep := child(t, svc, "shell")
			share, err := keep.ShareCPU(Limits{CPUQuota: 50000, CPUPeriod: 100000})
			if err != nil {
				return nil, nil, err
			}
			t.Cleanup(share.Close)
			g, err := svc.ChildSharing("task-shared", keep, "cpu", "cpuacct")
			if err != nil {
				return nil, nil, err
			}
			t.Cleanup(func() { g.Remove() })
			r, err := g.OpenStatsShared(share)
			return g, r, err
		}
	}
	for name, open := range readers {
		t.Run(name, func(t *testing.T) {
			g, r, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// Twice: a share's files outlive the copies the first
			// round closed.
			for range 2 {
				fds, err := r.OpenProcs()
				if err != nil {
					t.Fatal(err)
				}
				if len(fds) != len(g.uniq()) {
					t.Errorf("%d join files for %d directories", len(fds), len(g.uniq()))
				}
				want := map[Version]string{V1: "/tasks", V2: "/cgroup.procs"}[h.Version()]
				for _, fd := range fds {
					if f, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil || !strings.HasSuffix(f, want) {
						t.Errorf("join file %q (%v), want one ending in %s", f, err, want)
					}
				}
				cmd := exec.Command("sleep", "100")
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					cmd.Process.Kill()
					cmd.Wait()
				}()
				for _, fd := range fds {
					if _, err := unix.Write(fd, []byte(strconv.Itoa(cmd.Process.Pid))); err != nil {
						t.Errorf("write the join file: %v", err)
					}
					unix.Close(fd)
				}
				expectIn(t, g, cmd.Process.Pid)
			}
		})
	}
}

// TestHold shows that a held group's descendants are made, written, read
// and removed through its open directories: on v1, with its directories
// renamed after Hold, all of that still reaches them, and after Release a
// child is made by path again, which then fails; v2, which renames no
// cgroup, does it all in place. Release closes what Hold opened.
func TestHold(t *testing.T) {
	h := hierarchy(t)
	g := service(t, h)
	fdsBefore := openFDs(t)
	if err := g.Hold(); err != nil {
		t.Fatal(err)
	}
	suffix := ""
	if h.Version() == V1 {
		suffix = "-moved"
		for _, d := range g.uniq() {
			if err := os.Rename(d, d+suffix); err != nil {
				t.Fatal(err)
			}
		}
		// Back before the service's cleanup destroys the group.
		t.Cleanup(func() {
			for _, d := range g.uniq() {
				if err := os.Rename(d+suffix, d); err != nil {
					t.Errorf("rename back: %v", err)
				}
			}
		})
	}
	c, err := g.Child("task")
	if err != nil {
		t.Fatalf("Child of a held group: %v", err)
	}
	setLimits(t, c, Limits{MemoryMax: 64 * mib, PidsMax: 7})
	limits := []struct{ ctrl, name, want string }{{"memory", "memory.max", "67108864"}, {"pids", "pids.max", "7"}}
	if h.Version() == V1 {
		limits[0].name = "memory.limit_in_bytes"
	}
	for _, f := range limits {
		b, err := os.ReadFile(filepath.Join(g.dir(f.ctrl)+suffix, "task", f.name))
		if got := strings.TrimSpace(string(b)); err != nil || got != f.want {
			t.Errorf("%s of the child: %q, %v; want %q", f.name, got, err, f.want)
		}
	}
	r, err := c.OpenStats()
	if err != nil {
		t.Fatalf("OpenStats: %v", err)
	}
	if _, err := r.Stats(); err != nil {
		t.Errorf("Stats: %v", err)
	}
	r.Close()
	if err := c.Remove(); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, d := range g.uniq() {
		if _, err := os.Stat(filepath.Join(d+suffix, "task")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s%s/task after Remove: %v", d, suffix, err)
		}
	}
	g.Release()
	if n := openFDs(t); n != fdsBefore {
		t.Errorf("%d fds open after Release, %d before Hold", n, fdsBefore)
	}
	if h.Version() == V1 {
		if _, err := g.Child("after"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Child by a path that is gone, after Release: %v, want ErrNotExist", err)
		}
	}
}

// openFDs counts this process's open fds.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestOpenFD(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "task-0")
	f, err := g.OpenFD()
	if h.Version() == V1 {
		if !errors.Is(err, ErrNotSupported) {
			t.Fatalf("OpenFD on v1: %v, want ErrNotSupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if got := procs(t, g); len(got) != 1 || got[0] != cmd.Process.Pid {
		t.Errorf("cgroup.procs = %v, want [%d]", got, cmd.Process.Pid)
	}
}

// TestStats checks that every value the kernel's files provide is reported
// and no other.
func TestStats(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "task-0")
	setLimits(t, g, Limits{MemoryMax: 64 * mib, PidsMax: 10})
	cmd := start(t, g, "exec true")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s := stats(t, g)
	t.Logf("%+v", statsString(s))
	v2 := h.Version() == V2
	for _, f := range []struct {
		name    string
		got     *int64
		c, file string
	}{
		{"CPUUsageUsec", s.CPUUsageUsec, pick(v2, "", "cpuacct"), pick(v2, "cpu.stat", "cpuacct.usage")},
		{"CPUUserUsec", s.CPUUserUsec, pick(v2, "", "cpuacct"), pick(v2, "cpu.stat", "cpuacct.usage_user")},
		{"CPUSystemUsec", s.CPUSystemUsec, pick(v2, "", "cpuacct"), pick(v2, "cpu.stat", "cpuacct.usage_sys")},
		{"CPUNrThrottled", s.CPUNrThrottled, "cpu", "cpu.stat"},
		{"CPUThrottledUsec", s.CPUThrottledUsec, "cpu", "cpu.stat"},
		{"MemoryPeakBytes", s.MemoryPeakBytes, "memory", pick(v2, "memory.peak", "memory.max_usage_in_bytes")},
		{"PidsPeak", s.PidsPeak, "pids", "pids.peak"},
		{"OOMKills", s.OOMKills, "memory", pick(v2, "memory.events", "memory.oom_control")},
		{"PidsLimitHits", s.PidsLimitHits, "pids", "pids.events"},
	} {
		if want := exists(g, f.c, f.file); (f.got != nil) != want {
			t.Errorf("%s = %s; %s exists: %v", f.name, val(f.got), f.file, want)
		}
	}
	// The exec alone takes hundreds of microseconds, less than a tick:
	// the total must be exact, not sampled.
	if u := s.CPUUsageUsec; u != nil && *u <= 0 {
		t.Errorf("CPUUsageUsec = %d after running a process", *u)
	}
	// v2 divides each of the three by 1000 on its own: allow 1us.
	if u, us, sy := s.CPUUsageUsec, s.CPUUserUsec, s.CPUSystemUsec; u != nil && us != nil && sy != nil {
		if d := *u - (*us + *sy); d < 0 || d > 1 {
			t.Errorf("CPUUserUsec %d + CPUSystemUsec %d != CPUUsageUsec %d", *us, *sy, *u)
		}
	}
	if s.MemoryPeakBytes != nil && *s.MemoryPeakBytes <= 0 {
		t.Errorf("MemoryPeakBytes = %d after running a process", *s.MemoryPeakBytes)
	}
	if s.OOMKills != nil && *s.OOMKills != 0 || s.OwnLimitOOM {
		t.Errorf("OOM reported without one: %+v", statsString(s))
	}
	if s.PidsLimitHits != nil && *s.PidsLimitHits != 0 {
		t.Errorf("PidsLimitHits = %d", *s.PidsLimitHits)
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Stats(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stats of a removed group: %v, want ErrNotExist", err)
	}
}

// TestStatsReader: files opened before the group's process ran read what
// it did, as often as they are read, and the same as Stats.
func TestStatsReader(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "task-0")
	setLimits(t, g, Limits{MemoryMax: 64 * mib, PidsMax: 10})
	r, err := g.OpenStats()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before, err := r.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if u := before.CPUUsageUsec; u == nil || *u != 0 {
		t.Fatalf("CPUUsageUsec of a group that ran nothing = %s, want 0", val(u))
	}
	// Several processes at once, so that pids.peak passes 1.
	cmd := start(t, g, "true & true & true & wait")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, err := r.Stats()
		if err != nil {
			t.Fatal(err)
		}
		want := stats(t, g)
		if statsString(got) != statsString(want) {
			t.Errorf("read %d through the open files:\n%s\nStats:\n%s", i, statsString(got), statsString(want))
		}
		if u := got.CPUUsageUsec; u == nil || *u <= 0 {
			t.Errorf("read %d: CPUUsageUsec = %s after running processes", i, val(u))
		}
		if p := got.PidsPeak; p != nil && *p < 2 {
			t.Errorf("read %d: PidsPeak = %d after four processes", i, *p)
		}
	}
}

// TestChildSharing: task groups that share a v1 group's cpu and cpuacct
// directories make and remove only their own, and each task's CPU
// accounting starts afresh through the share: a task after one that was
// throttled reads zero before it runs and only its own time after.
func TestChildSharing(t *testing.T) {
	h := hierarchy(t)
	svc := service(t, h)
	keep := child(t, svc, "shell")
	if h.Version() == V2 {
		if _, err := svc.ChildSharing("task", keep, "cpu"); err == nil {
			t.Fatal("ChildSharing on v2: no error")
		}
		if _, err := keep.ShareCPU(Limits{CPUQuota: 10000}); err == nil {
			t.Fatal("ShareCPU on v2: no error")
		}
		t.Skip("v2 has one directory per group: nothing to share (refused, as checked)")
	}
	limits := Limits{MemoryMax: 64 * mib, PidsMax: 10, CPUQuota: 10000, CPUPeriod: 100000}
	share, err := keep.ShareCPU(limits)
	if err != nil {
		t.Fatal(err)
	}
	defer share.Close()
	limits.CPUQuota, limits.CPUPeriod = 0, 0 // the share's
	task := func(name string) (*Group, *StatsReader) {
		t.Helper()
		g, err := svc.ChildSharing(name, keep, "cpu", "cpuacct")
		if err != nil {
			t.Fatal(err)
		}
		setLimits(t, g, limits)
		if _, err := g.OpenStats(); err == nil {
			t.Fatal("OpenStats of a group sharing its cpu directories: no error")
		}
		r, err := g.OpenStatsShared(share)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return g, r
	}
	read := func(r *StatsReader) Stats {
		t.Helper()
		s, err := r.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// 10% of a CPU for a loop of tens of milliseconds: throttled.
	g1, r1 := task("task-1")
	if g1.dir("cpu") != keep.dir("cpu") || g1.dir("memory") == keep.dir("memory") {
		t.Fatalf("task dirs %v, shell dirs %v: want cpu shared, memory its own", g1.dirs, keep.dirs)
	}
	cmd := start(t, g1, "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s1 := read(r1)
	t.Logf("task 1: %s", statsString(s1))
	if n := s1.CPUNrThrottled; n == nil || *n == 0 {
		t.Fatalf("task 1 not throttled at 10%% of a CPU: %s", statsString(s1))
	}
	r1.Close()
	if err := g1.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctrl string
		want bool
	}{{"memory", false}, {"pids", false}, {"cpu", true}, {"cpuacct", true}} {
		if _, err := os.Stat(g1.dir(c.ctrl)); (err == nil) != c.want {
			t.Errorf("after Remove, %s exists: %v, want %v", g1.dir(c.ctrl), err == nil, c.want)
		}
	}

	g2, r2 := task("task-2")
	zero := read(r2)
	for name, v := range map[string]*int64{
		"CPUUsageUsec": zero.CPUUsageUsec, "CPUUserUsec": zero.CPUUserUsec, "CPUSystemUsec": zero.CPUSystemUsec,
		"CPUNrThrottled": zero.CPUNrThrottled, "CPUThrottledUsec": zero.CPUThrottledUsec,
	} {
		if v == nil || *v != 0 {
			t.Errorf("task 2 before it runs: %s = %s, want 0", name, val(v))
		}
	}
	cmd = start(t, g2, "exec true")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s2 := read(r2)
	t.Logf("task 2: %s", statsString(s2))
	if u, u1 := s2.CPUUsageUsec, s1.CPUUsageUsec; u == nil || *u <= 0 || *u >= *u1 {
		t.Errorf("task 2 (true) CPUUsageUsec %s, task 1 (a loop) %s: want task 2's own, above 0", val(u), val(u1))
	}
	if n := s2.CPUNrThrottled; n == nil || *n != 0 {
		t.Errorf("task 2 (true) CPUNrThrottled %s: task 1's throttling carried over", val(n))
	}
	// The share's files outlive the readers that borrowed them.
	r2.Close()
	if _, err := share.start(); err != nil {
		t.Errorf("the share after its readers closed: %v", err)
	}
	if q, err := readInt(keep.dir("cpu"), "cpu.cfs_quota_us"); err != nil || q == nil || *q != 10000 {
		t.Errorf("cpu.cfs_quota_us of the share: %s, %v; want 10000", val(q), err)
	}
	share.Close()
	if err := g2.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := keep.Remove(); err != nil {
		t.Fatal(err)
	}
}

func TestSplitCPU(t *testing.T) {
	for _, c := range []struct{ total, user, sys, wantUser, wantSys int64 }{
		{1628, 0, 0, 1628, 0}, // shorter than a tick: all user, as on v2
		{1000, 4, 0, 1000, 0},
		{1000, 0, 4, 0, 1000},
		{1000, 3, 1, 750, 250},
		{1000, 1, 2, 334, 666},                        // the system share rounds down
		{1 << 62, 1 << 40, 1 << 40, 1 << 61, 1 << 61}, // no overflow
	} {
		u, s := splitCPU(c.total, c.user, c.sys)
		if u != c.wantUser || s != c.wantSys {
			t.Errorf("splitCPU(%d, %d, %d) = %d, %d; want %d, %d", c.total, c.user, c.sys, u, s, c.wantUser, c.wantSys)
		}
	}
}

func pick(v2 bool, a, b string) string {
	if v2 {
		return a
	}
	return b
}

func statsString(s Stats) string {
	return fmt.Sprintf("usage=%s user=%s sys=%s nr_throttled=%s throttled=%s peak=%s pids_peak=%s oom_kills=%s own_oom=%v pids_hits=%s",
		val(s.CPUUsageUsec), val(s.CPUUserUsec), val(s.CPUSystemUsec), val(s.CPUNrThrottled),
		val(s.CPUThrottledUsec), val(s.MemoryPeakBytes), val(s.PidsPeak), val(s.OOMKills),
		s.OwnLimitOOM, val(s.PidsLimitHits))
}

func TestCPUUsage(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "busy")
	// 20ms per 100ms: slow enough to be throttled, fast enough to measure.
	setLimits(t, g, Limits{CPUQuota: 20000, CPUPeriod: 100000})
	start(t, g, "while :; do :; done")
	var u time.Duration
	waitFor(t, "200ms of CPU time", func() bool {
		var err error
		if u, err = g.CPUUsage(); err != nil {
			t.Fatal(err)
		}
		return u >= 200*time.Millisecond
	})
	waitFor(t, "throttling", func() bool {
		s := stats(t, g)
		return s.CPUNrThrottled != nil && *s.CPUNrThrottled > 0
	})
	s := stats(t, g)
	t.Log(statsString(s))
	if *s.CPUUsageUsec < u.Microseconds() {
		t.Errorf("CPUUsageUsec %d < CPUUsage %v seen before", *s.CPUUsageUsec, u)
	}
	if *s.CPUUserUsec+*s.CPUSystemUsec == 0 {
		t.Error("no user or system time")
	}
	if *s.CPUThrottledUsec <= 0 {
		t.Errorf("CPUThrottledUsec = %d", *s.CPUThrottledUsec)
	}
}

// hog allocates and touches 200MiB.
const hog = "exec dd if=/dev/zero of=/dev/null bs=200M count=1"

func TestOOMOwnLimit(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "task-0")
	setLimits(t, g, Limits{MemoryMax: 32 * mib})
	waitKilled(t, start(t, g, hog))
	s := stats(t, g)
	t.Log(statsString(s))
	if s.OOMKills == nil || *s.OOMKills < 1 {
		t.Errorf("OOMKills = %s, want >= 1", val(s.OOMKills))
	}
	if !s.OwnLimitOOM {
		t.Error("OwnLimitOOM = false, want true")
	}
	if s.MemoryPeakBytes != nil && *s.MemoryPeakBytes > 32*mib {
		t.Errorf("MemoryPeakBytes = %d above the limit", *s.MemoryPeakBytes)
	}
}

func TestOOMAncestorLimit(t *testing.T) {
	h := hierarchy(t)
	p := child(t, service(t, h), "req-1")
	setLimits(t, p, Limits{MemoryMax: 32 * mib})
	c := child(t, p, "task-0")
	setLimits(t, c, Limits{MemoryMax: 1 << 30})
	waitKilled(t, start(t, c, hog))
	s := stats(t, c)
	t.Log("child: ", statsString(s))
	if s.OOMKills == nil || *s.OOMKills < 1 {
		t.Errorf("child OOMKills = %s, want >= 1", val(s.OOMKills))
	}
	if s.OwnLimitOOM {
		t.Error("child OwnLimitOOM = true, want false: the parent's limit was hit")
	}
	ps := stats(t, p)
	t.Log("parent: ", statsString(ps))
	if !ps.OwnLimitOOM {
		t.Error("parent OwnLimitOOM = false, want true")
	}
	if ps.OOMKills == nil || *ps.OOMKills < 1 {
		t.Errorf("parent OOMKills = %s, want >= 1 (subtree)", val(ps.OOMKills))
	}
}

func TestPidsLimit(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "task-0")
	setLimits(t, g, Limits{PidsMax: 5})
	cmd := start(t, g, "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 100 & done; wait")
	waitFor(t, "a refused fork", func() bool {
		s := stats(t, g)
		return s.PidsLimitHits != nil && *s.PidsLimitHits > 0
	})
	s := stats(t, g)
	t.Log(statsString(s))
	if s.PidsPeak != nil && (*s.PidsPeak < 2 || *s.PidsPeak > 5) {
		t.Errorf("PidsPeak = %d, want 2..5", *s.PidsPeak)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an empty group", func() bool { return len(procs(t, g)) == 0 })
	cmd.Wait() // the shell may have exited on its own after a failed fork
}

func TestKill(t *testing.T) {
	h := hierarchy(t)
	g := child(t, service(t, h), "req-1")
	var cmds []*exec.Cmd
	for i := range 3 {
		c := child(t, g, fmt.Sprintf("task-%d", i))
		// A shell with children and a grandchild that leaves the shell.
		cmds = append(cmds, start(t, c, "sleep 100 & (sleep 100 &); sleep 100"))
	}
	waitFor(t, "9 processes", func() bool { return len(procs(t, g)) >= 9 })
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		waitKilled(t, cmd)
	}
	waitFor(t, "an empty group", func() bool { return len(procs(t, g)) == 0 })
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	gone(t, g)
	// Both are fine on a group that is gone.
	if err := g.Kill(); err != nil {
		t.Errorf("Kill of a removed group: %v", err)
	}
	if err := g.Remove(); err != nil {
		t.Errorf("Remove of a removed group: %v", err)
	}
}

func TestKillLoop(t *testing.T) {
	h := hierarchy(t)
	// Hide cgroup.kill from the loop by clearing the version: on v2 the
	// loop then runs on the one directory as if it were v1's memory one.
	g := child(t, service(t, h), "req-1")
	cmd := start(t, g, "sleep 100 & sleep 100")
	waitFor(t, "2 processes", func() bool { return len(procs(t, g)) >= 2 })
	loop := &Group{h: &Hierarchy{ver: V1, ctrls: h.ctrls}, rels: g.rels, dirs: g.dirs}
	if err := loop.Kill(); err != nil {
		t.Fatal(err)
	}
	waitKilled(t, cmd)
	waitFor(t, "an empty group", func() bool { return len(procs(t, g)) == 0 })
}

func TestDestroy(t *testing.T) {
	h := hierarchy(t)
	svc := service(t, h)
	g := child(t, svc, "req-1")
	// Processes live in leaves only (v2's no-internal-process rule).
	a := child(t, g, "task-0")
	b := child(t, child(t, g, "task-1"), "inner")
	cmds := []*exec.Cmd{start(t, a, "exec sleep 100"), start(t, b, "sleep 100 & exec sleep 100")}
	if err := svc.Destroy(); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		waitKilled(t, cmd)
	}
	for _, x := range []*Group{a, b, g, svc} {
		gone(t, x)
	}
}

func TestRefuseSelf(t *testing.T) {
	h := hierarchy(t)
	// This process's memory cgroup (v1) or cgroup (v2), by its own path.
	v1, v2, err := readSelf()
	if err != nil {
		t.Fatal(err)
	}
	own := v2
	if h.Version() == V1 {
		own = v1["memory"]
	}
	g := &Group{h: h}
	for _, c := range h.ctrls {
		g.rels = append(g.rels, own)
		g.dirs = append(g.dirs, c.dir(own))
	}
	// Only refuseSelf: a bug here must not kill the test's neighbours.
	if err := g.refuseSelf(); !errors.Is(err, errSelf) {
		t.Errorf("refuseSelf on own cgroup %s: %v, want errSelf", own, err)
	}
	if err := service(t, h).refuseSelf(); err != nil {
		t.Errorf("refuseSelf on a service group: %v", err)
	}
}

func readSelf() (map[string]string, string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	return ParseProcCgroup(f)
}

// TestServiceSupervisor checks the v2 move into <own>/supervisor by giving
// the test process a fresh non-root cgroup to start from: seen from the
// host's cgroup namespace, and as from a container's own, where that
// cgroup is mounted at the mount point and reads as "/".
func TestServiceSupervisor(t *testing.T) {
	h := hierarchy(t)
	if h.Version() != V2 {
		t.Skipf("the supervisor leaf is v2 only (have v%d)", h.Version())
	}
	t.Run("host", func(t *testing.T) { testServiceSupervisor(t, h, false) })
	t.Run("namespace", func(t *testing.T) { testServiceSupervisor(t, h, true) })
}

func testServiceSupervisor(t *testing.T, h *Hierarchy, ns bool) {
	_, was, err := readSelf()
	if err != nil {
		t.Fatal(err)
	}
	c := h.ctrls[0]
	own := path.Join(was, uniqueName(t))
	if was != "/" {
		// Processes may not live in was's children while was has
		// controllers on, and this one lives in was: use a sibling.
		own = path.Join(path.Dir(was), uniqueName(t))
	}
	if err := os.Mkdir(c.dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	t.Cleanup(func() {
		if err := writeFile(pathPlace(c.dir(was)), "cgroup.procs", self); err != nil {
			t.Errorf("cleanup: move back: %v", err)
		}
		g := &Group{h: h, rels: []string{own}, dirs: []string{c.dir(own)}}
		if err := g.Remove(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := writeFile(pathPlace(c.dir(own)), "cgroup.procs", self); err != nil {
		t.Fatal(err)
	}
	// A sibling process in own, as a wrapper shell would be.
	sib := exec.Command("sleep", "100")
	if err := sib.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sib.Process.Kill()
		sib.Wait()
	})

	fake := &Hierarchy{ver: V2, ctrls: []ctrl{{mnt: c.mnt, root: c.root, own: own}}}
	if ns {
		fake.ctrls[0] = ctrl{mnt: c.dir(own), root: "/", own: "/"}
	}
	g, err := fake.Service("", "svc")
	if err != nil {
		t.Fatal(err)
	}
	_, now, err := readSelf()
	if err != nil {
		t.Fatal(err)
	}
	if want := own + "/supervisor"; now != want {
		t.Errorf("this process in %q, want %q", now, want)
	}
	pids, err := readProcs(c.dir(own + "/supervisor"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 2 {
		t.Errorf("supervisor holds %v, want this process and the sibling", pids)
	}
	parent := &Group{h: fake, rels: []string{fake.ctrls[0].own}, dirs: []string{c.dir(own)}}
	for _, x := range []*Group{parent, g} {
		on := read(t, x, "", "cgroup.subtree_control")
		for _, want := range v2Controllers {
			if !hasField(on, want) {
				t.Errorf("%s: subtree_control %q lacks %s", x.Path(), on, want)
			}
		}
	}
	task := child(t, g, "task-0")
	setLimits(t, task, Limits{MemoryMax: 32 * mib, PidsMax: 5, CPUQuota: 50000})
	if err := g.Destroy(); err != nil {
		t.Fatal(err)
	}
	// Put the sibling back so that own can go.
	if err := writeFile(pathPlace(c.dir(was)), "cgroup.procs", strconv.Itoa(sib.Process.Pid)); err != nil {
		t.Fatal(err)
	}
}

// TestServiceNoControllers checks the error of Service on v2 in a cgroup
// to which the memory, pids and cpu controllers are not delegated, as in
// a container whose runtime delegates none: seen from the container's own
// cgroup namespace, a cgroup whose parent enables no controller.
func TestServiceNoControllers(t *testing.T) {
	h := hierarchy(t)
	if h.Version() != V2 {
		t.Skipf("controllers are delegated per cgroup on v2 only (have v%d)", h.Version())
	}
	_, was, err := readSelf()
	if err != nil {
		t.Fatal(err)
	}
	c := h.ctrls[0]
	// A sibling of this process's cgroup, which enables nothing for its
	// children, and in it the "container's" cgroup.
	parent := path.Join(path.Dir(was), uniqueName(t))
	if was == "/" {
		parent = "/" + uniqueName(t)
	}
	ctr := path.Join(parent, "ctr")
	for _, d := range []string{parent, ctr} {
		if err := os.Mkdir(c.dir(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range []string{ctr + "/svc", ctr, parent} {
			if err := os.Remove(c.dir(d)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	fake := &Hierarchy{ver: V2, ctrls: []ctrl{{mnt: c.dir(ctr), root: "/", own: "/"}}}
	_, err = fake.Service("", "svc")
	if err == nil || !strings.Contains(err.Error(), "controller memory not available in "+c.dir(ctr)) {
		t.Fatalf("Service in a cgroup with no controllers: %v, want that memory is not available", err)
	}
}

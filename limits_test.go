package svc_test

// Limits, outcomes and cleanup on the real kernel: every test runs real
// programs (C compiled by gcc inside the sandbox, or sh) against small
// limits, checks the outcome, exit code, signal, truncation and stats of
// API.md, and ends with nothing left on the host.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/internal/runner"
	"github.com/svc-sandbox/svc/svctest"
)

// --- helpers ---------------------------------------------------------------

// slow is the wall (and CPU) time limit of tests that are not about it: a
// task that should end at once by another limit has plenty of time for it
// even in the emulated guest of the v2 lane (TestCgroupV2Guest).
const slow = 60 * time.Second

// builds caches the binaries buildC made, by flags and source.
var builds struct {
	sync.Mutex
	bins map[string]string
}

// buildC compiles src with real gcc (and flags) in a sandbox of its own
// with generous limits, and returns the binary. The limits under test
// would bind the compiler too (1 s of CPU, 10% of a CPU, 32 processes),
// and in an emulated guest gcc alone takes seconds. Binaries are cached
// for the life of the test binary.
func buildC(t testing.TB, src string, flags ...string) string {
	t.Helper()
	requireRoot(t)
	key := strings.Join(flags, " ") + "\x00" + src
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[key]; ok {
		return bin
	}
	dir, err := os.MkdirTemp("", "svc-build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	long := 5 * time.Minute
	sb, err := svc.New(svc.Config{StateDir: dir, UIDBase: svctest.UIDBase(), Limits: svc.Limits{WallTimeout: long, CPUTimeLimit: long, OverallTimeout: long}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer sb.Close(context.Background())
	r := one(t, sb, svc.Task{
		Cmd:   "sh",
		Args:  []string{"-c", "gcc -Wall " + strings.Join(flags, " ") + " -o prog prog.c && base64 -w0 prog"},
		Files: map[string]svc.File{"prog.c": {Content: src}},
	})
	if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 || r.StdoutTruncated {
		t.Fatalf("compile: %s exit %d\n%s", r.Outcome, r.ExitCode, r.Stderr)
	}
	bin, err := base64.StdEncoding.DecodeString(r.Stdout)
	if err != nil {
		t.Fatalf("compile: binary: %v", err)
	}
	if builds.bins == nil {
		builds.bins = make(map[string]string)
	}
	builds.bins[key] = string(bin)
	return string(bin)
}

// cTask is a task running binary bin (from buildC) as ./prog with args.
// Placed files are not executable: the shell makes it so, then becomes
// the program. These tests are about limits, not the system-call policy,
// and several programs fork, so they run under compile_v2 (native_v2
// kills fork).
func cTask(bin string, args ...string) svc.Task {
	return svc.Task{
		Cmd:            "sh",
		Args:           append([]string{"-c", `chmod +x prog && exec ./prog "$@"`, "prog"}, args...),
		Files:          map[string]svc.File{"prog": {Content: bin}},
		SandboxProfile: svc.ProfileCompileV2,
	}
}

// expectSignal checks that r has outcome o and was ended by signal sig
// (exit code 128+sig).
func expectSignal(t testing.TB, r svc.Result, o svc.Outcome, sig syscall.Signal) {
	t.Helper()
	expect(t, r, o, 128+int(sig))
	if r.Signal != int(sig) {
		t.Fatalf("signal %d, want %d (%s)", r.Signal, sig, o)
	}
}

// statVal returns *p, or fails the test when the kernel gave no value.
func statVal(t testing.TB, name string, p *int64) int64 {
	t.Helper()
	if p == nil {
		t.Fatalf("stats: %s is nil", name)
	}
	return *p
}

// pollUntil polls cond until it holds or d passes (then fails the test).
func pollUntil(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// timeRun runs f and returns how long it took.
func timeRun(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// serviceCgroupName is the name the engine gives the service cgroup of a
// state directory (host_linux.go: "svc-" and 12 hex digits of its SHA-256).
func serviceCgroupName(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return "svc-" + hex.EncodeToString(sum[:6])
}

// v1Controllers are the v1 controllers the engine puts every task in.
var v1Controllers = []string{"memory", "pids", "cpu", "cpuacct"}

// cgroupMounts returns, per v1 controller of v1Controllers, its mount
// point and the hierarchy path mounted there (mountinfo's root).
func cgroupMounts(t testing.TB) map[string][2]string {
	t.Helper()
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][2]string)
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || g[0] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(g[2], ",") {
			for _, c := range v1Controllers {
				if o == c {
					if _, seen := out[c]; !seen {
						out[c] = [2]string{f[4], f[3]}
					}
				}
			}
		}
	}
	return out
}

// ownCgroups parses /proc/self/cgroup: v1 controller -> path, "" -> the
// v2 path.
func ownCgroups(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			out[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out
}

// serviceCgroups returns the directories of the service cgroup of a
// Sandbox with cfg (effective config): on v1 one per controller of
// v1Controllers (under CgroupParent or this process's own cgroup of that
// controller, as the memory line of /proc/self/cgroup says for memory),
// on v2 the one that exists. Missing v1 directories are returned too, so
// that callers can report them.
func serviceCgroups(t testing.TB, cfg svc.Config) []string {
	t.Helper()
	name := serviceCgroupName(cfg.StateDir)
	own := ownCgroups(t)
	if isCgroup2("/sys/fs/cgroup") {
		// The engine makes it under its own cgroup as found at New; a first
		// New on v2 then moves this process into <own>/supervisor.
		bases := []string{cfg.CgroupParent}
		if cfg.CgroupParent == "" {
			bases = []string{own[""], path.Dir(own[""])}
		}
		for _, b := range bases {
			d := filepath.Join("/sys/fs/cgroup", b, name)
			if _, err := os.Stat(d); err == nil {
				return []string{d}
			}
		}
		return nil
	}
	mounts := cgroupMounts(t)
	var dirs []string
	for _, c := range v1Controllers {
		m, ok := mounts[c]
		if !ok {
			t.Fatalf("cgroup v1 controller %s is not mounted", c)
		}
		base := own[c]
		if cfg.CgroupParent != "" {
			base = cfg.CgroupParent
		}
		if m[1] != "/" {
			base = strings.TrimPrefix(base, m[1])
		}
		d := filepath.Join(m[0], base, name)
		if !containsStr(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// cgroupChildren returns the subdirectories (child cgroups) of the
// service cgroup directories of cfg; a missing directory is an error.
func cgroupChildren(t testing.TB, cfg svc.Config) []string {
	t.Helper()
	dirs := serviceCgroups(t, cfg)
	if len(dirs) == 0 {
		t.Errorf("service cgroup %s not found", serviceCgroupName(cfg.StateDir))
	}
	var out []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Errorf("service cgroup: %v", err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// assertNoCgroups checks that sb's service cgroup exists and holds no
// request or task cgroups.
func assertNoCgroups(t testing.TB, sb *svc.Sandbox) {
	t.Helper()
	defer svc.QuiesceForTest(sb)()
	for _, c := range cgroupChildren(t, sb.Config()) {
		t.Errorf("cgroup left: %s", c)
	}
}

// sleepers lists the host processes running `sleep 1000` as a sandbox
// identity of cfg (as sandboxProcs prints them).
func sleepers(t testing.TB, cfg svc.Config) []string {
	t.Helper()
	var out []string
	for _, p := range sandboxProcs(t, cfg.UIDBase, cfg.Limits.MaxConcurrency) {
		if _, cmd, _ := strings.Cut(p, " "); cmd == "sleep 1000 " {
			out = append(out, p)
		}
	}
	return out
}

// procExit tells whether the process of a sandboxProcs line
// ("/proc/<pid> <cmdline>") is exiting (a zombie, or PF_EXITING: on its
// way out, its memory and cgroups already released) and who its parent is.
// A process that is gone is exiting with parent 0.
func procExit(line string) (exiting bool, ppid int) {
	d, _, _ := strings.Cut(line, " ")
	b, err := os.ReadFile(filepath.Join(d, "stat"))
	if err != nil {
		return true, 0
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags ...
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 7 {
		return true, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	const pfExiting = 0x4
	return f[0] == "Z" || f[0] == "X" || flags&pfExiting != 0, ppid
}

// --- C programs ------------------------------------------------------------

// allocSrc mallocs argv[1] MiB and touches every page.
const allocSrc = `#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	size_t n = (size_t)atol(argv[1]) << 20;
	volatile char *p = malloc(n);
	if (!p)
		return 2;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	puts("survived");
	return 0;
}
`

// forkBombSrc forks copies of itself until fork fails, then exits 1. With
// an argument only the first process forks, children that wait, and it
// exits 0 once fork fails.
const forkBombSrc = `#include <unistd.h>
int main(int argc, char **argv)
{
	for (;;) {
		pid_t p = fork();
		if (p < 0)
			return argc > 1 ? 0 : 1;
		if (p == 0 && argc > 1) {
			pause();
			_exit(0);
		}
	}
}
`

// spinSrc spins; with argv[1] = n it forks n spinning children and waits.
const spinSrc = `#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void spin(void)
{
	for (volatile unsigned long i = 0;; i++)
		;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	if (n == 0)
		spin();
	for (int i = 0; i < n; i++)
		if (fork() == 0)
			spin();
	while (wait(NULL) > 0)
		;
	return 0;
}
`

// burnSrc uses 0.2 s of CPU time and exits.
const burnSrc = `#include <time.h>
int main(void)
{
	struct timespec ts;
	do
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	while (ts.tv_sec * 1000000000L + ts.tv_nsec < 200000000L);
	return 0;
}
`

const abortSrc = `#include <stdlib.h>
int main(void)
{
	abort();
}
`

// recurseSrc recurses argv[1] frames of about 1 KB (forever for 0) and
// prints the frame count plus one. Compiled -O0; the volatile buffer is
// written in every frame, so every frame touches its stack.
const recurseSrc = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long depth(long n, long max)
{
	volatile char buf[1000];
	memset((char *)buf, 1, sizeof buf);
	if (max > 0 && n >= max)
		return buf[0];
	return depth(n + 1, max) + buf[n % 1000];
}
int main(int argc, char **argv)
{
	printf("%ld\n", depth(0, atol(argv[1])));
	return 0;
}
`

// filesSrc opens /dev/null until open fails, then writes one byte just
// below and at offset argv[1] of a file in /tmp with SIGXFSZ ignored.
const filesSrc = `#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *res(ssize_t r)
{
	if (r >= 0)
		return "ok";
	return errno == EMFILE ? "EMFILE" : errno == EFBIG ? "EFBIG" : strerror(errno);
}
int main(int argc, char **argv)
{
	long limit = atol(argv[1]);
	int n = 0, fd;
	while ((fd = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	printf("open %d %s\n", n, res(fd));
	for (fd = 3; fd < 3 + n; fd++)
		close(fd);
	signal(SIGXFSZ, SIG_IGN);
	fd = open("/tmp/big", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		printf("open /tmp/big: %s\n", strerror(errno));
		return 1;
	}
	printf("below %s\n", res(pwrite(fd, "x", 1, limit - 1)));
	printf("at %s\n", res(pwrite(fd, "x", 1, limit)));
	return 0;
}
`

// orphansSrc makes ten orphans (a child forks a grandchild and exits at
// once; the grandchild exits a little later, reparented to the init),
// then polls its PID namespace's /proc for up to 5 s until no process but
// the init and itself is left, and says whether zombies stayed.
const orphansSrc = `#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void)
{
	for (int i = 0; i < 10; i++) {
		pid_t c = fork();
		if (c < 0)
			return 2;
		if (c == 0) {
			if (fork() == 0) {
				usleep(20000);
				_exit(0);
			}
			_exit(0);
		}
		waitpid(c, NULL, 0);
	}
	int others = 0, zombies = 0;
	for (int round = 0; round < 500; round++) {
		others = zombies = 0;
		DIR *d = opendir("/proc");
		if (!d)
			return 3;
		struct dirent *e;
		while ((e = readdir(d))) {
			int pid = atoi(e->d_name);
			if (pid <= 1 || pid == getpid())
				continue;
			others++;
			char path[64], buf[512];
			snprintf(path, sizeof path, "/proc/%d/stat", pid);
			FILE *f = fopen(path, "r");
			if (!f)
				continue;
			size_t k = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[k] = 0;
			char *p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == 'Z')
				zombies++;
		}
		closedir(d);
		if (others == 0) {
			puts("none left");
			return 0;
		}
		usleep(10000);
	}
	printf("left: %d processes, %d zombies\n", others, zombies);
	return 1;
}
`

// --- memory ------------------------------------------------------------------

// expectOOM checks that r is the OOM killer's end of an allocation (allocSrc)
// under a memory limit of limit: killed before it printed, counted, its
// peak near the limit.
func expectOOM(t *testing.T, r svc.Result, limit int64) {
	t.Helper()
	expectSignal(t, r, svc.OutcomeOutOfMemory, syscall.SIGKILL)
	if r.Stdout != "" {
		t.Errorf("stdout %q: the allocation survived", r.Stdout)
	}
	if n := statVal(t, "oom_kill_count", r.Stats.OOMKillCount); n < 1 {
		t.Errorf("oom_kill_count %d, want >= 1", n)
	}
	if p := statVal(t, "memory_peak_bytes", r.Stats.MemoryPeakBytes); p < limit*7/8 || p > limit+svc.MiB {
		t.Errorf("memory_peak_bytes %d, want near the limit %d", p, limit)
	}
}

func TestLimitOwnOOM(t *testing.T) {
	const limit = 64 * svc.MiB
	bin := buildC(t, allocSrc, "-O1")
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{MemoryMax: limit, WallTimeout: slow, CPUTimeLimit: slow}})
	expectOOM(t, one(t, sb, cTask(bin, "512")), limit)
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// makeAncestorCgroup makes a cgroup /<name> with a memory limit in every
// controller the engine uses and removes it at cleanup. Register it before
// the Sandbox, so that the Sandbox is closed first (cleanups run LIFO).
func makeAncestorCgroup(t *testing.T, limit int64) string {
	t.Helper()
	requireRoot(t)
	name := fmt.Sprintf("svc-limits-test-%d", os.Getpid())
	write := func(dir, file, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			t.Fatalf("cgroup: %v", err)
		}
	}
	var dirs []string
	t.Cleanup(func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				t.Errorf("remove test cgroup: %v", err)
			}
		}
	})
	lim := fmt.Sprint(limit)
	if isCgroup2("/sys/fs/cgroup") {
		root := "/sys/fs/cgroup"
		on, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"memory", "pids", "cpu"} {
			if !containsStr(strings.Fields(string(on)), c) {
				write(root, "cgroup.subtree_control", "+"+c)
			}
		}
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
		write(d, "memory.max", lim)
		if _, err := os.Stat(filepath.Join(d, "memory.swap.max")); err == nil {
			write(d, "memory.swap.max", "0")
		}
		return "/" + name
	}
	mounts := cgroupMounts(t)
	for _, c := range v1Controllers {
		m, ok := mounts[c]
		if !ok {
			t.Fatalf("cgroup v1 controller %s is not mounted", c)
		}
		d := filepath.Join(m[0], name)
		if containsStr(dirs, d) {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
		if c == "memory" {
			write(d, "memory.limit_in_bytes", lim)
			if _, err := os.Stat(filepath.Join(d, "memory.memsw.limit_in_bytes")); err == nil {
				write(d, "memory.memsw.limit_in_bytes", lim)
			}
		}
	}
	return "/" + name
}

func TestLimitAncestorOOM(t *testing.T) {
	bin := buildC(t, allocSrc, "-O1")
	parent := makeAncestorCgroup(t, 64*svc.MiB)
	sb := newSandbox(t, svc.Config{
		CgroupParent: parent,
		Limits:       svc.Limits{MemoryMax: 256 * svc.MiB, WallTimeout: slow, CPUTimeLimit: slow},
	})
	for _, d := range serviceCgroups(t, sb.Config()) {
		if !strings.Contains(d, parent+"/") {
			t.Fatalf("service cgroup %s is not under %s", d, parent)
		}
	}
	r := one(t, sb, cTask(bin, "200"))
	expectSignal(t, r, svc.OutcomeAncestorOutOfMemory, syscall.SIGKILL)
	if n := statVal(t, "oom_kill_count", r.Stats.OOMKillCount); n < 1 {
		t.Errorf("oom_kill_count %d, want >= 1", n)
	}
	// The kernel charges the task's counter before it finds the ancestor
	// full, so the task's peak may pass the ancestor's limit by one failed
	// charge (a batch of pages or a huge page; 1.8 MiB seen on v2).
	if p := statVal(t, "memory_peak_bytes", r.Stats.MemoryPeakBytes); p > 68*svc.MiB {
		t.Errorf("memory_peak_bytes %d, want at most about the ancestor's limit of 64 MiB", p)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// --- processes ---------------------------------------------------------------

func TestLimitForkBomb(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{PidsMax: 32, WallTimeout: slow}})
	check := func(t *testing.T, r svc.Result, exit int) {
		t.Helper()
		expect(t, r, svc.OutcomePidsLimit, exit)
		if r.Signal != 0 {
			t.Errorf("signal %d", r.Signal)
		}
		if n := statVal(t, "pids_limit_hit_count", r.Stats.PidsLimitHitCount); n <= 0 {
			t.Errorf("pids_limit_hit_count %d", n)
		}
		if r.Stats.PidsPeak != nil && (*r.Stats.PidsPeak < 2 || *r.Stats.PidsPeak > 32) {
			t.Errorf("pids_peak %d, want 2..32 (pids_max 32)", *r.Stats.PidsPeak)
		}
		if ps := taskProcs(t, sb); len(ps) > 0 {
			t.Errorf("processes left after Run: %v", ps)
		}
		assertClean(t, sb)
		assertNoCgroups(t, sb)
	}
	t.Run("C", func(t *testing.T) {
		bin := buildC(t, forkBombSrc, "-O1")
		check(t, one(t, sb, cTask(bin)), 1)
		// Hitting pids_max is no failure by itself: a task that copes
		// with the failed fork and exits 0 has exited.
		r := one(t, sb, cTask(bin, "recover"))
		expect(t, r, svc.OutcomeExited, 0)
		if n := statVal(t, "pids_limit_hit_count", r.Stats.PidsLimitHitCount); n <= 0 {
			t.Errorf("recovering task: pids_limit_hit_count %d", n)
		}
	})
	t.Run("sh", func(t *testing.T) {
		// dash exits 2 with "Cannot fork" when fork fails.
		r := one(t, sb, sh("b() { b & b; }; b"))
		check(t, r, 2)
		if !strings.Contains(r.Stderr, "fork") {
			t.Errorf("stderr %q", clip(r.Stderr))
		}
	})
}

// --- wall time -----------------------------------------------------------------

func TestDeadlineWallTimeout(t *testing.T) {
	const limit = time.Second
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: limit}})
	// check checks a task ended by its wall timeout. The timeout is the
	// task's own: a task killed at it has had all of it, so its wall time
	// (from its start) is at least the limit.
	check := func(t *testing.T, r svc.Result) {
		t.Helper()
		expectSignal(t, r, svc.OutcomeTimedOut, syscall.SIGKILL)
		if ms := r.Stats.WallTimeMs; ms < limit.Milliseconds() || ms > 4000 {
			t.Errorf("wall_time_ms %d of a task killed at its wall timeout of %v", ms, limit)
		}
		if r.Stdout != "" {
			t.Errorf("stdout %q", r.Stdout)
		}
	}
	for _, tc := range []struct{ name, script string }{
		{"background", "sleep 30 & wait"},
		{"stopped", "kill -STOP $$; echo resumed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r svc.Result
			d := timeRun(func() { r = one(t, sb, sh(tc.script)) })
			check(t, r)
			if d > 5*time.Second {
				t.Errorf("Run took %v under a 1 s wall timeout", d)
			}
			assertClean(t, sb)
			assertNoCgroups(t, sb)
		})
	}
	// Eight sandboxes set up at once take longer to set up than one.
	t.Run("parallel", func(t *testing.T) {
		task := sh("sleep 30 & wait")
		resp := run(t, sb, svc.Parallel(task, task, task, task, task, task, task, task))
		for _, r := range resp.Results[0].Results {
			check(t, r)
		}
		assertClean(t, sb)
		assertNoCgroups(t, sb)
	})
	// A wall timeout shorter than the sandbox setup (a few ms here; a
	// loaded host stretches the setup past seconds) is still the task's:
	// each task runs, then times out, with a wall time of at least 1 ms.
	t.Run("shorter than the setup", func(t *testing.T) {
		sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: time.Millisecond}})
		task := svc.Task{Cmd: "sleep", Args: []string{"30"}}
		resp := run(t, sb, svc.Parallel(task, task, task, task, task, task, task, task))
		for i, r := range resp.Results[0].Results {
			expectSignal(t, r, svc.OutcomeTimedOut, syscall.SIGKILL)
			if ms := r.Stats.WallTimeMs; ms < 1 || ms > 4000 {
				t.Errorf("task %d: wall_time_ms %d under a wall timeout of 1 ms: the task did not get its time", i, ms)
			}
		}
		assertClean(t, sb)
		assertNoCgroups(t, sb)
	})
}

// A task's successors that keep its stdout open do not keep the task
// running: the rest of the PID namespace dies with the task.
func TestOutputForkedSuccessor(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow}})
	var r svc.Result
	d := timeRun(func() { r = one(t, sb, sh("(sleep 30; echo late) & echo early")) })
	expect(t, r, svc.OutcomeExited, 0)
	if r.Signal != 0 || r.Stdout != "early\n" || r.StdoutTruncated {
		t.Errorf("signal %d stdout %q truncated %v", r.Signal, r.Stdout, r.StdoutTruncated)
	}
	if d > 5*time.Second {
		t.Errorf("Run took %v: it waited for the background process", d)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// --- CPU -------------------------------------------------------------------------

func TestLimitCPUTime(t *testing.T) {
	bin := buildC(t, spinSrc, "-O1")
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{CPUTimeLimit: time.Second, WallTimeout: slow}})
	res := run(t, sb, svc.Single(cTask(bin)), svc.Single(cTask(bin, "3"))).Results
	for i, name := range []string{"busy loop", "three forked busy loops"} {
		r := res[i].Results[0]
		t.Logf("%s: wall %d ms, cpu %d usec", name, r.Stats.WallTimeMs, statVal(t, "cpu_usage_usec", r.Stats.CPUUsageUsec))
		expectSignal(t, r, svc.OutcomeCPUTimeExceeded, syscall.SIGKILL)
		if u := statVal(t, "cpu_usage_usec", r.Stats.CPUUsageUsec); u < 950_000 || u > 3_000_000 {
			t.Errorf("%s: cpu_usage_usec %d, want about 1e6", name, u)
		}
		// At one CPU, about 1 s; more on a busy host.
		if ms := r.Stats.WallTimeMs; ms > 10000 {
			t.Errorf("%s: wall_time_ms %d: the CPU limit of 1 s took too long", name, ms)
		}
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestLimitCPUThrottle(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{
		CPUMax:       svc.CPUMax{Quota: 10000, Period: 100000},
		CPUTimeLimit: slow, WallTimeout: slow,
	}})
	r := one(t, sb, cTask(buildC(t, burnSrc, "-O1")))
	expect(t, r, svc.OutcomeExited, 0)
	n := statVal(t, "cpu_nr_throttled", r.Stats.CPUNrThrottled)
	u := statVal(t, "cpu_throttled_usec", r.Stats.CPUThrottledUsec)
	t.Logf("wall %d ms, cpu %d usec, throttled %d times for %d usec", r.Stats.WallTimeMs, statVal(t, "cpu_usage_usec", r.Stats.CPUUsageUsec), n, u)
	if n <= 0 || u <= 0 {
		t.Errorf("cpu_nr_throttled %d, cpu_throttled_usec %d: want > 0 at 10%% of a CPU", n, u)
	}
	// 0.2 s of CPU at 10 ms per 100 ms takes about 2 s.
	if ms := r.Stats.WallTimeMs; ms < 1000 {
		t.Errorf("wall_time_ms %d: not throttled to 10%%", ms)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// --- output ----------------------------------------------------------------------

func TestOutputFlood(t *testing.T) {
	const limit = 64 * svc.KiB
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{OutputLimit: limit, WallTimeout: slow}})
	t.Run("stdout", func(t *testing.T) {
		r := one(t, sb, svc.Task{Cmd: "yes"})
		expectSignal(t, r, svc.OutcomeOutputLimit, syscall.SIGKILL)
		if !r.StdoutTruncated || r.StderrTruncated {
			t.Errorf("truncated: stdout %v stderr %v", r.StdoutTruncated, r.StderrTruncated)
		}
		if len(r.Stdout) != limit || r.Stdout != strings.Repeat("y\n", limit/2) {
			t.Errorf("stdout: %d bytes, want %d of y\\n", len(r.Stdout), limit)
		}
		assertClean(t, sb)
	})
	t.Run("stderr", func(t *testing.T) {
		r := one(t, sb, sh("yes >&2"))
		expectSignal(t, r, svc.OutcomeOutputLimit, syscall.SIGKILL)
		if r.StdoutTruncated || !r.StderrTruncated {
			t.Errorf("truncated: stdout %v stderr %v", r.StdoutTruncated, r.StderrTruncated)
		}
		if r.Stdout != "" || len(r.Stderr) != limit || r.Stderr != strings.Repeat("y\n", limit/2) {
			t.Errorf("stdout %d bytes, stderr %d bytes (want 0 and %d)", len(r.Stdout), len(r.Stderr), limit)
		}
		assertClean(t, sb)
	})
	assertNoCgroups(t, sb)
}

// print40K prints 40 KiB of 'a' to stdout.
const print40K = `head -c 40960 /dev/zero | tr '\0' a`

// TestOutputRequestBudget runs four tasks of 40 KiB each against a request
// budget of 100 KiB (64 KiB per stream): the first two complete, the third
// keeps 20 KiB and the fourth nothing, both output_limit and truncated.
func TestOutputRequestBudget(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{
		RequestOutputLimit: 100 * svc.KiB, OutputLimit: 64 * svc.KiB, WallTimeout: slow,
	}})
	a := func(n int) string { return strings.Repeat("a", n) }
	want := []struct {
		out       string
		truncated bool
	}{{a(40 * svc.KiB), false}, {a(40 * svc.KiB), false}, {a(20 * svc.KiB), true}, {"", true}, {"", false}}
	check := func(t *testing.T, i int, r svc.Result) {
		t.Helper()
		w := want[i]
		if r.Stdout != w.out || r.StdoutTruncated != w.truncated || r.StderrTruncated {
			t.Errorf("step %d: stdout %d bytes truncated %v (stderr %v), want %d bytes truncated %v",
				i+1, len(r.Stdout), r.StdoutTruncated, r.StderrTruncated, len(w.out), w.truncated)
		}
	}

	// The tasks that overflow hold on after printing, so that the
	// overflow (not their own exit) ends them: exactly output_limit by
	// SIGKILL. Not killed, they would be timed_out. A fifth task that
	// prints nothing into the spent budget is not affected.
	t.Run("holding", func(t *testing.T) {
		hold := print40K + "; exec sleep 600"
		resp := run(t, sb,
			svc.Single(sh(print40K)), svc.Single(sh(print40K)),
			svc.Single(sh(hold)), svc.Single(sh(hold)),
			svc.Single(svc.Task{Cmd: "true"}))
		for i := range want {
			r := resp.Results[i].Results[0]
			if want[i].truncated {
				expectSignal(t, r, svc.OutcomeOutputLimit, syscall.SIGKILL)
			} else {
				expect(t, r, svc.OutcomeExited, 0)
			}
			check(t, i, r)
		}
		assertClean(t, sb)
	})

	// Tasks that exit right after printing: the output and the outcome
	// are the same. The status is the task's own (0) when it exited before
	// the output was read, else the kill's (SIGKILL).
	t.Run("exiting", func(t *testing.T) {
		resp := run(t, sb,
			svc.Single(sh(print40K)), svc.Single(sh(print40K)),
			svc.Single(sh(print40K)), svc.Single(sh(print40K)))
		for i := range 4 {
			r := resp.Results[i].Results[0]
			switch {
			case !want[i].truncated:
				expect(t, r, svc.OutcomeExited, 0)
			case r.Signal == 0:
				expect(t, r, svc.OutcomeOutputLimit, 0)
			default:
				expectSignal(t, r, svc.OutcomeOutputLimit, syscall.SIGKILL)
			}
			check(t, i, r)
		}
		assertClean(t, sb)
	})
	assertNoCgroups(t, sb)
}

func TestOutputExact(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	t.Run("stdin", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		b := make([]byte, 256*svc.KiB)
		for i := range b {
			if rng.IntN(64) == 0 {
				b[i] = '\n'
			} else {
				b[i] = byte(' ' + rng.IntN(95))
			}
		}
		in := string(b)
		r := one(t, sb, svc.Task{Cmd: "cat", Stdin: in})
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != in || r.StdoutTruncated {
			t.Errorf("cat: %d bytes out of %d, equal %v, truncated %v", len(r.Stdout), len(in), r.Stdout == in, r.StdoutTruncated)
		}
	})
	t.Run("parallel", func(t *testing.T) {
		resp := run(t, sb, svc.Parallel(
			sh(`head -c 131072 /dev/zero | tr '\0' b`),
			sh(`head -c 131072 /dev/zero | tr '\0' c`)))
		for i, c := range []string{"b", "c"} {
			r := resp.Results[0].Results[i]
			expect(t, r, svc.OutcomeExited, 0)
			if r.Stdout != strings.Repeat(c, 128*svc.KiB) || r.StdoutTruncated {
				t.Errorf("task %d: %d bytes, truncated %v", i, len(r.Stdout), r.StdoutTruncated)
			}
		}
	})
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// --- signals, stack, files --------------------------------------------------------

func TestLimitAbortNoCore(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	res := run(t, sb, svc.Single(cTask(buildC(t, abortSrc, "-O1"))), svc.Single(svc.Task{Cmd: "ls", Args: []string{"-A", "/svc", "/tmp"}})).Results
	expectSignal(t, res[0].Results[0], svc.OutcomeSignaled, syscall.SIGABRT)
	ls := res[1].Results[0]
	expect(t, ls, svc.OutcomeExited, 0)
	if strings.Contains(ls.Stdout, "core") {
		t.Errorf("a core file was written:\n%s", ls.Stdout)
	}
	if !strings.Contains(ls.Stdout, "prog") {
		t.Errorf("ls: %q", ls.Stdout)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestLimitStack(t *testing.T) {
	bin := buildC(t, recurseSrc, "-O0")
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{MemoryMax: 256 * svc.MiB, WallTimeout: slow}})
	deep := one(t, sb, cTask(bin, "100000")) // about 100 MB of stack
	expect(t, deep, svc.OutcomeExited, 0)
	if deep.Stdout != "100001\n" {
		t.Errorf("deep recursion printed %q", deep.Stdout)
	}
	if p := statVal(t, "memory_peak_bytes", deep.Stats.MemoryPeakBytes); p < 100*1000*1000 {
		t.Errorf("memory_peak_bytes %d: the recursion did not use its stack", p)
	}
	inf := one(t, sb, cTask(bin, "0")) // unbounded
	t.Logf("unbounded recursion: %s signal %d", inf.Outcome, inf.Signal)
	switch inf.Outcome {
	case svc.OutcomeSignaled:
		expectSignal(t, inf, svc.OutcomeSignaled, syscall.SIGSEGV)
	case svc.OutcomeOutOfMemory:
		expectSignal(t, inf, svc.OutcomeOutOfMemory, syscall.SIGKILL)
	default:
		t.Errorf("unbounded recursion: %s exit %d signal %d, want signaled (SIGSEGV) or out_of_memory",
			inf.Outcome, inf.ExitCode, inf.Signal)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestLimitFiles(t *testing.T) {
	const ws = 8 * svc.MiB
	sb := newSandbox(t, svc.Config{WorkspaceSize: ws})
	r := one(t, sb, cTask(buildC(t, filesSrc, "-O1"), fmt.Sprint(ws)))
	expect(t, r, svc.OutcomeExited, 0)
	var n int
	var errno string
	lines := strings.Split(r.Stdout, "\n")
	if _, err := fmt.Sscanf(lines[0], "open %d %s", &n, &errno); err != nil || errno != "EMFILE" || n < 1000 || n > 1021 {
		t.Errorf("open until failure: %q, want about 1021 fds then EMFILE", lines[0])
	}
	if len(lines) < 3 || lines[1] != "below ok" || lines[2] != "at EFBIG" {
		t.Errorf("writes at the file size limit %d:\n%s", ws, r.Stdout)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// --- cleanup -----------------------------------------------------------------------

func TestCleanupOrphansReaped(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	r := one(t, sb, cTask(buildC(t, orphansSrc, "-O1")))
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "none left\n" {
		t.Errorf("the init did not reap the orphans: %q", r.Stdout)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// A daemon (double fork, setsid) started by a task dies with the task.
func TestCleanupSetsidDaemon(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow}})
	cfg := sb.Config()
	if ps := sleepers(t, cfg); len(ps) > 0 {
		t.Fatalf("a sleep 1000 already runs as a sandbox identity: %v", ps)
	}
	// The task starts the daemon, then waits for the file "go" that the
	// test makes in the workspace once it has seen the daemon on the host.
	done := make(chan error, 1)
	var resp *svc.Response
	go func() {
		var err error
		resp, err = sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(
			sh("(setsid sleep 1000 &); until [ -e /svc/go ]; do sleep 0.01; done; echo done"))}})
		done <- err
	}()
	var daemon []string
	pollUntil(t, 10*time.Second, "the daemon on the host", func() bool {
		daemon = sleepers(t, cfg)
		return len(daemon) > 0
	})
	// The daemon's root is its sandbox's: its workspace is the task's.
	proc, _, _ := strings.Cut(daemon[0], " ")
	if err := os.WriteFile(filepath.Join(proc, "root", "svc", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r := resp.Results[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "done\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	if ps := sleepers(t, cfg); len(ps) > 0 {
		t.Errorf("the daemon outlived its task: %v", ps)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestCleanupAfterOutcomes(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: time.Second, OutputLimit: 64 * svc.KiB}})
	for _, tc := range []struct {
		name    string
		task    svc.Task
		outcome svc.Outcome
		exit    int
	}{
		{"success", sh("true"), svc.OutcomeExited, 0},
		{"failure", sh("exit 1"), svc.OutcomeExited, 1},
		{"timeout", sh("sleep 30 & sleep 30"), svc.OutcomeTimedOut, 137},
		{"output_limit", svc.Task{Cmd: "yes"}, svc.OutcomeOutputLimit, 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, one(t, sb, tc.task), tc.outcome, tc.exit)
			assertClean(t, sb)
			assertNoCgroups(t, sb)
		})
	}
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{svc.Single(sh("sleep 30 & sleep 30"))}})
			done <- err
		}()
		pollUntil(t, 10*time.Second, "the task to start", func() bool {
			return len(taskProcs(t, sb)) >= 2
		})
		cancel()
		if err := <-done; !errors.Is(err, svc.ErrCancelled) {
			t.Fatalf("Run: %v, want cancelled", err)
		}
		assertClean(t, sb)
		assertNoCgroups(t, sb)
	})
}

// crashEnv names the state directory of TestHelperCrash; the helper runs
// only when it is set. uidBaseEnv names its UIDBase: the parent's, which
// checks what the helper left in that range.
const (
	crashEnv   = "SVC_TEST_CRASH_STATE_DIR"
	uidBaseEnv = "SVC_TEST_UID_BASE"
)

// TestHelperCrash is the helper process of TestCleanupCrashSweep: it starts
// a request running `sleep 1000`, says "ready" on stdout once the task
// runs, and blocks until it is killed.
func TestHelperCrash(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("helper process of TestCleanupCrashSweep; runs only with " + crashEnv + " set")
	}
	uidBase, err := strconv.Atoi(os.Getenv(uidBaseEnv))
	if err != nil {
		t.Fatalf("%s: %v", uidBaseEnv, err)
	}
	cfg := svc.Config{StateDir: dir, UIDBase: uidBase, Limits: svc.Limits{WallTimeout: time.Hour, CPUTimeLimit: time.Hour, OverallTimeout: time.Hour}}
	sb, err := svc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(sh("sleep 1000"))}})
	pollUntil(t, 30*time.Second, "a slot in use", func() bool { return sb.SlotsInUse() > 0 })
	pollUntil(t, 30*time.Second, "the task", func() bool { return len(sleepers(t, cfg)) > 0 })
	fmt.Println("ready")
	<-time.After(2 * time.Minute)
	t.Fatal("not killed")
}

// TestCleanupCrashSweep simulates a crash: a helper process (this test
// binary) is killed with a task running; a new Sandbox with the same
// StateDir removes what it left.
func TestCleanupCrashSweep(t *testing.T) {
	requireRoot(t)
	dir, err := os.MkdirTemp("", "svc-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := svc.Config{StateDir: dir, UIDBase: svctest.UIDBase()}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, fmt.Sprintf("%s=%d", uidBaseEnv, cfg.UIDBase))
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// On an early failure: kill the helper, and sweep what it left so that
	// the state directory can be removed.
	killed, swept := false, false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if !swept {
			if sb, err := svc.New(cfg); err == nil {
				sb.Close(context.Background())
			}
		}
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("helper ended before it was ready:\n%s", stderr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		killed = true
		t.Fatalf("helper not ready after 60 s:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	// What the crash left: workspace mounts and directories, cgroups.
	run := filepath.Join(dir, "run")
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(mi), " "+run+"/"); n < 2 {
		t.Errorf("%d workspace mounts under %s after the crash, want 2 or more", n, run)
	}
	if ws, _ := filepath.Glob(filepath.Join(run, "r*")); len(ws) == 0 {
		t.Errorf("no request directory under %s after the crash", run)
	}
	if cg := cgroupChildren(t, cfg); len(cg) == 0 {
		t.Errorf("no request cgroup left after the crash")
	} else {
		t.Logf("left by the crash: %v", cg)
	}

	crashed := sandboxProcs(t, cfg.UIDBase, cfg.Limits.MaxConcurrency)
	sb := newSandbox(t, cfg)
	swept = true
	for _, p := range crashed {
		if exiting, _ := procExit(p); !exiting {
			t.Errorf("process of the crashed instance alive after New: %s", p)
		}
	}
	// The crashed instance's inits may still be on their way out (the
	// kernel tearing down their PID namespaces) or zombies, children of
	// the host's init since their parent died: finishing and reaping them
	// is up to the kernel and that process, not svc. Wait for it before
	// checking that nothing is left.
	pollUntil(t, 30*time.Second, "the crashed instance's processes to be reaped", func() bool {
		for _, p := range sandboxProcs(t, cfg.UIDBase, sb.Limits().MaxConcurrency) {
			if exiting, ppid := procExit(p); exiting && ppid != os.Getpid() {
				return false
			}
		}
		return true // gone, or left for assertClean to report
	})
	assertClean(t, sb)
	assertNoCgroups(t, sb)
	// The new instance works.
	expect(t, one(t, sb, sh("echo ok")), svc.OutcomeExited, 0)
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// --- deadlines and stats ------------------------------------------------------------

func TestDeadlineOverallSteps(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{OverallTimeout: time.Second}})
	step := svc.Single(sh("sleep 0.6"))
	resp := run(t, sb, step, step, step, step)
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
	skipped := false
	for i, sr := range resp.Results {
		r := sr.Results[0]
		switch {
		case r.Outcome == svc.OutcomeNotStarted:
			skipped = true
			if r.Error == "" || r.Signal != 0 {
				t.Errorf("step %d: not_started with error %q signal %d", i+1, r.Error, r.Signal)
			}
		case skipped:
			t.Errorf("step %d ran (%s) after a step that was not started", i+1, r.Outcome)
		case i >= 2:
			t.Errorf("step %d started after the overall deadline: %s", i+1, r.Outcome)
		default:
			expect(t, r, svc.OutcomeExited, 0)
		}
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// The task's own wall timeout (30 s) is not shortened by the request's
// deadline; 2 s after that deadline the request is killed whole.
func TestDeadlineOverallKill(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{OverallTimeout: time.Second, WallTimeout: 30 * time.Second}})
	var err error
	d := timeRun(func() {
		_, err = sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(sh("sleep 30"))}})
	})
	if !errors.Is(err, svc.ErrDeadlineExceeded) {
		t.Fatalf("Run: %v, want deadline_exceeded", err)
	}
	if d < 2500*time.Millisecond || d > 6*time.Second {
		t.Errorf("Run returned after %v, want about 3 s (deadline 1 s and 2 s grace)", d)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// TestStatsTaskAlone: the statistics count the task's processes, not
// the sandbox's init nor its setup. /bin/true is one process all its life,
// so its group's peak process count is exactly 1 (2 if the init were in
// the group). Its CPU time is logged: about that of /bin/true on the host,
// where the init's mounts once added a few milliseconds.
func TestStatsTaskAlone(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	for range 3 {
		r := one(t, sb, svc.Task{Cmd: "/bin/true"})
		expect(t, r, svc.OutcomeExited, 0)
		if p := r.Stats.PidsPeak; p != nil && *p != 1 {
			t.Errorf("pids_peak %d for /bin/true, want 1: only the task's processes count", *p)
		}
		u := statVal(t, "cpu_usage_usec", r.Stats.CPUUsageUsec)
		us := statVal(t, "cpu_user_usec", r.Stats.CPUUserUsec)
		sy := statVal(t, "cpu_system_usec", r.Stats.CPUSystemUsec)
		if d := u - us - sy; d < 0 || d > 1 {
			t.Errorf("cpu_user_usec %d + cpu_system_usec %d != cpu_usage_usec %d", us, sy, u)
		}
		t.Logf("/bin/true: cpu_usage_usec %d, memory_peak_bytes %d", u, statVal(t, "memory_peak_bytes", r.Stats.MemoryPeakBytes))
	}
}

// TestStatsShellReuseCPU: a shell's tasks follow one another in its
// sandbox (on v1 they also share its cpu and cpuacct groups, their
// accounting started afresh for each). A task after a CPU loop throttled
// at 20% of a CPU reports its own CPU time and no throttling: nothing of
// the loop carries over.
func TestStatsShellReuseCPU(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{
		MaxConcurrency: 1, MaxParallelTasks: 1,
		CPUMax:       svc.CPUMax{Quota: 20000, Period: 100000},
		CPUTimeLimit: slow, WallTimeout: slow,
	}})
	made0, cells0 := runner.ShellCounts()
	const pairs = 4
	for i := range pairs {
		burn := one(t, sb, sh("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"))
		expect(t, burn, svc.OutcomeExited, 0)
		bu := statVal(t, "cpu_usage_usec", burn.Stats.CPUUsageUsec)
		if n := statVal(t, "cpu_nr_throttled", burn.Stats.CPUNrThrottled); n <= 0 {
			t.Fatalf("loop %d: cpu_nr_throttled %d at 20%% of a CPU (cpu_usage_usec %d)", i, n, bu)
		}
		r := one(t, sb, svc.Task{Cmd: "/bin/true"})
		expect(t, r, svc.OutcomeExited, 0)
		u := statVal(t, "cpu_usage_usec", r.Stats.CPUUsageUsec)
		us := statVal(t, "cpu_user_usec", r.Stats.CPUUserUsec)
		sy := statVal(t, "cpu_system_usec", r.Stats.CPUSystemUsec)
		n := statVal(t, "cpu_nr_throttled", r.Stats.CPUNrThrottled)
		th := statVal(t, "cpu_throttled_usec", r.Stats.CPUThrottledUsec)
		t.Logf("pair %d: loop %d usec; then /bin/true %d usec (user %d, system %d), throttled %d times, %d usec", i, bu, u, us, sy, n, th)
		if u <= 0 || u >= 20000 || u >= bu/4 {
			t.Errorf("pair %d: /bin/true cpu_usage_usec %d after a loop of %d: want its own, about a millisecond", i, u, bu)
		}
		if us+sy != u {
			t.Errorf("pair %d: cpu_user_usec %d + cpu_system_usec %d != cpu_usage_usec %d", i, us, sy, u)
		}
		if n != 0 || th != 0 {
			t.Errorf("pair %d: /bin/true throttled %d times for %d usec: the loop's throttling carried over", i, n, th)
		}
	}
	made, cells := runner.ShellCounts()
	t.Logf("%d requests: %d shells made, %d tasks run in them", 2*pairs, made-made0, cells-cells0)
	if made-made0 >= 2*pairs {
		t.Errorf("%d shells made for %d requests: no shell ran two tasks", made-made0, 2*pairs)
	}
	assertNoCgroups(t, sb)
}

func TestLimitStats(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	r := one(t, sb, sh("sleep 0.3"))
	expect(t, r, svc.OutcomeExited, 0)
	s := r.Stats
	if s.WallTimeMs < 250 || s.WallTimeMs > 3000 {
		t.Errorf("wall_time_ms %d for sleep 0.3", s.WallTimeMs)
	}
	if s.PidsPeak != nil && *s.PidsPeak < 1 {
		t.Errorf("pids_peak %d", *s.PidsPeak)
	}
	if u := statVal(t, "cpu_usage_usec", s.CPUUsageUsec); u <= 0 || u > 1_000_000 {
		t.Errorf("cpu_usage_usec %d for sleep 0.3", u)
	}
	if m := statVal(t, "memory_peak_bytes", s.MemoryPeakBytes); m <= 0 {
		t.Errorf("memory_peak_bytes %d", m)
	}
	for name, p := range map[string]*int64{"oom_kill_count": s.OOMKillCount, "pids_limit_hit_count": s.PidsLimitHitCount} {
		if p != nil && *p != 0 {
			t.Errorf("%s %d, want 0", name, *p)
		}
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

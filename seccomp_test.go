package svc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// The seccomp profiles on the real kernel, through the real sandbox:
// a probe makes each hostile call raw under each profile; the toolchains
// run under compile_v2 and what they build under native_v2. The decisions
// of the BPF programs themselves are also tested without a sandbox, in
// internal/seccomp.

// dangerousSet is the set every profile kills (the profiles' issue, plus
// fspick, open_tree_attr and quotactl_fd, the siblings of listed calls).
var dangerousSet = []string{
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
	"name_to_handle_at", "open_by_handle_at", "fanotify_init",
}

// probeSrc takes a mode as argv[1]. A mode that names a call makes it raw
// with zero arguments; the others are below. Before the call it writes
// "probe: <mode>" to stderr, so a kill is known to come from that call. A
// call that should have killed and returned exits 42; "handler-<mode>"
// installs a SIGSYS handler first, which exits 43 if it ever runs. The
// other modes print "ok ..." or the errno name and exit 0.
const probeSrc = `#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif

#define C(x) {#x, __NR_##x}
static const struct { const char *name; long nr; } calls[] = {
	C(unshare), C(setns), C(mount), C(umount2), C(pivot_root), C(chroot),
	C(fsopen), C(fsmount), C(fsconfig), C(fspick), C(move_mount), C(open_tree),
	C(open_tree_attr), C(mount_setattr),
	C(ptrace), C(process_vm_readv), C(process_vm_writev), C(kcmp), C(pidfd_getfd),
	C(bpf), C(perf_event_open), C(userfaultfd), C(io_uring_setup), C(io_uring_enter),
	C(io_uring_register), C(keyctl), C(add_key), C(request_key),
	C(kexec_load), C(kexec_file_load), C(init_module), C(finit_module), C(delete_module),
	C(reboot), C(swapon), C(swapoff), C(acct), C(quotactl), C(quotactl_fd), C(syslog),
	C(name_to_handle_at), C(open_by_handle_at), C(fanotify_init),
};

static void reached(const char *mode) { dprintf(2, "probe: %s\n", mode); }

static int survived(const char *mode, long r)
{
	printf("survived: %s returned %ld (%s)\n", mode, r, r < 0 ? strerrorname_np(errno) : "");
	return 42;
}

/* result prints "ok" or the errno name of a call that may fail. */
static int result(long r, const char *what)
{
	if (r < 0)
		printf("%s\n", strerrorname_np(errno));
	else
		printf("ok %s\n", what);
	return 0;
}

static void on_sigsys(int sig)
{
	static const char m[] = "caught SIGSYS\n";
	(void)sig;
	write(1, m, sizeof m - 1);
	_exit(43);
}

static void *thread_main(void *arg) { return arg; }

static int child_status(pid_t pid)
{
	int st;
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(7);
	if (waitpid(pid, &st, __WALL) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long r;
	if (!strncmp(mode, "handler-", 8)) {
		struct sigaction sa = {.sa_handler = on_sigsys};
		sigaction(SIGSYS, &sa, NULL);
		mode += 8;
	}
	for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
		if (!strcmp(mode, calls[i].name)) {
			reached(argv[1]);
			r = syscall(calls[i].nr, 0, 0, 0, 0, 0, 0);
			return survived(mode, r);
		}
	if (!strcmp(mode, "x32")) { /* getpid through the x32 ABI */
		reached(argv[1]);
		r = syscall(0x40000000 | __NR_getpid);
		return survived(mode, r);
	}
	if (!strcmp(mode, "int80")) { /* getpid through the i386 ABI */
		reached(argv[1]);
		__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
		return survived(mode, r);
	}
	if (!strcmp(mode, "clone-newuser")) {
		reached(argv[1]);
		r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
		if (r == 0)
			_exit(0);
		return survived(mode, r);
	}
	if (!strcmp(mode, "clone-newnet")) {
		reached(argv[1]);
		r = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
		if (r == 0)
			_exit(0);
		return survived(mode, r);
	}
	if (!strcmp(mode, "clone-newipc")) { /* the flag a shell's init clones with */
		reached(argv[1]);
		r = syscall(SYS_clone, CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
		if (r == 0)
			_exit(0);
		return survived(mode, r);
	}
	reached(argv[1]);
	if (!strcmp(mode, "fork"))
		return result(child_status(fork()), "fork");
	if (!strcmp(mode, "vfork"))
		return result(child_status(vfork()), "vfork");
	if (!strcmp(mode, "clone-process")) /* clone without CLONE_THREAD */
		return result(child_status(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0)), "clone");
	if (!strcmp(mode, "clone3")) {
		struct clone_args ca = {.exit_signal = SIGCHLD};
		r = syscall(SYS_clone3, &ca, sizeof ca);
		if (r == 0)
			_exit(7);
		return result(r < 0 ? r : child_status(r), "clone3");
	}
	if (!strcmp(mode, "socket-unix"))
		return result(socket(AF_UNIX, SOCK_STREAM, 0), "unix");
	if (!strcmp(mode, "own-filter")) {
		/* A filter of the task's own that allows everything: the
		 * sandbox's filters still decide, and unshare kills. */
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = {.len = 1, .filter = &allow};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			return result(-1, "seccomp");
		syscall(SYS_unshare, 0);
		return 42;
	}
	if (!strcmp(mode, "clock_settime")) { /* allowed, with no privilege to use */
		struct timespec ts = {0};
		return result(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts), "clock_settime");
	}
	if (!strcmp(mode, "getpwnam")) { /* nscd's socket first, then /etc/passwd */
		struct passwd *pw = getpwnam("root");
		return result(pw && pw->pw_uid == 0 ? 0 : -1, "root");
	}
	if (!strcmp(mode, "socket-inet"))
		return result(socket(AF_INET, SOCK_STREAM, 0), "inet");
	if (!strcmp(mode, "socket-inet6"))
		return result(socket(AF_INET6, SOCK_DGRAM, 0), "inet6");
	if (!strcmp(mode, "socket-netlink"))
		return result(socket(AF_NETLINK, SOCK_RAW, 0), "netlink");
	if (!strcmp(mode, "socketpair")) {
		int sv[2];
		char buf[5] = {0};
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			return result(-1, "");
		if (write(sv[0], "ping", 4) != 4 || read(sv[1], buf, 4) != 4)
			return result(-1, "");
		return result(0, buf);
	}
	if (!strcmp(mode, "unlisted")) /* harmless, on no allowlist */
		return result(syscall(SYS_io_pgetevents, 0, 0, 0, 0, 0, 0), "io_pgetevents");
	/* Calls a shell makes before a task's filter (a layered shell's base
	 * allows them), which the task's own filter then decides. */
	if (!strcmp(mode, "capset"))
		return result(syscall(SYS_capset, 0, 0), "capset");
	if (!strcmp(mode, "setresuid"))
		return result(syscall(SYS_setresuid, 0, 0, 0), "setresuid");
	if (!strcmp(mode, "setpgid"))
		return result(syscall(SYS_setpgid, 0, 0), "setpgid");
	if (!strcmp(mode, "pthread")) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if ((errno = pthread_create(&t[i], NULL, thread_main, NULL)))
				return result(-1, "");
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		return result(0, "4 threads");
	}
	fprintf(stderr, "probe: unknown mode %s\n", mode);
	return 2;
}
`

// probeCase is a probe mode and what each profile must make of it.
type probeCase struct {
	mode string
	// want returns "" for a kill (policy_violation, signal 31, exit
	// 159), or the stdout of an exit with status 0.
	want func(p svc.Profile) string
}

func killAll(svc.Profile) string { return "" }

func compileOr(compile string) func(svc.Profile) string {
	return func(p svc.Profile) string {
		if p == svc.ProfileCompileV2 || p == svc.ProfileCompileV1 {
			return compile
		}
		return ""
	}
}

func probeCases() []probeCase {
	var cs []probeCase
	for _, s := range dangerousSet {
		cs = append(cs, probeCase{s, killAll})
	}
	for _, m := range []string{
		"x32", "int80", "clone-newuser", "clone-newnet", "clone-newipc",
		"handler-unshare", "handler-ptrace", "handler-x32", "handler-int80", "handler-clone-newuser",
		"own-filter",
	} {
		cs = append(cs, probeCase{m, killAll})
	}
	return append(cs,
		probeCase{"fork", compileOr("ok fork")},
		probeCase{"vfork", compileOr("ok vfork")},
		probeCase{"clone-process", compileOr("ok clone")},
		// Refused, not killed, to a native task: glibc's user lookups
		// try nscd's unix socket first.
		probeCase{"socket-unix", func(p svc.Profile) string {
			if p == svc.ProfileCompileV2 || p == svc.ProfileCompileV1 {
				return "ok unix"
			}
			return "EACCES"
		}},
		probeCase{"getpwnam", func(svc.Profile) string { return "ok root" }},
		probeCase{"clock_settime", func(svc.Profile) string { return "EPERM" }},
		probeCase{"socket-inet", compileOr("ok inet")},
		probeCase{"socket-inet6", compileOr("ok inet6")},
		probeCase{"socketpair", compileOr("ok ping")},
		probeCase{"socket-netlink", func(p svc.Profile) string {
			return map[svc.Profile]string{svc.ProfileCompileV2: "ENOSYS", svc.ProfileCompileV1: "ok netlink"}[p]
		}},
		probeCase{"clone3", func(svc.Profile) string { return "ENOSYS" }},
		probeCase{"unlisted", v2Or("EINVAL")},
		probeCase{"pthread", func(svc.Profile) string { return "ok 4 threads" }},
		// Allowed, with no privilege to use.
		probeCase{"capset", func(svc.Profile) string { return "EFAULT" }},
		probeCase{"setresuid", func(svc.Profile) string { return "EPERM" }},
		probeCase{"setpgid", func(svc.Profile) string { return "ok setpgid" }},
	)
}

// v2Or: ENOSYS under the v2 profiles, which do not list the call, else v1.
func v2Or(v1 string) func(svc.Profile) string {
	return func(p svc.Profile) string {
		if strings.HasSuffix(string(p), "_v2") {
			return "ENOSYS"
		}
		return v1
	}
}

// filterSets are the two ways a sandbox installs the profiles' filters:
// with every profile allowed, which share no base, each task process
// installs its profile's whole program; with the v2 profiles only (the
// default), each shell's init installs a base and each task process its
// profile's residual over it (seccomp.Layers).
var filterSets = []struct {
	name     string
	profiles []svc.Profile
	filters  int // seccomp filters a task has
}{
	{"whole", svc.Profiles(), 1},
	{"layered", []svc.Profile{svc.ProfileCompileV2, svc.ProfileNativeV2}, 2},
}

// TestSeccompMatrix compiles the probe once per profile and runs every
// mode under it, eight at a time, checking the outcome, signal and exit
// status of each, then that nothing is left behind: with whole filters
// and with layered ones.
func TestSeccompMatrix(t *testing.T) {
	for _, set := range filterSets {
		t.Run(set.name, func(t *testing.T) { seccompMatrix(t, set.profiles) })
	}
}

func seccompMatrix(t *testing.T, profiles []svc.Profile) {
	// The profiles run at once, each a request of steps eight tasks
	// wide.
	const width = 8
	sb := newSandbox(t, svc.Config{
		AllowedProfiles: profiles,
		Limits:          svc.Limits{MaxParallelTasks: width, MaxConcurrency: 4 * width},
	})
	cases := probeCases()
	if n := (len(cases)+width-1)/width + 1; n > sb.Limits().MaxSteps {
		t.Fatalf("%d probe modes need %d steps, more than %d", len(cases), n, sb.Limits().MaxSteps)
	}
	t.Run("profiles", func(t *testing.T) {
		for _, prof := range profiles {
			t.Run(string(prof), func(t *testing.T) {
				t.Parallel()
				steps := []svc.Step{svc.Single(svc.Task{
					Cmd:            "gcc",
					Args:           []string{"-O1", "-Wall", "-pthread", "-o", "probe", "probe.c"},
					Files:          map[string]svc.File{"probe.c": {Content: probeSrc}},
					SandboxProfile: svc.ProfileCompileV2,
				})}
				for i := 0; i < len(cases); i += width {
					var tasks []svc.Task
					for _, c := range cases[i:min(i+width, len(cases))] {
						tasks = append(tasks, svc.Task{Cmd: "./probe", Args: []string{c.mode}, SandboxProfile: prof})
					}
					steps = append(steps, svc.Parallel(tasks...))
				}
				resp := run(t, sb, steps...)
				expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
				for i, c := range cases {
					r := resp.Results[1+i/width].Results[i%width]
					checkProbe(t, c.mode, r, c.want(prof))
				}
			})
		}
	})
	assertClean(t, sb)
}

// checkProbe checks one probe result against want ("" for a kill).
func checkProbe(t *testing.T, mode string, r svc.Result, want string) {
	t.Helper()
	if !strings.Contains(r.Stderr, "probe: "+mode+"\n") {
		t.Errorf("%s: the probe did not reach its call: %s exit %d signal %d\nstdout: %s\nstderr: %s",
			mode, r.Outcome, r.ExitCode, r.Signal, r.Stdout, r.Stderr)
		return
	}
	if want == "" {
		if r.Outcome != svc.OutcomePolicyViolation || r.Signal != 31 || r.ExitCode != 159 {
			t.Errorf("%s: got %s exit %d signal %d, want policy_violation exit 159 signal 31\nstdout: %s",
				mode, r.Outcome, r.ExitCode, r.Signal, r.Stdout)
		}
		return
	}
	if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != want {
		t.Errorf("%s: got %s exit %d signal %d stdout %q, want exit 0 and %q\nstderr: %s",
			mode, r.Outcome, r.ExitCode, r.Signal, r.Stdout, want, r.Stderr)
	}
}

// TestSeccompDefaultProfile: a task that names no profile runs under the
// configured default.
func TestSeccompDefaultProfile(t *testing.T) {
	sb := newSandbox(t, svc.Config{DefaultProfile: svc.ProfileNativeV2})
	// The shell forks for ls: killed under native_v2, fine under
	// compile_v2.
	r := one(t, sb, sh("ls / > /dev/null; echo done"))
	expect(t, r, svc.OutcomePolicyViolation, 159)
	r = one(t, sb, svc.Task{Cmd: "sh", Args: []string{"-c", "ls / > /dev/null; echo done"}, SandboxProfile: svc.ProfileCompileV2})
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "done\n" {
		t.Errorf("stdout %q", r.Stdout)
	}
	// The child's own PATH search runs under the filter.
	r = one(t, sb, svc.Task{Cmd: "no-such-command"})
	expect(t, r, svc.OutcomeExited, 127)
	assertClean(t, sb)
}

// TestProfileNotAllowed: a request with a task whose profile is known but
// not allowed is refused with profile_not_allowed (422 over HTTP, from
// httpapi's table) before anything runs: the sleep of its first step
// would take 3 s.
func TestProfileNotAllowed(t *testing.T) {
	sb := newSandbox(t, svc.Config{AllowedProfiles: []svc.Profile{svc.ProfileCompileV2, svc.ProfileNativeV2}})
	for _, prof := range []svc.Profile{svc.ProfileCompileV1, svc.ProfileNativeV1} {
		start := time.Now()
		resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			svc.Single(sh("sleep 3")),
			svc.Parallel(svc.Task{Cmd: "true"}, svc.Task{Cmd: "true", SandboxProfile: prof}),
		}})
		if !errors.Is(err, svc.ErrProfileNotAllowed) || svc.CodeOf(err) != svc.CodeProfileNotAllowed {
			t.Fatalf("%s: got %v, want profile_not_allowed", prof, err)
		}
		if resp != nil {
			t.Errorf("%s: a response with the error: %+v", prof, resp)
		}
		if !strings.Contains(err.Error(), "steps[1][1].sandbox_profile") || !strings.Contains(err.Error(), string(prof)) {
			t.Errorf("%s: the message does not name the field and profile: %v", prof, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refused after %v: the first step ran", prof, d)
		}
	}
	// The same request with an allowed profile runs.
	r := one(t, sb, svc.Task{Cmd: "true", SandboxProfile: svc.ProfileNativeV2})
	expect(t, r, svc.OutcomeExited, 0)
	assertClean(t, sb)
}

// TestProfileUnknown: an unknown profile name is invalid_request, even
// when every profile is allowed, and nothing runs.
func TestProfileUnknown(t *testing.T) {
	sb := newSandbox(t, svc.Config{AllowedProfiles: svc.Profiles()})
	for _, prof := range []svc.Profile{"compile_v3", "native", "COMPILE_V2", "compile_v2 "} {
		start := time.Now()
		resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			svc.Single(sh("sleep 3")),
			svc.Single(svc.Task{Cmd: "true", SandboxProfile: prof}),
		}})
		if !errors.Is(err, svc.ErrInvalidRequest) || svc.CodeOf(err) != svc.CodeInvalidRequest {
			t.Fatalf("%q: got %v, want invalid_request", prof, err)
		}
		if resp != nil || !strings.Contains(err.Error(), "steps[1].sandbox_profile") {
			t.Errorf("%q: response %v, error %v", prof, resp, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q: refused after %v: the first step ran", prof, d)
		}
	}
	assertClean(t, sb)
}

// TestToolchains runs the traced workloads of internal/seccomp/trace
// through the sandbox: gcc, g++, python3, go build, sh and make under
// compile_v2, then the programs they built under native_v2.
func TestToolchains(t *testing.T) {
	requireRoot(t)
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("no Go toolchain at %s (bound into the sandbox through /usr)", goBin)
	}
	files := make(map[string]svc.File)
	const dir = "internal/seccomp/trace/testdata"
	for _, f := range []string{"hello.c", "tour.c", "threads.cc", "script.py", "helper.py", "pipeline.sh", "Makefile", "gohello/go.mod", "gohello/main.go"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = svc.File{Content: string(b)}
	}
	static := hasLib("gcc", "libc.a") && hasLib("g++", "libstdc++.a")

	sb := newSandbox(t, svc.Config{Limits: svc.Limits{
		// go build of a module, from an empty cache: about 15 s of CPU
		// and more memory and threads than a submission gets.
		MemoryMax:      1 * svc.GiB,
		PidsMax:        256,
		CPUMax:         svc.CPUMax{Quota: 200000, Period: 100000},
		CPUTimeLimit:   120 * time.Second,
		WallTimeout:    120 * time.Second,
		OverallTimeout: 4 * time.Minute,
	}})

	const numbers = "5 3 9 1 3 7 2 8\n"
	compile := func(cmd string, args ...string) svc.Task {
		return svc.Task{Cmd: cmd, Args: args, SandboxProfile: svc.ProfileCompileV2}
	}
	native := func(stdin, cmd string, args ...string) svc.Task {
		return svc.Task{Cmd: cmd, Args: args, Stdin: stdin, SandboxProfile: svc.ProfileNativeV2}
	}
	type check struct {
		name   string
		task   svc.Task
		stdout string // a substring of stdout
		signal int    // the signal expected to end it
	}
	build := []check{
		{name: "gcc", task: compile("gcc", "-O2", "-Wall", "-o", "hello", "hello.c")},
		{name: "gcc-tour", task: compile("gcc", "-O2", "-Wall", "-o", "tour", "tour.c", "-lm")},
		{name: "g++", task: compile("g++", "-O2", "-Wall", "-pthread", "-o", "threads", "threads.cc")},
	}
	if static {
		build = append(build,
			check{name: "gcc-static", task: compile("gcc", "-O2", "-static", "-o", "tour_static", "tour.c", "-lm")},
			check{name: "g++-static", task: compile("g++", "-O2", "-static", "-pthread", "-o", "threads_static", "threads.cc")})
	} else {
		t.Log("no static libc or libstdc++: the static workloads are skipped")
	}
	build[0].task.Files = files
	goBuild := compile("go", "build", "-o", "../gohello.bin", ".")
	// By name, in the task's own environment: Go's build cache and
	// module cache go under $HOME, the workspace.
	goBuild.WorkingDir = "/svc/gohello"
	tools := []check{
		{name: "python3", task: svc.Task{Cmd: "python3", Args: []string{"script.py"}, Stdin: numbers, SandboxProfile: svc.ProfileCompileV2}, stdout: "child ping"},
		{name: "sh", task: compile("sh", "pipeline.sh"), stdout: "lines 6 sum 28"},
		{name: "make", task: compile("make", "-j2"), stdout: "make ok"},
		{name: "go-build", task: goBuild},
	}
	programs := []check{
		{name: "c", task: native(numbers, "./hello"), stdout: "sum 38"},
		{name: "c-tour", task: native(numbers, "./tour", "all"), stdout: "1 2 3 3 5 7 8 9\n"},
		{name: "c-abort", task: native("", "./tour", "abort"), signal: 6},
		{name: "c++-threads", task: native(numbers, "./threads"), stdout: "squares 242 sum 38 map 3"},
		{name: "go", task: native(numbers, "./gohello.bin"), stdout: "sorted [1 2 3 3 5 7 8 9] squares 242"},
	}
	if static {
		programs = append(programs,
			check{name: "c-static", task: native(numbers, "./tour_static", "all"), stdout: "1 2 3 3 5 7 8 9\n"},
			check{name: "c++-static", task: native(numbers, "./threads_static"), stdout: "squares 242 sum 38 map 3"})
	}

	var steps []svc.Step
	var checks [][]check
	for _, group := range [][]check{build, tools, programs} {
		var tasks []svc.Task
		for _, c := range group {
			tasks = append(tasks, c.task)
		}
		steps = append(steps, svc.Parallel(tasks...))
		checks = append(checks, group)
	}
	resp := run(t, sb, steps...)
	for i, group := range checks {
		for j, c := range group {
			t.Run(c.name, func(t *testing.T) {
				r := resp.Results[i].Results[j]
				t.Logf("%s: %s exit %d, %d ms wall, %d KiB peak", c.task.SandboxProfile, r.Outcome, r.ExitCode,
					r.Stats.WallTimeMs, deref(r.Stats.MemoryPeakBytes)/1024)
				if c.signal != 0 {
					expect(t, r, svc.OutcomeSignaled, 128+c.signal)
				} else {
					expect(t, r, svc.OutcomeExited, 0)
				}
				if !strings.Contains(r.Stdout, c.stdout) {
					t.Errorf("stdout %q, want it to contain %q\nstderr: %s", r.Stdout, c.stdout, clip(r.Stderr))
				}
			})
		}
	}
	assertClean(t, sb)
}

// hasLib reports whether the host compiler (the sandbox's, through /usr)
// finds the library file.
func hasLib(cc, lib string) bool {
	out, err := exec.Command(cc, "-print-file-name="+lib).Output()
	if err != nil {
		return false
	}
	p := strings.TrimSpace(string(out))
	_, err = os.Stat(p)
	return filepath.IsAbs(p) && err == nil
}

func deref[T ~int64 | ~uint64](p *T) T {
	if p == nil {
		return 0
	}
	return *p
}

// filterProbe prints how many seccomp filters the process has and whether
// no_new_privs is set, then makes an IPv4 socket: allowed by the compile
// profiles, killed by the native ones.
const filterProbe = `#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
int main(void) {
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f)) {
		if (!strncmp(line, "Seccomp_filters:", 16) || !strncmp(line, "NoNewPrivs:", 11))
			fputs(line, stdout);
	}
	fflush(stdout);
	printf("socket %s\n", socket(AF_INET, SOCK_STREAM, 0) >= 0 ? "ok" : "refused");
	return 0;
}
`

// TestSeccompEarlyFilter: whether a task's filter was installed before
// its release (a request prepared ahead expects the profile of the last
// request's first task; a next step's tasks are known) or after it, the
// task runs under its profile's filter with no_new_privs: one filter when
// each task installs its profile's whole program, two (its shell's base
// and its residual) when layered. Requests alternate profiles so that the
// guess is right and wrong, and the native_v2 tasks, whose profile
// refuses chdir, have theirs installed after release.
func TestSeccompEarlyFilter(t *testing.T) {
	bin := buildC(t, filterProbe)
	for _, set := range filterSets {
		t.Run(set.name, func(t *testing.T) {
			sb := newSandbox(t, svc.Config{AllowedProfiles: set.profiles})
			run := func(prof svc.Profile) svc.Result {
				t.Helper()
				if prof == svc.ProfileNativeV1 || prof == svc.ProfileNativeV2 {
					// A placed file is not executable, and a native
					// profile lets no shell fork: a first step makes
					// it so.
					resp := run(t, sb,
						svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "chmod +x prog"}, Files: map[string]svc.File{"prog": {Content: bin}}}),
						svc.Single(svc.Task{Cmd: "./prog", SandboxProfile: prof}))
					return resp.Results[1].Results[0]
				}
				task := cTask(bin)
				task.SandboxProfile = prof
				return one(t, sb, task)
			}
			for i, prof := range []svc.Profile{
				svc.ProfileCompileV2, svc.ProfileCompileV2, svc.ProfileCompileV1, svc.ProfileNativeV1,
				svc.ProfileNativeV1, svc.ProfileCompileV2, svc.ProfileNativeV2, svc.ProfileCompileV1, svc.ProfileCompileV2,
			} {
				if !slices.Contains(set.profiles, prof) {
					continue
				}
				r := run(prof)
				head := fmt.Sprintf("NoNewPrivs:\t1\nSeccomp_filters:\t%d\n", set.filters)
				want, outcome, code := head+"socket ok\n", svc.OutcomeExited, 0
				if prof == svc.ProfileNativeV1 || prof == svc.ProfileNativeV2 {
					want, outcome, code = head, svc.OutcomePolicyViolation, 159
				}
				if r.Outcome != outcome || r.ExitCode != code || r.Stdout != want {
					t.Errorf("request %d (%s): %s exit %d, stdout\n%s\nwant %s exit %d, stdout\n%s", i, prof, r.Outcome, r.ExitCode, r.Stdout, outcome, code, want)
				}
			}
		})
	}
}

// Every toolchain runs by its name: Go's, off the task PATH in
// /usr/local/go, is found as /usr/local/bin/go, a link to it, beside the
// root filesystem's own /usr/local/bin, which stays read-only.
func TestGoByName(t *testing.T) {
	requireRoot(t)
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		t.Skipf("no Go toolchain in /usr/local/go: %v", err)
	}
	host, err := os.ReadDir("/usr/local/bin")
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, svc.Config{})
	r := one(t, sb, sh(`command -v go; command -v gofmt; go version; readlink /usr/local/bin/go; ls /usr/local/bin; touch /usr/local/bin/x || echo read-only`))
	expect(t, r, svc.OutcomeExited, 0)
	for _, want := range []string{"/usr/local/bin/go\n/usr/local/bin/gofmt\n", "go version go1.", "/usr/local/go/bin/go\n", "read-only"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout %q lacks %q\nstderr: %s", r.Stdout, want, r.Stderr)
		}
	}
	for _, e := range host {
		if !strings.Contains(r.Stdout, "\n"+e.Name()+"\n") {
			t.Errorf("the host's /usr/local/bin/%s is not in the sandbox's: %q", e.Name(), r.Stdout)
		}
	}
}

// Suites nobody here wrote: the regression tests of CPython and of Go's
// standard library, run on the host and inside a svc sandbox under
// compile_v2, and compared. A judge's script leans on json, re, heapq,
// subprocess, threading, sockets on loopback, asyncio; a system call the
// sandbox refuses shows up here as a test that passes on the host and
// fails in the sandbox, with the call's errno in its traceback.
//
//	go test ./conformance/ -run 'TestSuite' -v -timeout 30m      # both (root)
//	go test ./conformance/ -run 'TestSuitePython' -v -timeout 30m
//	go test ./conformance/ -run 'TestSuiteGoStd' -v
//
// Knobs, in the environment:
//
//	SVC_SUITE_PROFILE=compile_v1          run the sandbox side under this profile
//	                                      (to check the harness while the v2
//	                                      allowlists are incomplete)
//	SVC_SUITE_PY_MODULES=test_json,test_re  only these modules of the table
//	SVC_SUITE_GO_PACKAGES="sort bytes encoding/json"  these packages instead
//
// # TestSuitePython
//
// Runs `python3 -m test -v <module>` (Debian's libpython3.11-testsuite,
// /usr/lib/python3.11/test; python3 is /usr/bin/python3) for each module of
// suitePyModules: some modules whole, some with a selection (-m) or with
// their slowest tests left out (-i), as the table says. The host side runs
// each module as uid 65534 in a fresh directory it owns, with the task
// environment (PATH=/usr/local/bin:/usr/bin:/bin, HOME the directory,
// TMPDIR a private directory, LANG=C.UTF-8). The sandbox side runs the
// modules as the steps of a few requests under compile_v2 (one request per
// lane, the lanes concurrently, each module one task, working dir /svc),
// with limits raised to what the heaviest module needs (2 GiB, 512 pids,
// 2 CPUs, an 8 GiB workspace for the large sparse files of test_io and
// test_mmap, 90 s per module on both sides). Four lanes: the slow modules
// mostly sleep. The host runs first, then the sandbox, so the two never
// compete for the CPUs: about a minute each on two busy CPUs (55 s and
// 65 s at a load of 12), 83 modules, some 15,000 passing cases.
//
// Each side's verbose output gives the set of passing test cases (lines
// "test_x (test.test_mod.Class.test_x) ... ok"). The test fails when a
// case passes on the host and not in the sandbox, unless suitePyExclusions
// names it; each module's failures are listed with the last line of their
// traceback, the task's outcome and the calls the allowlist refused
// (Stats.DeniedSyscalls). A case that fails on the host is not compared.
//
// Exclusions are only for cases the sandbox's design rules out: a call of
// the dangerous set, ids the user namespace does not map, no
// pseudo-terminals, a read-only /usr, hard rlimits, the socket families
// compile_v2's rules allow, a host name of its own. Each entry of
// suitePyExclusions says which. Nothing is excluded for a call an
// allowlist is missing: that is what the suite is for.
//
// # TestSuiteGoStd
//
// Runs `/usr/local/go/bin/go test -count=1` of a few standard-library
// packages (suiteGoPackages) on the host (uid 65534, as above) and in the
// sandbox under compile_v2, with GOCACHE and GOPATH under a fresh
// directory (/tmp in the sandbox), GOTOOLCHAIN=local, GOFLAGS=-mod=mod and
// no network (GOPROXY=off). The build cache is cold on both sides, so
// the time is compiling the runtime, testing and their dependencies: 14 s
// a side for the chosen packages, 46 s with sort, bytes and encoding/json
// added (their tests pull in internal/testenv, os/exec, net/...). Both
// sides must pass every package. A prepared build cache would make the
// larger set affordable.

package conformance_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// suitePyModule is one module of CPython's regression tests: its name for
// `python3 -m test`, extra regrtest arguments (a selection with -m, slow
// tests left out with -i) and its host run time in seconds with two idle
// CPUs, which balances the lanes.
type suitePyModule struct {
	name string
	args []string
	secs float64
}

// suitePyModules are the modules a judge's checker or a contestant's
// script leans on, each a few seconds at most. Left out: test_sqlite3 (not
// in Debian's testsuite package), test_logging (22 s, mostly sleeps),
// test_asyncio.test_taskgroups and .test_tasks (6 s and 18 s of timers),
// the rest of test_multiprocessing_* and test_concurrent_futures (minutes).
var suitePyModules = []suitePyModule{
	// Data structures and algorithms.
	{name: "test_bisect", secs: 0.1},
	{name: "test_heapq", secs: 0.2},
	{name: "test_collections", secs: 0.2},
	{name: "test_itertools", secs: 0.9},
	{name: "test_functools", secs: 0.2},
	{name: "test_operator", secs: 0.1},
	{name: "test_array", secs: 0.4},
	{name: "test_dict", secs: 0.2},
	{name: "test_list", secs: 0.1},
	{name: "test_set", secs: 0.9},
	{name: "test_copy", secs: 0.1},
	{name: "test_enum", secs: 0.3},
	{name: "test_dataclasses", secs: 0.2},
	{name: "test_typing", secs: 0.2},
	{name: "test_contextlib", secs: 0.1},
	{name: "test_builtin", secs: 0.2},
	// Numbers.
	{name: "test_math", secs: 0.5},
	{name: "test_long", secs: 0.7},
	{name: "test_int", secs: 0.3},
	{name: "test_float", secs: 0.1},
	{name: "test_decimal", secs: 1.0},
	{name: "test_fractions", secs: 0.1},
	{name: "test_random", secs: 0.4},
	{name: "test_statistics", secs: 3.7},
	// Text and formats.
	{name: "test_re", secs: 0.2},
	{name: "test_string", secs: 0.1},
	{name: "test_textwrap", secs: 0.1},
	{name: "test_unicodedata", secs: 0.3},
	{name: "test_bytes", secs: 0.7},
	{name: "test_struct", secs: 0.2},
	{name: "test_json", secs: 0.7},
	{name: "test_csv", secs: 0.4},
	{name: "test_base64", secs: 0.2},
	{name: "test_binascii", secs: 0.1},
	{name: "test_pickle", secs: 2.1},
	{name: "test_datetime", secs: 2.1},
	{name: "test_time", secs: 2.1},
	{name: "test_locale", secs: 0.2},
	{name: "test_argparse", secs: 2.5},
	{name: "test_hashlib", secs: 0.4},
	// Compression and archives.
	{name: "test_zlib", secs: 0.4},
	{name: "test_bz2", secs: 1.6},
	{name: "test_lzma", secs: 4.3},
	{name: "test_gzip", secs: 0.4},
	{name: "test_zipfile", secs: 3.4},
	{name: "test_tarfile", secs: 2.5},
	// Files and the operating system.
	{name: "test_os", secs: 1.0},
	{name: "test_posix", secs: 0.6},
	{name: "test_stat", secs: 0.1},
	{name: "test_fileio", secs: 0.1},
	{name: "test_io", args: []string{"-i", "*SignalsTest*", "-i", "*daemon_threads_shutdown*"}, secs: 2.0},
	{name: "test_tempfile", secs: 0.5},
	{name: "test_shutil", secs: 0.5},
	{name: "test_pathlib", secs: 1.2},
	{name: "test_glob", secs: 0.6},
	{name: "test_fnmatch", secs: 0.1},
	{name: "test_mmap", secs: 0.1},
	{name: "test_fcntl", secs: 0.1},
	{name: "test_resource", secs: 0.1},
	{name: "test_sys", secs: 0.4},
	{name: "test_pty", secs: 0.1},
	// Events, signals, processes, threads, sockets.
	{name: "test_select", secs: 1.6},
	{name: "test_poll", args: []string{"-i", "test_poll2"}, secs: 1.2},
	{name: "test_epoll", secs: 0.2},
	{name: "test_selectors", args: []string{"-m", "EpollSelectorTestCase", "-m", "PollSelectorTestCase", "-m", "DefaultSelectorTestCase"}, secs: 8},
	{name: "test_signal", args: []string{"-i", "test_siginterrupt_off"}, secs: 18.5},
	{name: "test_threading", secs: 10},
	{name: "test_subprocess", secs: 22},
	{name: "test_socket", secs: 27},
	{name: "test_asyncio.test_events", secs: 8.3},
	{name: "test_asyncio.test_subprocess", secs: 16},
	{name: "test_asyncio.test_streams", secs: 1.7},
	{name: "test_asyncio.test_queues", secs: 0.5},
	{name: "test_asyncio.test_locks", secs: 0.9},
	{name: "test_asyncio.test_futures", secs: 1.7},
	{name: "test_asyncio.test_base_events", secs: 1.5},
	{name: "test_asyncio.test_unix_events", secs: 0.3},
	{name: "test_asyncio.test_runners", secs: 0.4},
	{name: "test_asyncio.test_timeouts", secs: 0.4},
	{name: "test_asyncio.test_sock_lowlevel", secs: 2.5},
	{name: "test_asyncio.test_pep492", secs: 0.6},
	{name: "test_concurrent_futures", args: []string{
		"-m", "FutureTests", "-m", "ProcessPoolForkProcessPoolExecutorTest",
		"-m", "ProcessPoolSpawnProcessPoolExecutorTest", "-m", "ProcessPoolForkExecutorDeadlockTest",
		"-i", "test_map_timeout"}, secs: 12},
	{name: "test_multiprocessing_fork", args: []string{
		"-m", "WithProcessesTestQueue", "-m", "WithProcessesTestLock", "-m", "WithProcessesTestProcess"}, secs: 7},
}

// suitePyExclusion is a test case that cannot pass in any sandbox by
// design: pattern is a path.Match pattern of the test id (which regrtest's
// -i takes as well), reason says why. An excluded case still runs on both
// sides, and only the comparison leaves it out, unless kills is set: a
// case that makes the sandbox kill the task (a call of the dangerous set)
// would take the rest of its module with it, so it is not run on either
// side (regrtest -i).
type suitePyExclusion struct {
	pattern, reason string
	kills           bool
}

// suitePyExclusions are the cases that cannot pass in a sandbox.
var suitePyExclusions = []suitePyExclusion{
	// Calls every profile kills.
	{pattern: "test.test_os.OSErrorTests.test_oserror_filename", kills: true,
		reason: "calls os.chroot, which every profile kills (the dangerous set)"},

	// Ids: the task's user namespace maps its own uid and gid only.
	{pattern: "test.test_subprocess.POSIXProcessTestCase.test_user",
		reason: "setreuid to uid 65534, unmapped in the sandbox's user namespace: EINVAL, where the host's EPERM is what the test accepts"},
	{pattern: "test.test_subprocess.POSIXProcessTestCase.test_group",
		reason: "setregid to gid 65534, unmapped in the sandbox's user namespace: EINVAL, where the host's EPERM is what the test accepts"},

	// Devices: the sandbox's /dev is null, zero, full, random, urandom
	// and links; no /dev/ptmx, no devpts.
	{pattern: "test.test_builtin.PtyTests.*", reason: "needs a pseudo-terminal: the sandbox has no /dev/ptmx"},
	{pattern: "test.test_os.FDInheritanceTests.test_openpty", reason: "needs a pseudo-terminal: the sandbox has no /dev/ptmx"},
	{pattern: "test.test_asyncio.test_events.*_pty*", reason: "needs a pseudo-terminal: the sandbox has no /dev/ptmx"},
	{pattern: "test.test_pty.PtyTest.*", reason: "needs a pseudo-terminal: the sandbox has no /dev/ptmx"},

	// The root filesystem is read-only.
	{pattern: "test.test_pickle.*.test_unpickle_module_race",
		reason: "its cleanup unlinks a missing .pyc in every sys.path directory; on the sandbox's read-only /usr that is EROFS, which the cleanup does not ignore (on the host, ENOENT)"},

	// Limits: the sandbox sets hard rlimits for the file size and CPU time.
	{pattern: "test.test_resource.ResourceTest.test_fsize_ismax",
		reason: "expects RLIMIT_FSIZE unlimited: the sandbox caps it at the workspace size"},
	{pattern: "test.test_resource.ResourceTest.test_setrusage_refcount",
		reason: "raises RLIMIT_CPU above the sandbox's hard limit (the CPU time limit): EPERM"},

	// Socket families: compile_v2's rules allow unix, inet and inet6.
	{pattern: "test.test_socket.GeneralModuleTests.testInterfaceNameIndex",
		reason: "socket.if_nameindex() reads the interfaces through an AF_NETLINK socket, which compile_v2's socket rule refuses (ENOSYS)"},
	{pattern: "test.test_socket.GeneralModuleTests.test_*_ipv6_scopeid_symbolic",
		reason: "calls socket.if_nameindex() (AF_NETLINK, refused by compile_v2's socket rule)"},

	// Names: the sandbox has a UTS namespace of its own and the host's /etc.
	{pattern: "test.test_socket.GeneralModuleTests.testHostnameRes",
		reason: "resolves gethostname(): the sandbox's host name is not in the host's /etc/hosts"},
	{pattern: "test.test_socket.GeneralModuleTests.testSockName",
		reason: "resolves gethostname(): the sandbox's host name is not in the host's /etc/hosts"},
}

// suitePyArgs returns the arguments of `python3 -m test` for m: verbose,
// the module's own selection, and -i for the excluded cases that kill.
func suitePyArgs(m suitePyModule) []string {
	args := append([]string{"-m", "test", "-v"}, m.args...)
	for _, e := range suitePyExclusions {
		if e.kills && strings.HasPrefix(e.pattern, "test."+m.name+".") {
			args = append(args, "-i", e.pattern)
		}
	}
	return append(args, m.name)
}

// suiteLanes is how many modules run at once on each side: the slow
// modules mostly sleep (test_socket: 27 s of wall time, under 1 s of CPU),
// so four lanes keep two CPUs busy.
const suiteLanes = 4

// suitePyWall is the wall time of a module on either side: three times
// the slowest module's (test_socket, 27 s) on a loaded machine. A module
// that hangs (asyncio's, when epoll_wait is refused) costs its lane this
// much.
const suitePyWall = 90 * time.Second

// suiteHostUID is the unprivileged user the host side runs as (nobody).
const suiteHostUID = 65534

// suitePython is Debian's interpreter, the one the sandbox's PATH finds.
const suitePython = "/usr/bin/python3"

// suitePyTestDir holds CPython's regression tests.
const suitePyTestDir = "/usr/lib/python3.11/test"

// TestSuitePython compares the passing cases of CPython's regression tests
// on the host and in the sandbox (see the file's comment).
func TestSuitePython(t *testing.T) {
	svctest.RequireRoot(t)
	if _, err := os.Stat(filepath.Join(suitePyTestDir, "libregrtest")); err != nil {
		t.Skipf("CPython's regression tests are not installed (libpython3.11-testsuite): %v", err)
	}
	mods := suitePySelected(t)
	profile := suiteProfile()
	lanes := suiteSplit(mods, suiteLanes)

	start := time.Now()
	host := suiteHostModules(t, lanes)
	hostWall := time.Since(start)

	sb := suiteSandbox(t, suitePyWall)
	start = time.Now()
	box := suiteSandboxModules(t, sb, profile, lanes)
	boxWall := time.Since(start)
	t.Logf("wall time: host %v, sandbox (%s) %v, %d modules in %d lanes",
		hostWall.Round(time.Second), profile, boxWall.Round(time.Second), len(mods), len(lanes))

	var table strings.Builder
	fmt.Fprintf(&table, "%-32s %5s %5s %4s %11s %11s  %s\n", "module", "host", "box", "miss", "host s/cpu", "box s/cpu", "sandbox task")
	for _, m := range mods {
		h, b := host[m.name], box[m.name]
		hp, bp := suitePassed(suiteResults(h.out)), suitePassed(suiteResults(b.out))
		missing, excluded := suiteMissing(hp, bp)
		fmt.Fprintf(&table, "%-32s %5d %5d %4d %5.1f/%5.1f %5.1f/%5.1f  %s\n", m.name, len(hp), len(bp), len(missing),
			h.wall.Seconds(), h.cpu.Seconds(), b.wall.Seconds(), b.cpu.Seconds(), b.summary())
		t.Run(m.name, func(t *testing.T) {
			if h.err != nil {
				t.Fatalf("host: %v", h.err)
			}
			if len(hp) == 0 {
				t.Fatalf("host: no test passed (exit %d):\n%s", h.exit, suiteTail(h.out, 20))
			}
			for _, id := range excluded {
				t.Logf("excluded: %s", id)
			}
			if len(missing) > 0 {
				t.Errorf("%d of %d tests that pass on the host fail in the sandbox (%s)\n%s",
					len(missing), len(hp), b.summary(), suiteExplain(missing, b, 40))
			}
		})
	}
	t.Logf("pass counts (host, sandbox under %s):\n%s", profile, table.String())
}

// suitePySelected returns the modules of suitePyModules, or those that
// SVC_SUITE_PY_MODULES names.
func suitePySelected(t *testing.T) []suitePyModule {
	only := os.Getenv("SVC_SUITE_PY_MODULES")
	if only == "" {
		return suitePyModules
	}
	var mods []suitePyModule
	for name := range strings.SplitSeq(only, ",") {
		i := slices.IndexFunc(suitePyModules, func(m suitePyModule) bool { return m.name == name })
		if i < 0 {
			t.Fatalf("SVC_SUITE_PY_MODULES: %q is not in suitePyModules", name)
		}
		mods = append(mods, suitePyModules[i])
	}
	return mods
}

// suiteProfile is the sandbox profile of the sandbox side: compile_v2, or
// SVC_SUITE_PROFILE.
func suiteProfile() svc.Profile {
	return cmp.Or(svc.Profile(os.Getenv("SVC_SUITE_PROFILE")), svc.ProfileCompileV2)
}

// suiteSplit deals the modules into n lanes of about equal time, the
// longest first, each to the lane that ends soonest. A lane keeps the
// table's order.
func suiteSplit(mods []suitePyModule, n int) [][]suitePyModule {
	order := slices.Clone(mods)
	slices.SortStableFunc(order, func(a, b suitePyModule) int { return cmp.Compare(b.secs, a.secs) })
	lane := make(map[string]int, len(mods))
	sums := make([]float64, n)
	for _, m := range order {
		i := slices.Index(sums, slices.Min(sums))
		lane[m.name] = i
		sums[i] += m.secs
	}
	lanes := make([][]suitePyModule, n)
	for _, m := range mods {
		lanes[lane[m.name]] = append(lanes[lane[m.name]], m)
	}
	return slices.DeleteFunc(lanes, func(l []suitePyModule) bool { return len(l) == 0 })
}

// suiteRun is what one run of a module gave on one side.
type suiteRun struct {
	out  string // stdout and stderr
	exit int
	wall time.Duration
	cpu  time.Duration // of all its processes
	err  error         // the run itself failed (host) or did not complete (sandbox)
	// Sandbox only.
	outcome svc.Outcome
	denied  map[string]int64
}

// summary is the sandbox task's outcome and refused calls, for a report.
func (r suiteRun) summary() string {
	if r.err != nil {
		return r.err.Error()
	}
	s := fmt.Sprintf("%s %d", r.outcome, r.exit)
	if len(r.denied) > 0 {
		var calls []string
		for _, name := range slices.Sorted(maps.Keys(r.denied)) {
			calls = append(calls, fmt.Sprintf("%s:%d", name, r.denied[name]))
		}
		s += ", denied " + strings.Join(calls, " ")
	}
	return s
}

// suiteHostModules runs the lanes' modules on the host, the lanes
// concurrently, each module in a fresh directory.
func suiteHostModules(t *testing.T, lanes [][]suitePyModule) map[string]suiteRun {
	var (
		mu   sync.Mutex
		runs = make(map[string]suiteRun)
		wg   sync.WaitGroup
	)
	for _, lane := range lanes {
		wg.Go(func() {
			for _, m := range lane {
				dir := suiteHostDir(t)
				r := suiteHostRun(dir, suiteHostEnv(dir), suitePyWall, suitePython, suitePyArgs(m)...)
				mu.Lock()
				runs[m.name] = r
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return runs
}

// suiteSandbox returns a sandbox whose limits fit the heaviest module and
// a cold Go build: the suites measure what the allowlist lets through,
// not the limits. wall is the wall time of a task: it bounds what a module
// that hangs costs.
func suiteSandbox(t *testing.T, wall time.Duration) *svc.Sandbox {
	return svctest.New(t, svc.Config{
		Limits: svc.Limits{
			MemoryMax:          2 * svc.GiB,
			PidsMax:            512,
			CPUMax:             svc.CPUMax{Quota: 200000, Period: 100000},
			WallTimeout:        wall,
			CPUTimeLimit:       5 * time.Minute,
			OverallTimeout:     20 * time.Minute,
			OutputLimit:        8 * svc.MiB,
			RequestOutputLimit: 64 * svc.MiB,
			MaxSteps:           len(suitePyModules),
		},
		WorkspaceSize:   8 * svc.GiB,
		AllowedProfiles: svc.Profiles(),
	})
}

// suiteSandboxModules runs each lane as one request, one step a module,
// the lanes concurrently.
func suiteSandboxModules(t *testing.T, sb *svc.Sandbox, profile svc.Profile, lanes [][]suitePyModule) map[string]suiteRun {
	var (
		mu   sync.Mutex
		runs = make(map[string]suiteRun)
		wg   sync.WaitGroup
	)
	for _, lane := range lanes {
		wg.Go(func() {
			req := &svc.Request{}
			for _, m := range lane {
				req.Steps = append(req.Steps, svc.Single(svc.Task{
					Cmd:            "python3",
					Args:           suitePyArgs(m),
					SandboxProfile: profile,
				}))
			}
			resp, err := sb.Run(context.Background(), req)
			mu.Lock()
			defer mu.Unlock()
			for i, m := range lane {
				if err != nil {
					runs[m.name] = suiteRun{err: fmt.Errorf("sandbox: %w", err)}
					continue
				}
				runs[m.name] = suiteBoxRun(resp.Results[i].Results[0])
			}
		})
	}
	wg.Wait()
	return runs
}

// suiteBoxRun turns a sandbox result into a suiteRun.
func suiteBoxRun(r svc.Result) suiteRun {
	run := suiteRun{
		out:     r.Stdout + "\n" + r.Stderr,
		exit:    r.ExitCode,
		wall:    time.Duration(r.Stats.WallTimeMs) * time.Millisecond,
		outcome: r.Outcome,
		denied:  r.Stats.DeniedSyscalls,
	}
	if u := r.Stats.CPUUsageUsec; u != nil {
		run.cpu = time.Duration(*u) * time.Microsecond
	}
	if !r.Outcome.Ran() {
		run.err = fmt.Errorf("sandbox: %s: %s", r.Outcome, r.Error)
	}
	return run
}

// suiteHostDir makes a fresh directory owned by suiteHostUID, with a
// private tmp inside for TMPDIR, removed at cleanup.
func suiteHostDir(t *testing.T) string {
	t.Helper()
	// Not t.TempDir: its parent is 0700 to anyone but root.
	dir, err := os.MkdirTemp("", "svc-suite-")
	if err != nil {
		t.Fatalf("host dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatalf("host dir: %v", err)
	}
	for _, p := range []string{dir, tmp} {
		if err := os.Chown(p, suiteHostUID, suiteHostUID); err != nil {
			t.Fatalf("host dir: %v", err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("host dir: %v", err)
	}
	return dir
}

// suiteHostEnv is the task environment on the host, for a run in dir,
// plus extra.
func suiteHostEnv(dir string, extra ...string) []string {
	return append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + dir,
		"TMPDIR=" + filepath.Join(dir, "tmp"),
		"LANG=C.UTF-8",
	}, extra...)
}

// suiteHostRun runs name with args in dir as suiteHostUID, with env only,
// in a process group of its own that is killed after timeout.
func suiteHostRun(dir string, env []string, timeout time.Duration, name string, args ...string) suiteRun {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: suiteHostUID, Gid: suiteHostUID, Groups: []uint32{}},
		Setpgid:    true,
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	r := suiteRun{out: out.String(), wall: time.Since(start), exit: -1}
	if ps := cmd.ProcessState; ps != nil {
		r.exit = ps.ExitCode()
		r.cpu = ps.UserTime() + ps.SystemTime()
	}
	if exit := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exit) {
		r.err = fmt.Errorf("%s: %w", name, err)
	} else if ctx.Err() != nil {
		r.err = fmt.Errorf("%s: killed after %v", name, timeout)
	}
	return r
}

// Lines of unittest's verbose output.
var (
	// suiteCaseRe is a test case and what follows " ... ": its result, or
	// nothing when the result comes on a later line. A test that prints
	// puts its own output (timings, "0.01s ") around the result.
	suiteCaseRe = regexp.MustCompile(`^(?:[\d.]+s )*(\S+) \(([\w.]*)\)(?: \.\.\. ?(.*))?$`)
	// suiteDescRe is a case's description line (its docstring's first
	// line, or a doctest's name) after a line of suiteCaseRe without a
	// result.
	suiteDescRe = regexp.MustCompile(`^(.*) \.\.\. ?(.*)$`)
	// suiteTimingRe are the timings some tests print before the result.
	suiteTimingRe = regexp.MustCompile(`^(?:[\d.]+s ?)+`)
	// suiteResultRe is a result alone on its line, after the case's own
	// output.
	suiteResultRe = regexp.MustCompile(`^(ok|FAIL|ERROR|skipped .*|expected failure|unexpected success)$`)
	// suiteFailRe heads the traceback of a failed case.
	suiteFailRe = regexp.MustCompile(`^(ERROR|FAIL): (\S+) \(([\w.]*)\)`)
)

// suiteResults returns the result of each case the verbose output of
// `python3 -m test -v` reports: "ok", "FAIL", "ERROR", "skipped '<why>'",
// "expected failure", ... The id is the case's dotted name
// (test.test_json.test_decode.TestCDecode.test_float); a doctest, whose
// name is empty, is "doctest:" and its description.
func suiteResults(out string) map[string]string {
	results := make(map[string]string)
	var (
		head    string // a case line with no result yet: its id
		pending string // a case whose result is on a later line
	)
	result := func(id, rest string) {
		// Anything but a result is the case's own output: the result
		// comes on a later line.
		if r := strings.TrimSpace(suiteTimingRe.ReplaceAllString(rest, "")); suiteResultRe.MatchString(r) {
			results[id] = r
		} else {
			pending = id
		}
	}
	for line := range strings.SplitSeq(out, "\n") {
		if m := suiteCaseRe.FindStringSubmatch(line); m != nil {
			id := cmp.Or(m[2], m[1])
			head, pending = "", ""
			if !strings.Contains(line, " ... ") && !strings.HasSuffix(line, " ...") {
				head = id
				continue
			}
			result(id, m[3])
			continue
		}
		if head != "" {
			if m := suiteDescRe.FindStringSubmatch(line); m != nil {
				id := head
				if !strings.Contains(id, ".") {
					id = "doctest:" + m[1]
				}
				head = ""
				result(id, m[2])
				continue
			}
		}
		if pending != "" {
			r := strings.TrimSpace(suiteTimingRe.ReplaceAllString(line, ""))
			if suiteResultRe.MatchString(r) {
				results[pending] = r
				pending = ""
			}
		}
	}
	return results
}

// suitePassed returns the ids of the cases results reports as passed.
func suitePassed(results map[string]string) map[string]bool {
	passed := make(map[string]bool)
	for id, r := range results {
		if r == "ok" {
			passed[id] = true
		}
	}
	return passed
}

// suiteMissing returns the ids that pass on the host and not in the
// sandbox, sorted, less those suitePyExclusions names, and those.
func suiteMissing(host, box map[string]bool) (missing, excluded []string) {
	for _, id := range slices.Sorted(maps.Keys(host)) {
		if box[id] {
			continue
		}
		if suiteExcluded(id) != "" {
			excluded = append(excluded, id)
			continue
		}
		missing = append(missing, id)
	}
	return missing, excluded
}

// suiteExcluded returns the reason suitePyExclusions gives for id, or "".
func suiteExcluded(id string) string {
	for _, e := range suitePyExclusions {
		if ok, _ := path.Match(e.pattern, id); ok {
			return e.pattern + ": " + e.reason
		}
	}
	return ""
}

// suiteFailures maps each failed case of a verbose output to the last
// line of its traceback (the exception).
func suiteFailures(out string) map[string]string {
	fails := make(map[string]string)
	var id, last string
	flush := func() {
		if id != "" {
			fails[id] = cmp.Or(fails[id], last)
		}
		id, last = "", ""
	}
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case suiteFailRe.MatchString(line):
			flush()
			m := suiteFailRe.FindStringSubmatch(line)
			id = cmp.Or(m[3], m[2])
		case strings.HasPrefix(line, "=====") || strings.HasPrefix(line, "Ran "):
			flush()
		case id != "" && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "-----"):
			last = strings.TrimSpace(line)
		}
	}
	flush()
	return fails
}

// suiteExplain lists at most n missing ids, each with its result in the
// sandbox: the last line of its traceback (the exception) when it failed.
// When the module did not end by itself, or passed nothing at all, it
// adds the output's tail, which says where it stopped.
func suiteExplain(missing []string, r suiteRun, n int) string {
	results, fails := suiteResults(r.out), suiteFailures(r.out)
	var b strings.Builder
	for i, id := range missing {
		if i == n {
			fmt.Fprintf(&b, "  ... and %d more\n", len(missing)-n)
			break
		}
		why := cmp.Or(results[id], "no result (crashed, killed or not run)")
		if f := fails[id]; f != "" {
			why += ": " + f
		}
		fmt.Fprintf(&b, "  %s: %s\n", id, why)
	}
	if r.outcome != svc.OutcomeExited || len(suitePassed(results)) == 0 {
		fmt.Fprintf(&b, "sandbox output, last lines:\n%s", suiteTail(r.out, 25))
	}
	return b.String()
}

// suiteTail returns the last n non-empty lines of out.
func suiteTail(out string, n int) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// suiteGoPackages are the standard-library packages TestSuiteGoStd tests:
// the cheapest to build cold that a judge's Go solutions import.
var suiteGoPackages = []string{"strings", "strconv", "container/heap", "container/list", "unicode/utf8"}

// suiteGo is the Go toolchain, by full path: it is not on the task PATH.
const suiteGo = "/usr/local/go/bin/go"

// suiteGoOKRe is the line of a package whose tests pass.
var suiteGoOKRe = regexp.MustCompile(`(?m)^ok  \t(\S+)\t`)

// TestSuiteGoStd runs go test of suiteGoPackages on the host and in the
// sandbox; both must pass (see the file's comment).
func TestSuiteGoStd(t *testing.T) {
	svctest.RequireRoot(t)
	if _, err := os.Stat(suiteGo); err != nil {
		t.Skipf("no Go toolchain: %v", err)
	}
	pkgs := suiteGoPackages
	if s := os.Getenv("SVC_SUITE_GO_PACKAGES"); s != "" {
		pkgs = strings.Fields(s)
	}
	args := append([]string{"test", "-count=1"}, pkgs...)
	goEnv := func(root string) []string {
		return []string{
			"GOCACHE=" + root + "/gocache", "GOPATH=" + root + "/gopath",
			"GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOPROXY=off",
		}
	}

	dir := suiteHostDir(t)
	host := suiteHostRun(dir, suiteHostEnv(dir, goEnv(dir)...), 10*time.Minute, suiteGo, args...)
	t.Logf("host: %v, exit %d\n%s", host.wall.Round(time.Second), host.exit, strings.TrimSpace(host.out))
	if host.err != nil || host.exit != 0 {
		t.Fatalf("host: go test failed (%v, exit %d)", host.err, host.exit)
	}

	sb := suiteSandbox(t, 10*time.Minute)
	env := make(map[string]string)
	for _, kv := range goEnv("/tmp") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	profile := suiteProfile()
	start := time.Now()
	resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{
		Cmd: suiteGo, Args: args, Env: env, SandboxProfile: profile,
	})}})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	box := suiteBoxRun(resp.Results[0].Results[0])
	t.Logf("sandbox (%s): %v (request %v), %s\n%s", profile, box.wall.Round(time.Second),
		time.Since(start).Round(time.Second), box.summary(), strings.TrimSpace(box.out))

	hostOK, boxOK := suiteGoPassed(host.out), suiteGoPassed(box.out)
	for _, pkg := range pkgs {
		if hostOK[pkg] && !boxOK[pkg] {
			t.Errorf("%s: passes on the host, not in the sandbox", pkg)
		}
	}
	if box.err != nil || box.exit != 0 {
		t.Errorf("sandbox: go test failed: %s", box.summary())
	}
}

// suiteGoPassed returns the packages go test's output reports as passed.
func suiteGoPassed(out string) map[string]bool {
	ok := make(map[string]bool)
	for _, m := range suiteGoOKRe.FindAllStringSubmatch(out, -1) {
		ok[m[1]] = true
	}
	return ok
}

// TestSuiteResults pins the reading of unittest's verbose output, in the
// shapes CPython 3.11's regrtest prints.
func TestSuiteResults(t *testing.T) {
	out := strings.Join([]string{
		"0:00:00 load avg: 0.98 [1/1] test_json",
		"json ()",
		"Doctest: json ... ok",
		"test_float (test.test_json.test_decode.TestCDecode.test_float) ... ok",
		"test_a (test.m.C.test_a) ... 0.01s ok",
		"0.00s test_b (test.m.C.test_b) ... skipped 'no pty'",
		"test_c (test.m.C.test_c)",
		"The docstring of test_c ... ok",
		"test_d (test.m.C.test_d) ... Tested current directory length: 2000",
		"ok",
		"test_e (test.m.C.test_e) ... ERROR",
		"test_f (test.m.C.test_f) ... FAIL",
		"test_g (test.m.C.test_g) ... expected failure",
		"",
		"======================================================================",
		"ERROR: test_e (test.m.C.test_e)",
		"----------------------------------------------------------------------",
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3.11/test/m.py", line 1, in test_e`,
		"OSError: [Errno 38] Function not implemented",
		"",
		"======================================================================",
		"FAIL: test_f (test.m.C.test_f) (x=1)",
		"----------------------------------------------------------------------",
		"AssertionError: 1 != 2",
		"",
		"----------------------------------------------------------------------",
		"Ran 8 tests in 0.01s",
	}, "\n")
	want := map[string]string{
		"doctest:Doctest: json":                             "ok",
		"test.test_json.test_decode.TestCDecode.test_float": "ok",
		"test.m.C.test_a":                                   "ok",
		"test.m.C.test_b":                                   "skipped 'no pty'",
		"test.m.C.test_c":                                   "ok",
		"test.m.C.test_d":                                   "ok",
		"test.m.C.test_e":                                   "ERROR",
		"test.m.C.test_f":                                   "FAIL",
		"test.m.C.test_g":                                   "expected failure",
	}
	if got := suiteResults(out); !maps.Equal(got, want) {
		t.Errorf("suiteResults:\n got %v\nwant %v", got, want)
	}
	wantFails := map[string]string{
		"test.m.C.test_e": "OSError: [Errno 38] Function not implemented",
		"test.m.C.test_f": "AssertionError: 1 != 2",
	}
	if got := suiteFailures(out); !maps.Equal(got, wantFails) {
		t.Errorf("suiteFailures:\n got %v\nwant %v", got, wantFails)
	}
}

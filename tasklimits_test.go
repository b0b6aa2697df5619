package svc_test

// Per-task limits (Task.Limits) on the real kernel: each lowered limit
// ends a task as the service's does, with the same outcome, and a cell
// built ahead with the request's limits gives them back to the next task.
// The tests are named TestLimit* so that the cgroup v2 lane
// (TestCgroupV2Guest) runs them too.

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// limitsProbeSrc prints its stack and CPU rlimits (soft and hard), then forks
// up to 16 children that wait, counts the forks that succeeded, ends the
// children, and allocates and touches argv[1] MiB.
const limitsProbeSrc = `#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct rlimit s, c;
	getrlimit(RLIMIT_STACK, &s);
	getrlimit(RLIMIT_CPU, &c);
	printf("stack %llu %llu cpu %llu %llu\n", (unsigned long long)s.rlim_cur, (unsigned long long)s.rlim_max,
	       (unsigned long long)c.rlim_cur, (unsigned long long)c.rlim_max);
	pid_t kids[16];
	int forks = 0;
	for (int i = 0; i < 16; i++) {
		pid_t p = fork();
		if (p < 0)
			break;
		if (p == 0) {
			pause();
			_exit(0);
		}
		kids[forks++] = p;
	}
	for (int i = 0; i < forks; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("forks %d\n", forks);
	fflush(stdout);
	size_t n = (size_t)atol(argv[1]) << 20;
	volatile char *p = malloc(n);
	if (!p)
		return 2;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	puts("alloc ok");
	return 0;
}
`

// limited returns task with limits l.
func limited(task svc.Task, l svc.TaskLimits) svc.Task {
	task.Limits = l
	return task
}

func TestLimitTaskCPUTime(t *testing.T) {
	const limit = 300 * time.Millisecond
	bin := buildC(t, spinSrc, "-O1")
	// The service's limits are the defaults (5 s of CPU); the task's is
	// 300 ms.
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow}})
	l := svc.TaskLimits{CPUTimeLimit: limit}
	res := run(t, sb, svc.Single(limited(cTask(bin), l)), svc.Single(limited(cTask(bin, "3"), l))).Results
	for i, name := range []string{"busy loop", "three forked busy loops"} {
		r := res[i].Results[0]
		u := statVal(t, "cpu_usage_usec", r.Stats.CPUUsageUsec)
		t.Logf("%s: wall %d ms, cpu %d usec (limit %v)", name, r.Stats.WallTimeMs, u, limit)
		expectSignal(t, r, svc.OutcomeCPUTimeExceeded, syscall.SIGKILL)
		// As TestLimitCPUTime's bounds for 1 s: the kill comes at the
		// first check past the limit, a few ms late on a busy host.
		if u < limit.Microseconds()*95/100 || u > limit.Microseconds()+700_000 {
			t.Errorf("%s: cpu_usage_usec %d, want about %d", name, u, limit.Microseconds())
		}
		if ms := r.Stats.WallTimeMs; ms > 10000 {
			t.Errorf("%s: wall_time_ms %d: the CPU limit of %v took too long", name, ms, limit)
		}
	}
	// The RLIMIT_CPU backstop follows: ceil(0.3 s) + 1 s, hard 1 s more;
	// the service's 5 s gives 6 and 7.
	resp := run(t, sb, svc.Single(limited(sh("ulimit -t; ulimit -Ht"), l)), svc.Single(sh("ulimit -t; ulimit -Ht")))
	for i, want := range []string{"2\n3\n", "6\n7\n"} {
		r := resp.Results[i].Results[0]
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != want {
			t.Errorf("step %d: RLIMIT_CPU soft and hard %q, want %q", i, r.Stdout, want)
		}
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestLimitTaskMemory(t *testing.T) {
	const limit = 64 * svc.MiB
	bin := buildC(t, allocSrc, "-O1")
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow, CPUTimeLimit: slow}}) // 256 MiB
	l := svc.TaskLimits{MemoryMax: limit}
	// 128 MiB: above the task's limit, below the service's.
	res := run(t, sb, svc.Single(limited(cTask(bin, "128"), l)), svc.Single(cTask(bin, "128")), svc.Single(limited(cTask(bin, "32"), l))).Results
	expectOOM(t, res[0].Results[0], limit)
	for i, name := range []string{"128 MiB under the service's limit", "32 MiB under the task's"} {
		r := res[i+1].Results[0]
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != "survived\n" {
			t.Errorf("%s: stdout %q", name, r.Stdout)
		}
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// TestLimitTaskStackEveryProfile: a lowered memory limit is the task's
// stack limit under every profile, with the profile's filter installed
// before the task process's release (the cell of a later step is built
// with it) or after, and with the shells' base filter (the v2 profiles
// alone) or without (all four).
func TestLimitTaskStackEveryProfile(t *testing.T) {
	l := svc.TaskLimits{MemoryMax: 64 * svc.MiB, CPUTimeLimit: 300 * time.Millisecond}
	const script = "ulimit -s; ulimit -Hs; ulimit -t; ulimit -Ht"
	for _, tc := range []struct {
		name    string
		allowed []svc.Profile
	}{
		{"v2 profiles", []svc.Profile{svc.ProfileCompileV2, svc.ProfileNativeV2}},
		{"all profiles", svc.Profiles()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t, svc.Config{AllowedProfiles: tc.allowed})
			for _, p := range tc.allowed {
				task := sh(script)
				task.SandboxProfile = p
				for range 3 {
					resp := run(t, sb, svc.Single(limited(task, l)), svc.Single(task), svc.Single(limited(task, l)))
					for i, want := range []string{"65536\n65536\n2\n3\n", "262144\n262144\n6\n7\n", "65536\n65536\n2\n3\n"} {
						r := resp.Results[i].Results[0]
						expect(t, r, svc.OutcomeExited, 0)
						if r.Stdout != want {
							t.Errorf("%s, step %d: stack and CPU rlimits %q, want %q", p, i, r.Stdout, want)
						}
					}
				}
			}
			assertClean(t, sb)
			assertNoCgroups(t, sb)
		})
	}
}

func TestLimitTaskPids(t *testing.T) {
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow}}) // 64 pids
	r := one(t, sb, limited(cTask(buildC(t, forkBombSrc, "-O1")), svc.TaskLimits{PidsMax: 8}))
	expect(t, r, svc.OutcomePidsLimit, 1)
	if n := statVal(t, "pids_limit_hit_count", r.Stats.PidsLimitHitCount); n <= 0 {
		t.Errorf("pids_limit_hit_count %d", n)
	}
	if r.Stats.PidsPeak != nil && (*r.Stats.PidsPeak < 2 || *r.Stats.PidsPeak > 8) {
		t.Errorf("pids_peak %d, want 2..8 (the task's pids_max 8)", *r.Stats.PidsPeak)
	}
	// One process: the task's own, which may exec but not fork.
	r = one(t, sb, limited(sh("exec echo alone"), svc.TaskLimits{PidsMax: 1}))
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "alone\n" {
		t.Errorf("pids_max 1: stdout %q", r.Stdout)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestLimitTaskWallTimeout(t *testing.T) {
	const limit = 300 * time.Millisecond
	sb := newSandbox(t, svc.Config{}) // 10 s
	var r svc.Result
	d := timeRun(func() { r = one(t, sb, limited(sh("sleep 30 & wait"), svc.TaskLimits{WallTimeout: limit})) })
	expectSignal(t, r, svc.OutcomeTimedOut, syscall.SIGKILL)
	if ms := r.Stats.WallTimeMs; ms < limit.Milliseconds() || ms > 4000 {
		t.Errorf("wall_time_ms %d of a task killed at its wall timeout of %v", ms, limit)
	}
	if d > 5*time.Second {
		t.Errorf("Run took %v under a task wall timeout of %v", d, limit)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

func TestLimitTaskOutput(t *testing.T) {
	const limit = 1000
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow}}) // 1 MiB
	l := svc.TaskLimits{OutputLimit: limit}
	r := one(t, sb, limited(svc.Task{Cmd: "yes"}, l))
	expectSignal(t, r, svc.OutcomeOutputLimit, syscall.SIGKILL)
	if !r.StdoutTruncated || r.StderrTruncated || r.Stdout != strings.Repeat("y\n", limit/2) {
		t.Errorf("stdout %d bytes truncated %v, stderr truncated %v; want %d bytes truncated", len(r.Stdout), r.StdoutTruncated, r.StderrTruncated, limit)
	}
	r = one(t, sb, limited(sh("yes >&2"), l))
	expectSignal(t, r, svc.OutcomeOutputLimit, syscall.SIGKILL)
	if r.StdoutTruncated || !r.StderrTruncated || len(r.Stderr) != limit {
		t.Errorf("stderr %d bytes truncated %v; want %d bytes truncated", len(r.Stderr), r.StderrTruncated, limit)
	}
	// Within the task's limit: whole.
	r = one(t, sb, limited(sh("head -c 1000 /dev/zero | tr '\\0' a"), l))
	expect(t, r, svc.OutcomeExited, 0)
	if len(r.Stdout) != limit || r.StdoutTruncated {
		t.Errorf("1000 bytes under a limit of 1000: %d bytes, truncated %v", len(r.Stdout), r.StdoutTruncated)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// TestLimitTaskNoLeak: cells are built ahead with the request's limits,
// and shells run task after task; a task with lowered limits leaves none
// of them to the next task of its request, nor to the next request.
func TestLimitTaskNoLeak(t *testing.T) {
	bin := buildC(t, limitsProbeSrc, "-O1")
	// 256 MiB, 64 pids; CPU times that even the emulated guest of the
	// v2 lane does not reach.
	sb := newSandbox(t, svc.Config{Limits: svc.Limits{WallTimeout: slow, CPUTimeLimit: slow}})
	l := svc.TaskLimits{MemoryMax: 64 * svc.MiB, PidsMax: 4, CPUTimeLimit: 10 * time.Second}
	low, full := limited(cTask(bin, "16"), l), cTask(bin, "128")
	const (
		wantLow  = "stack 67108864 67108864 cpu 11 12\nforks 3\nalloc ok\n"
		wantFull = "stack 268435456 268435456 cpu 61 62\nforks 16\nalloc ok\n"
	)
	check := func(t *testing.T, resp *svc.Response, want ...string) {
		t.Helper()
		i := 0
		for s, sr := range resp.Results {
			for j, r := range sr.Results {
				expect(t, r, svc.OutcomeExited, 0)
				if r.Stdout != want[i] {
					t.Errorf("steps[%d][%d]: %q, want %q", s, j, r.Stdout, want[i])
				}
				i++
			}
		}
	}
	for range 3 {
		check(t, run(t, sb, svc.Single(low), svc.Single(full), svc.Single(low), svc.Parallel(low, full, low, full)),
			wantLow, wantFull, wantLow, wantLow, wantFull, wantLow, wantFull)
		check(t, run(t, sb, svc.Single(full), svc.Parallel(full, full)), wantFull, wantFull, wantFull)
	}
	assertClean(t, sb)
	assertNoCgroups(t, sb)
}

// TestLimitTaskRefused: a request that raises a limit, or gives a bad
// one, runs nothing, not even its steps before the one at fault: the step
// cache, which would have stored them, has nothing.
func TestLimitTaskRefused(t *testing.T) {
	sb := newCacheSandbox(t, newCache(t, svc.CacheConfig{}), svc.Config{})
	first := svc.Single(sh("echo ran"))
	for _, tc := range []struct {
		l    svc.TaskLimits
		code svc.Code
		msg  string
	}{
		{svc.TaskLimits{MemoryMax: 512 * svc.MiB}, svc.CodeLimitsExceeded, "steps[1].limits.memory_max_bytes: 536870912 exceeds the service's 268435456"},
		{svc.TaskLimits{WallTimeout: time.Minute}, svc.CodeLimitsExceeded, "steps[1].limits.wall_timeout_ms: 60000 exceeds the service's 10000"},
		{svc.TaskLimits{PidsMax: -1}, svc.CodeInvalidRequest, "steps[1].limits.pids_max: must be positive, got -1"},
		{svc.TaskLimits{MemoryMax: svc.MiB}, svc.CodeInvalidRequest, "steps[1].limits.memory_max_bytes: must be at least 4194304 (4 MiB), got 1048576"},
	} {
		_, err := sb.Run(context.Background(), cached(first, svc.Single(limited(sh("echo ran"), tc.l))))
		var e *svc.Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Msg != tc.msg {
			t.Errorf("%+v: %v, want %s %q", tc.l, err, tc.code, tc.msg)
		}
	}
	wantSummary(t, runReq(t, sb, cached(first)), 0, 1)
	assertClean(t, sb)
}

// TestLimitTaskCacheKey: the limits a task runs under are part of its
// step's key. The same task under two lowered limits is two layers; under
// limits equal to the service's, it is the layer of the task without.
func TestLimitTaskCacheKey(t *testing.T) {
	sb := newCacheSandbox(t, newCache(t, svc.CacheConfig{}), svc.Config{})
	task := sh("echo $$")
	step := func(l svc.TaskLimits) svc.Step { return svc.Single(limited(task, l)) }
	one, two := svc.TaskLimits{CPUTimeLimit: time.Second}, svc.TaskLimits{CPUTimeLimit: 2 * time.Second}
	wantSummary(t, runReq(t, sb, cached(step(one))), 0, 1)
	wantSummary(t, runReq(t, sb, cached(step(two))), 0, 1)
	wantSummary(t, runReq(t, sb, cached(step(one))), 1, 0)
	wantSummary(t, runReq(t, sb, cached(step(two))), 1, 0)

	wantSummary(t, runReq(t, sb, cached(step(svc.TaskLimits{}))), 0, 1)
	for _, same := range []svc.TaskLimits{
		{CPUTimeLimit: sb.Limits().CPUTimeLimit},
		{WallTimeout: sb.Limits().WallTimeout, MemoryMax: sb.Limits().MemoryMax, PidsMax: sb.Limits().PidsMax, OutputLimit: sb.Limits().OutputLimit},
	} {
		wantSummary(t, runReq(t, sb, cached(step(same))), 1, 0)
	}
	assertClean(t, sb)
}

// BenchmarkRunTrueTaskLimits is BenchmarkRunTrue with lowered memory,
// pids and CPU time limits: the cost of a task's own limits (two cgroup
// writes and two rlimit records) over the common path.
func BenchmarkRunTrueTaskLimits(b *testing.B) {
	sb := newSandbox(b, svc.Config{})
	l := svc.TaskLimits{MemoryMax: 64 * svc.MiB, PidsMax: 8, CPUTimeLimit: time.Second}
	benchRequest(b, sb, &svc.Request{Steps: []svc.Step{svc.Single(limited(svc.Task{Cmd: "/bin/true"}, l))}})
}

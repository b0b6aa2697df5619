package svc_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
)

// refuserSrc makes argv[1] times a call no allowlist lists
// (io_pgetevents), clone3 (refused by every profile's rule), and with
// argv[2] "netlink" a socket of a family compile_v2 refuses, with "pidfd"
// pidfd_open (allowed to compile_v2 only), or with "fork" the first call
// again in a child. It prints what each call got.
const refuserSrc = `#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
	printf("%s %s\n", what, r < 0 ? strerrorname_np(errno) : "ok");
}

int main(int argc, char **argv)
{
	for (int i = atoi(argv[1]); i > 0; i--)
		show("io_pgetevents", syscall(SYS_io_pgetevents, 0, 0, 0, 0, 0, 0));
	show("clone3", syscall(SYS_clone3, NULL, 0));
	if (argc > 2 && !strcmp(argv[2], "pidfd"))
		show("pidfd_open", syscall(SYS_pidfd_open, getpid(), 0));
	if (argc > 2 && !strcmp(argv[2], "netlink"))
		show("netlink", socket(AF_NETLINK, SOCK_RAW, 0));
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			show("child io_pgetevents", syscall(SYS_io_pgetevents, 0, 0, 0, 0, 0, 0));
			fflush(stdout);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	return 0;
}
`

// A refused call is never silent: each result's stats count, by name, the
// calls a v2 allowlist refused with ENOSYS in all the task's processes; a
// call refused by clone3's rule is not counted; v1 profiles refuse
// nothing. With whole filters (each task process's listener) and with
// layered ones (the shell's); a replayed result carries the count.
func TestDeniedSyscalls(t *testing.T) {
	for _, set := range filterSets {
		t.Run(set.name, func(t *testing.T) {
			sb := newSandbox(t, svc.Config{AllowedProfiles: set.profiles})
			build := svc.Single(svc.Task{
				Cmd: "gcc", Args: []string{"-O1", "-o", "refuser", "refuser.c"},
				Files: map[string]svc.File{"refuser.c": {Content: refuserSrc}},
			})
			type check struct {
				task   svc.Task
				denied map[string]int64
				stdout string // a substring
			}
			task := func(p svc.Profile, args ...string) svc.Task {
				return svc.Task{Cmd: "./refuser", Args: args, SandboxProfile: p}
			}
			checks := []check{
				{task(svc.ProfileCompileV2, "3", "netlink"), map[string]int64{"io_pgetevents": 3, "socket": 1},
					"io_pgetevents ENOSYS\nio_pgetevents ENOSYS\nio_pgetevents ENOSYS\nclone3 ENOSYS\nnetlink ENOSYS\n"},
				{task(svc.ProfileCompileV2, "1", "fork"), map[string]int64{"io_pgetevents": 2}, "child io_pgetevents ENOSYS"},
				{task(svc.ProfileNativeV2, "2"), map[string]int64{"io_pgetevents": 2}, "io_pgetevents ENOSYS\nio_pgetevents ENOSYS\nclone3 ENOSYS\n"},
				// A call the profiles differ on: the listener decides.
				{task(svc.ProfileCompileV2, "0", "pidfd"), map[string]int64{}, "pidfd_open ok"},
				{task(svc.ProfileNativeV2, "0", "pidfd"), map[string]int64{"pidfd_open": 1}, "pidfd_open ENOSYS"},
				{svc.Task{Cmd: "true", SandboxProfile: svc.ProfileCompileV2}, map[string]int64{}, ""},
				{svc.Task{Cmd: "true", SandboxProfile: svc.ProfileNativeV2}, map[string]int64{}, ""},
			}
			if set.name == "whole" {
				checks = append(checks,
					check{task(svc.ProfileCompileV1, "2", "netlink"), map[string]int64{}, "io_pgetevents EINVAL\nio_pgetevents EINVAL\nclone3 ENOSYS\nnetlink ok\n"},
					check{task(svc.ProfileNativeV1, "1"), map[string]int64{}, "io_pgetevents EINVAL\n"})
			}
			steps := []svc.Step{build}
			for _, c := range checks {
				steps = append(steps, svc.Single(c.task))
			}
			resp := run(t, sb, steps...)
			expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
			for i, c := range checks {
				r := resp.Results[1+i].Results[0]
				expect(t, r, svc.OutcomeExited, 0)
				got := r.Stats.DeniedSyscalls
				if got == nil || !maps.Equal(got, c.denied) {
					t.Errorf("%s %v under %s: denied_syscalls %v, want %v", c.task.Cmd, c.task.Args, c.task.SandboxProfile, got, c.denied)
				}
				if !strings.Contains(r.Stdout, c.stdout) {
					t.Errorf("%s %v under %s: stdout %q, want %q in it", c.task.Cmd, c.task.Args, c.task.SandboxProfile, r.Stdout, c.stdout)
				}
			}
			// On the wire: a map by name, {} when none.
			b, err := json.Marshal(resp.Results[3].Results[0]) // native_v2 2
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"denied_syscalls":{"io_pgetevents":2}`) {
				t.Errorf("native_v2 result: %s", b)
			}
			if b, _ = json.Marshal(resp.Results[6].Results[0]); !strings.Contains(string(b), `"denied_syscalls":{}`) { // true
				t.Errorf("/bin/true result: %s", b)
			}
			assertClean(t, sb)
		})
	}
}

// A replayed result carries the refused calls of the run it replays.
func TestDeniedSyscallsReplayed(t *testing.T) {
	sb := newSandbox(t, svc.Config{Cache: newCache(t, svc.CacheConfig{})})
	yes := true
	steps := []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O1", "-o", "refuser", "refuser.c"}, Cache: &yes,
			Files: map[string]svc.File{"refuser.c": {Content: refuserSrc}}}),
		svc.Single(svc.Task{Cmd: "./refuser", Args: []string{"2"}, SandboxProfile: svc.ProfileNativeV2, Cache: &yes}),
	}
	want := map[string]int64{"io_pgetevents": 2}
	for i := range 2 {
		r := run(t, sb, steps...).Results[1].Results[0]
		if r.Replayed != (i == 1) || !maps.Equal(r.Stats.DeniedSyscalls, want) {
			t.Errorf("run %d: replayed %v, denied_syscalls %v, want %v", i, r.Replayed, r.Stats.DeniedSyscalls, want)
		}
	}
}

// floodSrc makes argv[1] refused calls from each of 8 threads at once.
const floodSrc = `#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static long n;

static void *flood(void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++)
		syscall(SYS_io_pgetevents, 0, 0, 0, 0, 0, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[8];
	n = atol(argv[1]);
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, flood, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	return 0;
}
`

// A task that floods the listener with refused calls from eight threads
// at once has every one of them counted, and its neighbour in the same
// parallel step, allowed calls only, is not slowed into a timeout.
func TestDeniedSyscallsFlood(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	const each = 5000
	resp := run(t, sb,
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O1", "-pthread", "-o", "flood", "flood.c"},
			Files: map[string]svc.File{"flood.c": {Content: floodSrc}}}),
		svc.Parallel(
			svc.Task{Cmd: "./flood", Args: []string{fmt.Sprint(each)}, SandboxProfile: svc.ProfileNativeV2},
			svc.Task{Cmd: "sh", Args: []string{"-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; echo done"}},
		))
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
	flood, neighbour := resp.Results[1].Results[0], resp.Results[1].Results[1]
	expect(t, flood, svc.OutcomeExited, 0)
	if got := flood.Stats.DeniedSyscalls["io_pgetevents"]; got != 8*each {
		t.Errorf("io_pgetevents counted %d times, want %d", got, 8*each)
	}
	t.Logf("%d refused calls in %d ms of wall time, %d us of CPU", 8*each, flood.Stats.WallTimeMs, deref(flood.Stats.CPUUsageUsec))
	expect(t, neighbour, svc.OutcomeExited, 0)
	if neighbour.Stdout != "done\n" || len(neighbour.Stats.DeniedSyscalls) != 0 {
		t.Errorf("neighbour: stdout %q, refused %v", neighbour.Stdout, neighbour.Stats.DeniedSyscalls)
	}
}

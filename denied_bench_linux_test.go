package svc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// callLoopSrc times argv[1] calls of getppid (an allowed call the kernel's
// cache of allowed calls answers without running the filter) and of
// personality(0xffffffff) (allowed by a rule on its argument: the filter
// runs), and prints the nanoseconds per call of each.
const callLoopSrc = `#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double ns(struct timespec a, struct timespec b)
{
	return (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (long i = 0; i < n; i++)
		syscall(SYS_personality, 0xffffffffUL);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	printf("%.1f %.1f\n", ns(t0, t1) / n, ns(t1, t2) / n);
	return 0;
}
`

// BenchmarkAllowedCalls shows that an allowed call costs no more under a
// watched filter, whose default (a refused call) notifies the service to
// be counted in stats.denied_syscalls, than under a filter whose default
// answers ENOSYS in the kernel: the nanoseconds per getppid and per
// personality query of a native_v2 task, each way, and on the host with
// no filter. Each op is one run of 200000 calls of each.
func BenchmarkAllowedCalls(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: runs sandboxes")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		b.Skip("needs gcc")
	}
	const calls = "200000"
	dir := b.TempDir()
	src := filepath.Join(dir, "loop.c")
	if err := os.WriteFile(src, []byte(callLoopSrc), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "loop")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v: %s", err, out)
	}
	report := func(b *testing.B, outs []string) {
		var sum [2]float64
		for _, out := range outs {
			f := strings.Fields(out)
			if len(f) != 2 {
				b.Fatalf("the loop printed %q", out)
			}
			for i := range f {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					b.Fatal(err)
				}
				sum[i] += v
			}
		}
		b.ReportMetric(sum[0]/float64(len(outs)), "getppid-ns/call")
		b.ReportMetric(sum[1]/float64(len(outs)), "personality-ns/call")
	}
	b.Run("host", func(b *testing.B) {
		var outs []string
		for b.Loop() {
			out, err := exec.Command(bin, calls).Output()
			if err != nil {
				b.Fatal(err)
			}
			outs = append(outs, string(out))
		}
		report(b, outs)
	})
	for _, watch := range []bool{true, false} {
		b.Run(fmt.Sprintf("watched=%v", watch), func(b *testing.B) {
			if watch && !userNotif() {
				b.Skip("this kernel has no seccomp listeners: nothing is watched")
			}
			sb := oneSlotSandbox(b)
			if !watch {
				unwatch(b, sb)
			}
			req := &Request{Steps: []Step{
				Single(Task{Cmd: "gcc", Args: []string{"-O2", "-o", "loop", "loop.c"},
					Files: map[string]File{"loop.c": {Content: callLoopSrc}}}),
				Single(Task{Cmd: "./loop", Args: []string{calls}, SandboxProfile: ProfileNativeV2}),
			}}
			var outs []string
			for b.Loop() {
				resp, err := sb.Run(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				r := resp.Results[1].Results[0]
				if r.Outcome != OutcomeExited || r.ExitCode != 0 || len(r.Stats.DeniedSyscalls) > 0 {
					b.Fatalf("%s exit %d, refused %v: %s", r.Outcome, r.ExitCode, r.Stats.DeniedSyscalls, r.Stderr)
				}
				outs = append(outs, r.Stdout)
			}
			report(b, outs)
		})
	}
}

package svctest_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// limitsSrc prints a + b; with a = 1 it allocates and touches b MiB and
// prints "ok", with a = 2 it loops.
const limitsSrc = `#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	long a, b;
	if (scanf("%ld %ld", &a, &b) != 2)
		return 1;
	if (a == 1) {
		volatile char *p = malloc((size_t)b << 20);
		for (long i = 0; p && i < b << 20; i += 4096)
			p[i] = 1;
		puts(p ? "ok" : "no memory");
		return 0;
	}
	for (volatile unsigned long x = 0; a == 2; x++)
		;
	printf("%ld\n", a + b);
	return 0;
}
`

// TestJudgeRunLimits: a problem's limits (Program.RunLimits) bind each
// run, below the sandbox's, which the build keeps.
func TestJudgeRunLimits(t *testing.T) {
	sb := svctest.New(t, svc.Config{}) // 5 s of CPU, 256 MiB
	p := svctest.C(limitsSrc)
	p.RunLimits = svc.TaskLimits{CPUTimeLimit: 500 * time.Millisecond, MemoryMax: 64 * svc.MiB}
	cases := []svctest.Case{
		{Name: "sum", Input: "3 4", Want: "7\n"},
		{Name: "fits", Input: "1 32", Want: "ok\n"},
		{Name: "memory", Input: "1 128", Want: "ok\n"}, // under the sandbox's 256 MiB
		{Name: "time", Input: "2 0", Want: "2\n"},
	}
	rep, err := svctest.Judge(context.Background(), sb, p, cases, svctest.Exact)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	want := []svctest.Verdict{svctest.Accepted, svctest.Accepted, svctest.MemoryLimit, svctest.TimeLimit}
	if got := rep.Verdicts(); !slices.Equal(got, want) {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	if u := rep.Cases[3].Result.Stats.CPUUsageUsec; u == nil || *u > 2_000_000 {
		t.Errorf("time limit case: cpu_usage_usec %v, want about 500000", u)
	}

	// Above the sandbox's: the request is refused.
	p.RunLimits = svc.TaskLimits{MemoryMax: 512 * svc.MiB}
	if _, err := svctest.Judge(context.Background(), sb, p, cases[:1], nil); !errors.Is(err, svc.ErrLimitsExceeded) {
		t.Errorf("run limits above the sandbox's: %v", err)
	}
}

// TestProgramLimitsRunLimits: a sandbox for p has at least p's run
// limits.
func TestProgramLimitsRunLimits(t *testing.T) {
	p := svctest.Program{RunLimits: svc.TaskLimits{MemoryMax: 512 * svc.MiB, CPUTimeLimit: time.Second, OutputLimit: 4 * svc.MiB}}
	want := svc.Limits{MemoryMax: 512 * svc.MiB, OutputLimit: 4 * svc.MiB}
	if got := p.Limits(svc.Limits{}); got != want {
		t.Errorf("Limits:\n got %+v\nwant %+v", got, want)
	}
}

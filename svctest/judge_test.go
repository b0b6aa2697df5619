package svctest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// sumSrc prints a + b, and fails on purpose on some inputs: a = -1 asks
// for 1 GiB, a = -2 loops, a = -3 aborts.
const sumSrc = `#include <cstdio>
#include <cstdlib>
#include <vector>

int main() {
    long long a, b;
    if (scanf("%lld %lld", &a, &b) != 2) return 1;
    if (a == -1) {
        std::vector<char> v(size_t(1) << 30, 1);
        printf("%d\n", v[b]);
        return 0;
    }
    if (a == -2) {
        volatile unsigned long long x = 1;
        for (;;) x = x * 3 + 1;
    }
    if (a == -3) abort();
    printf("%lld\n", a + b);
}
`

// judgeSandbox is a sandbox with a judge's limits: 1 s of CPU per run,
// 128 MiB. The build has them too, which g++ fits in.
func judgeSandbox(t *testing.T) *svc.Sandbox {
	return svctest.New(t, svc.Config{Limits: svc.Limits{
		CPUTimeLimit: time.Second, WallTimeout: 5 * time.Second, MemoryMax: 128 * svc.MiB,
	}})
}

// TestJudge judges a C++ solution the way a judge's harness does: one
// verdict of each kind, in one build.
func TestJudge(t *testing.T) {
	sb := judgeSandbox(t)
	cases := []svctest.Case{
		{Name: "small", Input: "1 2\n", Want: "3\n"},
		{Name: "spaced", Input: "20 22\n", Want: " 42 \n\n"},
		{Name: "wrong", Input: "2 2\n", Want: "5\n"},
		{Name: "memory", Input: "-1 0\n", Want: "1\n"},
		{Name: "time", Input: "-2 0\n", Want: "-2\n"},
		{Name: "crash", Input: "-3 0\n", Want: "-3\n"},
	}
	rep, err := svctest.Judge(context.Background(), sb, svctest.CPP(sumSrc), cases, svctest.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	want := []svctest.Verdict{svctest.Accepted, svctest.Accepted, svctest.WrongAnswer,
		svctest.MemoryLimit, svctest.TimeLimit, svctest.RuntimeError}
	if got := rep.Verdicts(); !slices.Equal(got, want) {
		t.Errorf("verdicts %q, want %q", got, want)
	}
	if rep.Accepted() {
		t.Error("Accepted with wrong answers")
	}
	if rep.Build == nil || rep.Build.ExitCode != 0 {
		t.Errorf("build %+v", rep.Build)
	}
	// The table: a header, the build, one line per case.
	s := rep.String()
	for _, w := range []string{"build: exit 0", "case", "verdict", "memory limit exceeded", "signal 6", "cpu_time_exceeded", "MiB"} {
		if !strings.Contains(s, w) {
			t.Errorf("the table lacks %q:\n%s", w, s)
		}
	}
	if n := strings.Count(s, "\n"); n != 2+len(cases) {
		t.Errorf("table of %d lines, want %d:\n%s", n, 2+len(cases), s)
	}
}

// TestJudgeExact: Exact tells output that Tokens accepts from the exact
// bytes.
func TestJudgeExact(t *testing.T) {
	sb := svctest.New(t, svc.Config{})
	p := svctest.C(`#include <stdio.h>
int main(void) { int a, b; if (scanf("%d %d", &a, &b) != 2) return 1; printf("%d \n", a + b); return 0; }
`)
	cases := []svctest.Case{{Input: "1 2", Want: "3 \n"}, {Input: "1 2", Want: "3\n"}}
	rep, err := svctest.Judge(context.Background(), sb, p, cases, svctest.Exact)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Verdicts(); !slices.Equal(got, []svctest.Verdict{svctest.Accepted, svctest.WrongAnswer}) {
		t.Errorf("verdicts %q\n%s", got, rep)
	}
	if rep.Cases[0].Name != "1" || rep.Cases[1].Name != "2" {
		t.Errorf("names %q %q", rep.Cases[0].Name, rep.Cases[1].Name)
	}
}

// TestJudgeCompilationError: a source that does not build gets that
// verdict on every case, and the table shows the compiler's message.
func TestJudgeCompilationError(t *testing.T) {
	sb := svctest.New(t, svc.Config{})
	rep, err := svctest.Judge(context.Background(), sb, svctest.CPP("int main() { return x; }\n"),
		[]svctest.Case{{Input: "", Want: ""}, {Input: "", Want: ""}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Verdicts(); !slices.Equal(got, []svctest.Verdict{svctest.CompilationError, svctest.CompilationError}) {
		t.Errorf("verdicts %q", got)
	}
	if s := rep.String(); !strings.Contains(s, "build: exit 1") || !strings.Contains(s, "was not declared") {
		t.Errorf("table:\n%s", s)
	}
	for _, c := range rep.Cases {
		if c.Result.Outcome != svc.OutcomeNotStarted {
			t.Errorf("case %s ran: %+v", c.Name, c.Result)
		}
	}
}

// TestRunInputsMany: more inputs than one request holds go in several
// requests, each building again; the results keep the order of the
// inputs.
func TestRunInputsMany(t *testing.T) {
	sb := svctest.New(t, svc.Config{Limits: svc.Limits{MaxSteps: 3, MaxParallelTasks: 2, MaxConcurrency: 2}})
	p := svctest.C(`#include <stdio.h>
int main(void) { int n; if (scanf("%d", &n) != 1) return 1; printf("%d\n", n * n); return 0; }
`)
	var inputs []string
	for i := range 11 {
		inputs = append(inputs, fmt.Sprint(i))
	}
	runs, err := svctest.RunInputs(context.Background(), sb, p, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.Results) != len(inputs) || runs.BuildFailed() {
		t.Fatalf("%d results, build %+v", len(runs.Results), runs.Build)
	}
	for i, r := range runs.Results {
		if want := fmt.Sprintf("%d\n", i*i); r.Stdout != want || r.Outcome != svc.OutcomeExited {
			t.Errorf("input %d: %q %s, want %q", i, r.Stdout, r.Outcome, want)
		}
	}
}

// TestPython: a script needs no build.
func TestPython(t *testing.T) {
	sb := svctest.New(t, svc.Config{})
	rep, err := svctest.Judge(context.Background(), sb, svctest.Python("print(sum(map(int, input().split())))\n"),
		[]svctest.Case{{Input: "1 2 3\n", Want: "6"}, {Input: "x\n", Want: "0"}}, svctest.Tokens)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Verdicts(); !slices.Equal(got, []svctest.Verdict{svctest.Accepted, svctest.RuntimeError}) || rep.Build != nil {
		t.Errorf("verdicts %q\n%s", got, rep)
	}
}

// TestCompare checks Exact and Tokens without a sandbox.
func TestCompare(t *testing.T) {
	for _, c := range []struct {
		got, want     string
		exact, tokens bool
	}{
		{"3\n", "3\n", true, true},
		{"3", "3\n", false, true},
		{"1 2\n3\n", "1\n2 3", false, true},
		{"\t1  2 \r\n", "1 2", false, true},
		{"12", "1 2", false, false},
		{"", "", true, true},
		{"", "\n", false, true},
		{"0", "", false, false},
	} {
		if got := svctest.Exact(c.got, c.want); got != c.exact {
			t.Errorf("Exact(%q, %q) = %v", c.got, c.want, got)
		}
		if got := svctest.Tokens(c.got, c.want); got != c.tokens {
			t.Errorf("Tokens(%q, %q) = %v", c.got, c.want, got)
		}
	}
}

// TestVerdictOf maps every outcome without a sandbox.
func TestVerdictOf(t *testing.T) {
	ok := svc.Result{Outcome: svc.OutcomeExited, Stdout: "1\n"}
	for _, c := range []struct {
		r    svc.Result
		want svctest.Verdict
	}{
		{ok, svctest.Accepted},
		{svc.Result{Outcome: svc.OutcomeExited, Stdout: "2\n"}, svctest.WrongAnswer},
		{svc.Result{Outcome: svc.OutcomeExited, ExitCode: 1, Stdout: "1\n"}, svctest.RuntimeError},
		{svc.Result{Outcome: svc.OutcomeExited, Stdout: "1\n", StdoutTruncated: true}, svctest.OutputLimit},
		{svc.Result{Outcome: svc.OutcomeTimedOut}, svctest.TimeLimit},
		{svc.Result{Outcome: svc.OutcomeCPUTimeExceeded}, svctest.TimeLimit},
		{svc.Result{Outcome: svc.OutcomeOutOfMemory}, svctest.MemoryLimit},
		{svc.Result{Outcome: svc.OutcomeOutputLimit}, svctest.OutputLimit},
		{svc.Result{Outcome: svc.OutcomeSignaled, Signal: 11}, svctest.RuntimeError},
		{svc.Result{Outcome: svc.OutcomePolicyViolation}, svctest.RuntimeError},
		{svc.Result{Outcome: svc.OutcomePidsLimit}, svctest.RuntimeError},
		{svc.Result{Outcome: svc.OutcomeAncestorOutOfMemory}, svctest.JudgeError},
		{svc.Result{Outcome: svc.OutcomeNotStarted}, svctest.JudgeError},
		{svc.Result{Outcome: svc.OutcomeInfrastructureFailure}, svctest.JudgeError},
	} {
		if got := svctest.VerdictOf(c.r, "1\n", nil); got != c.want {
			t.Errorf("%s (exit %d): %q, want %q", c.r.Outcome, c.r.ExitCode, got, c.want)
		}
	}
}

// TestJudgeReportsRefusedCalls: the table names the calls the sandbox
// refused each run, so a submission that misbehaves only here says why.
func TestJudgeReportsRefusedCalls(t *testing.T) {
	sb := svctest.New(t, svc.Config{})
	p := svctest.C(`#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
	int n;
	if (scanf("%d", &n) != 1)
		return 1;
	for (int i = 0; i < n; i++)
		syscall(SYS_io_pgetevents, 0, 0, 0, 0, 0, 0);
	printf("%d\n", n);
	return 0;
}
`)
	rep, err := svctest.Judge(context.Background(), sb, p, []svctest.Case{{Name: "none", Input: "0", Want: "0\n"}, {Name: "two", Input: "2", Want: "2\n"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	if got := rep.Cases[1].Result.Stats.DeniedSyscalls; got["io_pgetevents"] != 2 || len(got) != 1 {
		t.Errorf("denied_syscalls %v", got)
	}
	if got := rep.Cases[0].Result.Stats.DeniedSyscalls; got == nil || len(got) != 0 {
		t.Errorf("denied_syscalls of a run that made no refused call: %v", got)
	}
	lines := strings.Split(rep.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[1]), "refused") || !strings.HasSuffix(lines[3], "io_pgetevents 2") ||
		strings.Contains(lines[2], "io_pgetevents") {
		t.Errorf("the table does not show the refused calls by case:\n%s", rep)
	}
}

package svctest_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// guessInteractor is a guessing game's interactor, called as testlib's
// are: interactor <input> <output> <answer>. The input holds n and the
// secret, the answer how many questions are allowed. It writes n, then
// answers each question "? x" with "<", ">" or "=" (found: accepted).
const guessInteractor = `#include <signal.h>
#include <stdio.h>

static int verdict(int code, const char *msg) {
	fprintf(stderr, "%s\n", msg);
	return code;
}

int main(int argc, char **argv) {
	signal(SIGPIPE, SIG_IGN); // a solution that stops reading is its own fault
	long n, secret;
	int limit;
	FILE *in = fopen(argv[1], "r"), *ans = fopen(argv[3], "r");
	if (!in || fscanf(in, "%ld %ld", &n, &secret) != 2 || !ans || fscanf(ans, "%d", &limit) != 1)
		return verdict(3, "fail: a bad test");
	printf("%ld\n", n);
	fflush(stdout);
	char line[64];
	for (int q = 1;; q++) {
		long x;
		char nl;
		if (!fgets(line, sizeof line, stdin))
			return verdict(1, "wrong answer: no more questions");
		if (sscanf(line, "? %ld%c", &x, &nl) != 2 || nl != '\n')
			return verdict(2, "presentation error: not a question");
		if (q > limit)
			return verdict(1, "wrong answer: too many questions");
		const char *a = secret < x ? "<" : secret > x ? ">" : "=";
		printf("%s\n", a);
		if (fflush(stdout) != 0)
			return verdict(1, "wrong answer: the solution stopped reading");
		if (*a == '=') {
			FILE *out = fopen(argv[2], "w");
			fprintf(out, "%d\n", q);
			fclose(out);
			fprintf(stderr, "ok: %d questions\n", q);
			return 0;
		}
	}
}
`

// bisectCPP finds the secret by bisection.
const bisectCPP = `#include <iostream>
#include <string>
int main() {
	long n;
	std::cin >> n;
	for (long lo = 1, hi = n; lo <= hi;) {
		long mid = lo + (hi - lo) / 2;
		std::cout << "? " << mid << std::endl;
		std::string a;
		std::cin >> a;
		if (a == "=") return 0;
		if (a == "<") hi = mid - 1; else lo = mid + 1;
	}
	return 1;
}
`

// bisectPy is bisectCPP in Python: a program without a build.
const bisectPy = `import sys
n = int(input())
lo, hi = 1, n
while lo <= hi:
    mid = (lo + hi) // 2
    print("?", mid, flush=True)
    a = input()
    if a == "=":
        sys.exit(0)
    if a == "<":
        hi = mid - 1
    else:
        lo = mid + 1
sys.exit(1)
`

// linearCPP asks 1, 2, 3...: right for small secrets only.
const linearCPP = `#include <iostream>
#include <string>
int main() {
	long n;
	std::cin >> n;
	for (long x = 1; x <= n; x++) {
		std::cout << "? " << x << std::endl;
		std::string a;
		if (!(std::cin >> a)) return 0;
		if (a == "=") return 0;
	}
}
`

// spinCPP reads n and thinks forever.
const spinCPP = `#include <iostream>
int main() {
	long n;
	std::cin >> n;
	volatile unsigned long x = 0;
	for (;;) x++;
}
`

// guessCases are three games of 20 questions at most.
var guessCases = []svctest.Case{
	{Name: "low", Input: "1000000 1\n", Want: "20\n"},
	{Name: "high", Input: "1000000 1000000\n", Want: "20\n"},
	{Name: "middle", Input: "1000000 271828\n", Want: "20\n"},
}

// interactor is the guessing game's interactor, built by gcc and run
// under compile_v2 (an interactor is the judge's own program).
func interactor() svctest.Program {
	p := svctest.C(guessInteractor)
	p.RunProfile = svc.ProfileCompileV2
	return p
}

// TestJudgeInteractive judges solutions of a guessing game, each case a
// solution (native_v2) and the interactor (compile_v2) feeding each
// other: the interactor's exit status and output decide.
func TestJudgeInteractive(t *testing.T) {
	sb := judgeSandbox(t)
	for _, tc := range []struct {
		name     string
		solution svctest.Program
		want     []svctest.Verdict
		comment  string
	}{
		{"bisection", svctest.CPP(bisectCPP), []svctest.Verdict{svctest.Accepted, svctest.Accepted, svctest.Accepted}, "exit 0: ok: 20 questions"},
		{"bisection in python", svctest.Python(bisectPy), []svctest.Verdict{svctest.Accepted, svctest.Accepted, svctest.Accepted}, "exit 0: ok: 1"},
		{"linear", svctest.CPP(linearCPP), []svctest.Verdict{svctest.Accepted, svctest.WrongAnswer, svctest.WrongAnswer}, "exit 1: wrong answer: too many questions"},
		// The CPU limit ends the solution, and the interactor reads
		// end-of-file; on a loaded machine both may reach their wall
		// limit first.
		{"spins", svctest.CPP(spinCPP), []svctest.Verdict{svctest.TimeLimit, svctest.TimeLimit, svctest.TimeLimit}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := svctest.JudgeInteractive(context.Background(), sb, tc.solution, interactor(), guessCases)
			if err != nil {
				t.Fatal(err)
			}
			s := rep.String()
			t.Logf("\n%s", s)
			if got := rep.Verdicts(); !slices.Equal(got, tc.want) {
				t.Errorf("verdicts %q, want %q", got, tc.want)
			}
			if rep.InteractorBuild == nil || rep.InteractorBuild.ExitCode != 0 {
				t.Errorf("interactor build %+v", rep.InteractorBuild)
			}
			for _, w := range []string{"interactor build: exit 0", "interactor", tc.comment} {
				if !strings.Contains(s, w) {
					t.Errorf("the table lacks %q", w)
				}
			}
			c := rep.Cases[0]
			if c.Interactor == nil || !strings.HasPrefix(c.Interactor.Stdout, "1000000\n") || !strings.HasPrefix(c.Result.Stdout, "? ") && tc.name != "spins" {
				t.Errorf("transcripts: interactor %+v, solution %q", c.Interactor, c.Result.Stdout)
			}
		})
	}
}

// TestJudgeInteractiveBuildFails: a solution that does not compile is a
// compilation error, an interactor that does not, a judge error.
func TestJudgeInteractiveBuildFails(t *testing.T) {
	sb := judgeSandbox(t)
	broken := svctest.CPP("int main( {")
	rep, err := svctest.JudgeInteractive(context.Background(), sb, broken, interactor(), guessCases)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Verdicts(); !slices.Equal(got, slices.Repeat([]svctest.Verdict{svctest.CompilationError}, 3)) || !rep.BuildFailed() {
		t.Errorf("verdicts %q", got)
	}
	badInteractor := svctest.C("int main( {")
	rep, err = svctest.JudgeInteractive(context.Background(), sb, svctest.CPP(bisectCPP), badInteractor, guessCases)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Verdicts(); !slices.Equal(got, slices.Repeat([]svctest.Verdict{svctest.JudgeError}, 3)) {
		t.Errorf("verdicts %q", got)
	}
	if s := rep.String(); !strings.Contains(s, "interactor build: exit 1") {
		t.Errorf("the table:\n%s", s)
	}
}

// TestVerdictOfInteraction: the solution's limits first, then the
// interactor's word, then the solution's other failures.
func TestVerdictOfInteraction(t *testing.T) {
	exited := func(code int) svc.Result { return svc.Result{Outcome: svc.OutcomeExited, ExitCode: code} }
	signaled := func(sig syscall.Signal) svc.Result {
		return svc.Result{Outcome: svc.OutcomeSignaled, Signal: int(sig), ExitCode: 128 + int(sig)}
	}
	outcome := func(o svc.Outcome) svc.Result { return svc.Result{Outcome: o, ExitCode: 137, Signal: 9} }
	for _, tc := range []struct {
		name            string
		solution, inter svc.Result
		want            svctest.Verdict
	}{
		{"accepted", exited(0), exited(0), svctest.Accepted},
		{"wrong answer", exited(0), exited(1), svctest.WrongAnswer},
		{"presentation error", exited(0), exited(2), svctest.WrongAnswer},
		{"wrong answer, then the solution's SIGPIPE", signaled(syscall.SIGPIPE), exited(1), svctest.WrongAnswer},
		{"wrong answer, then the solution's crash", exited(3), exited(1), svctest.WrongAnswer},
		{"the solution stopped reading", exited(0), signaled(syscall.SIGPIPE), svctest.WrongAnswer},
		{"time limit first", outcome(svc.OutcomeTimedOut), exited(1), svctest.TimeLimit},
		{"cpu limit first", outcome(svc.OutcomeCPUTimeExceeded), exited(1), svctest.TimeLimit},
		{"memory limit first", outcome(svc.OutcomeOutOfMemory), exited(1), svctest.MemoryLimit},
		{"runtime error", exited(3), exited(0), svctest.RuntimeError},
		{"policy violation", outcome(svc.OutcomePolicyViolation), exited(0), svctest.RuntimeError},
		{"output limit", outcome(svc.OutcomeOutputLimit), exited(0), svctest.OutputLimit},
		{"interactor fail", exited(0), exited(3), svctest.JudgeError},
		{"interactor crash", exited(0), signaled(syscall.SIGSEGV), svctest.JudgeError},
		{"interactor time limit", exited(0), outcome(svc.OutcomeTimedOut), svctest.JudgeError},
		{"not run", svc.Result{Outcome: svc.OutcomeNotStarted}, exited(0), svctest.JudgeError},
		{"interactor not run", exited(0), svc.Result{Outcome: svc.OutcomeInfrastructureFailure}, svctest.JudgeError},
	} {
		if got := svctest.VerdictOfInteraction(tc.solution, tc.inter); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

package svctest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// store puts each of contents in sb's file store and returns their ids.
func store(t *testing.T, sb *svc.Sandbox, contents ...string) []string {
	t.Helper()
	ids := make([]string, len(contents))
	for i, c := range contents {
		f, _, err := sb.Config().Files.Put(context.Background(), strings.NewReader(c), "t", "")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = f.ID
	}
	return ids
}

// TestJudgeFiles judges a C++ solution on stored tests with each built-in
// checker in the sandbox: every verdict of the checkers (accepted, wrong
// answer, presentation error) and of the runs (time, memory, runtime
// error), with more tests than one parallel step holds.
func TestJudgeFiles(t *testing.T) {
	sb := svctest.New(t, svc.Config{Limits: svc.Limits{MemoryMax: 128 * svc.MiB, MaxParallelTasks: 4}})
	type tc struct{ name, in, ans string }
	tests := []tc{
		{"small", "1 2\n", "3\n"}, {"spaced", "20 22\n", " 42 \n\n"}, {"wrong", "2 2\n", "5\n"},
		{"memory", "-1 0\n", "1\n"}, {"time", "-2 0\n", "-2\n"}, {"crash", "-3 0\n", "-3\n"},
	}
	var cases []svctest.FileCase
	for _, c := range tests {
		ids := store(t, sb, c.in, c.ans)
		cases = append(cases, svctest.FileCase{Name: c.name, Input: ids[0], Answer: ids[1]})
	}
	p := svctest.CPP(sumSrc)
	p.RunLimits = svc.TaskLimits{CPUTimeLimit: 500 * 1e6}
	for _, ck := range []struct {
		name    string
		checker svctest.Checker
		want    []svctest.Verdict
	}{
		{"tokens", svctest.TokenChecker(), []svctest.Verdict{svctest.Accepted, svctest.Accepted, svctest.WrongAnswer,
			svctest.MemoryLimit, svctest.TimeLimit, svctest.RuntimeError}},
		{"exact", svctest.ExactChecker(), []svctest.Verdict{svctest.Accepted, svctest.PresentationError, svctest.WrongAnswer,
			svctest.MemoryLimit, svctest.TimeLimit, svctest.RuntimeError}},
	} {
		t.Run(ck.name, func(t *testing.T) {
			rep, err := svctest.JudgeFiles(context.Background(), sb, p, cases, ck.checker)
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Verdicts(); !equal(got, ck.want) {
				t.Fatalf("verdicts %q, want %q\n%s", got, ck.want, rep)
			}
			if c := rep.Cases[2]; !strings.HasPrefix(c.Comment, "wrong answer: token 1: 5 expected, 4 found") {
				t.Errorf("comment %q", c.Comment)
			}
			for _, c := range rep.Cases {
				if c.Result.Stdout != "" {
					t.Errorf("%s: stdout %q travelled back", c.Name, c.Result.Stdout)
				}
			}
		})
	}
}

// TestCheckers: the float checker's absolute and relative errors, and a
// custom checker in Python by testlib's exit codes, on a solution that
// prints its input back.
func TestCheckers(t *testing.T) {
	sb := svctest.New(t, svc.Config{})
	echo := svctest.Python("import sys\nsys.stdout.write(sys.stdin.read())\n")
	judge := func(ck svctest.Checker, pairs ...string) []svctest.Verdict {
		t.Helper()
		var cases []svctest.FileCase
		for i := 0; i < len(pairs); i += 2 {
			ids := store(t, sb, pairs[i], pairs[i+1])
			cases = append(cases, svctest.FileCase{Input: ids[0], Answer: ids[1]})
		}
		rep, err := svctest.JudgeFiles(context.Background(), sb, echo, cases, ck)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Verdicts()
	}
	A, W, P := svctest.Accepted, svctest.WrongAnswer, svctest.PresentationError
	if got, want := judge(svctest.FloatChecker(1e-6, 0), "1.0000001 x\n", "1 x", "1.01\n", "1", "nan\n", "nan", "1 y", "1 x"),
		[]svctest.Verdict{A, W, A, W}; !equal(got, want) {
		t.Errorf("float, abs: %q, want %q", got, want)
	}
	if got, want := judge(svctest.FloatChecker(0, 1e-3), "1000.5\n", "1000", "1002\n", "1000"),
		[]svctest.Verdict{A, W}; !equal(got, want) {
		t.Errorf("float, rel: %q, want %q", got, want)
	}
	custom := svctest.CustomChecker(svctest.Python(`import sys
inp, out, ans = (open(p).read().split() for p in sys.argv[1:4])
if out == ans:
    sys.exit(0)
if [w.lower() for w in out] == [w.lower() for w in ans]:
    print("case differs", file=sys.stderr)
    sys.exit(2)
print("expected", ans, "got", out, file=sys.stderr)
sys.exit(1)
`))
	if got, want := judge(custom, "Yes\n", "Yes", "YES\n", "yes", "no\n", "yes"), []svctest.Verdict{A, P, W}; !equal(got, want) {
		t.Errorf("custom: %q, want %q", got, want)
	}
}

func equal(a, b []svctest.Verdict) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

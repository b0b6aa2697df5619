package svctest

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/svc-sandbox/svc"
)

// A Checker judges a run's output inside the sandbox, by testlib's
// convention: a program run as `checker input output answer` (three
// file paths) that exits 0 when the output is accepted, 1 for a wrong
// answer and 2 for a presentation error, its first stderr line a
// comment; any other end is a judge error. [ExactChecker],
// [TokenChecker] and [FloatChecker] are built in (one C source, built by
// gcc); [CustomChecker] takes any [Program]. The zero value is
// [TokenChecker].
type Checker struct {
	// Program is the checker, built once in the checker/ directory of
	// the workspace (its build cached like the solution's) and run there
	// with Args and then the three paths appended to its Run.
	Program Program
	Args    []string
}

// checkerDir is where a checker is built and runs, apart from the
// solution's files.
const checkerDir = "checker"

// builtinChecker is the source of the built-in checkers: exact,
// tokens, and float with an absolute and a relative error.
const builtinChecker = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <ctype.h>

static char *slurp(const char *p, size_t *n) {
	FILE *f = fopen(p, "rb");
	if (!f) { fprintf(stderr, "cannot open %s\n", p); exit(3); }
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap + 1);
	for (size_t k; (k = fread(b + len, 1, cap - len, f)) > 0;) {
		len += k;
		if (len == cap) { cap *= 2; b = realloc(b, cap + 1); }
		if (!b) { fprintf(stderr, "out of memory\n"); exit(3); }
	}
	fclose(f);
	b[len] = 0;
	*n = len;
	return b;
}

/* next finds the token at or after *i in s: its start and length. */
static int next(const char *s, size_t n, size_t *i, const char **t, size_t *len) {
	while (*i < n && isspace((unsigned char)s[*i])) (*i)++;
	if (*i >= n) return 0;
	*t = s + *i;
	while (*i < n && !isspace((unsigned char)s[*i])) (*i)++;
	*len = (size_t)(s + *i - *t);
	return 1;
}

static int number(const char *t, size_t len, double *v) {
	char buf[128], *end;
	if (len == 0 || len >= sizeof buf) return 0;
	memcpy(buf, t, len);
	buf[len] = 0;
	*v = strtod(buf, &end);
	return end == buf + len && isfinite(*v);
}

int main(int argc, char **argv) {
	if (argc != 5) { fprintf(stderr, "usage: check exact|tokens|float:ABS:REL input output answer\n"); return 3; }
	int exact = strcmp(argv[1], "exact") == 0, flt = strncmp(argv[1], "float:", 6) == 0;
	double abs_err = 0, rel_err = 0;
	if (flt && sscanf(argv[1] + 6, "%lf:%lf", &abs_err, &rel_err) != 2) { fprintf(stderr, "bad mode %s\n", argv[1]); return 3; }
	if (!exact && !flt && strcmp(argv[1], "tokens") != 0) { fprintf(stderr, "bad mode %s\n", argv[1]); return 3; }
	size_t no, na, io = 0, ia = 0, lo, la;
	char *out = slurp(argv[3], &no), *ans = slurp(argv[4], &na);
	if (exact && no == na && memcmp(out, ans, no) == 0) return 0;
	const char *to, *ta;
	for (long k = 1;; k++) {
		int ho = next(out, no, &io, &to, &lo), ha = next(ans, na, &ia, &ta, &la);
		if (!ho && !ha) break;
		if (!ha) { fprintf(stderr, "wrong answer: extra output at token %ld\n", k); return 1; }
		if (!ho) { fprintf(stderr, "wrong answer: the output ends at token %ld, %.40s expected\n", k, ta); return 1; }
		if (lo == la && memcmp(to, ta, lo) == 0) continue;
		double vo, va;
		if (flt && number(to, lo, &vo) && number(ta, la, &va)) {
			double d = fabs(vo - va);
			if (d <= abs_err || d <= rel_err * fabs(va)) continue;
		}
		fprintf(stderr, "wrong answer: token %ld: %.*s expected, %.*s found\n", k, (int)(la > 40 ? 40 : la), ta, (int)(lo > 40 ? 40 : lo), to);
		return 1;
	}
	if (exact) { fprintf(stderr, "presentation error: the tokens match, the spacing does not\n"); return 2; }
	return 0;
}
`

func builtin(mode string) Checker {
	p := C(builtinChecker)
	return Checker{Program: p, Args: []string{mode}}
}

// ExactChecker accepts exactly the answer's bytes; output whose
// whitespace-separated tokens match the answer's but whose spacing does
// not is a presentation error.
func ExactChecker() Checker { return builtin("exact") }

// TokenChecker accepts the answer's whitespace-separated tokens in
// order, however spaced and broken into lines.
func TokenChecker() Checker { return builtin("tokens") }

// FloatChecker is TokenChecker where two tokens that are both numbers
// match when they differ by at most abs, or by at most rel times the
// answer's.
func FloatChecker(abs, rel float64) Checker {
	return builtin("float:" + strconv.FormatFloat(abs, 'g', -1, 64) + ":" + strconv.FormatFloat(rel, 'g', -1, 64))
}

// CustomChecker is the checker program p, testlib's convention: run as
// `checker input output answer`, exit 0 accepted, 1 wrong answer, 2
// presentation error.
func CustomChecker(p Program) Checker { return Checker{Program: p} }

func (c Checker) orDefault() Checker {
	if len(c.Program.Run) == 0 {
		return TokenChecker()
	}
	return c
}

// A FileCase is a test whose input and answer are stored files (file
// ids of the file store: svc.FileStore.Put, or POST /file), uploaded
// once and used by every submission: requests carry their ids, not
// their bytes.
type FileCase struct {
	// Name names the case in a Report; "" is its number from 1.
	Name string
	// Input and Answer are the file ids of the input and of the
	// expected answer.
	Input, Answer string
}

// The verdicts a checker gives besides Accepted and WrongAnswer.
const PresentationError Verdict = "presentation error"

// FileJudgeRequest returns the request that judges p on cases with the
// checker ck, in parallel steps of width tasks: the build of p and of
// the checker (cacheable: replayed from a step cache), then each test
// run with its input as stdin_path (tests/N.in, placed from the file
// store) and its output to stdout_path (tests/N.out), then one parallel
// step of at most width checker tasks, each checking its share of the
// tests in a shell loop (compile_v2) against the answers (tests/N.ans)
// and printing one line per test: its number, the checker's exit
// status and its comment. Only those lines and the runs' results travel
// back. It needs 2 + ceil(len(cases)/width) + 1 steps, at most; see
// [JudgeFiles] for any number of cases.
func FileJudgeRequest(p Program, ck Checker, cases []FileCase, width int) *svc.Request {
	ck = ck.orDefault()
	width = max(1, width)
	req := &svc.Request{}
	cache := true
	files := p.Files
	if p.Build != nil {
		req.Steps = append(req.Steps, svc.Single(svc.Task{
			Cmd: p.Build[0], Args: p.Build[1:], Files: p.Files,
			SandboxProfile: p.BuildProfile, Cache: &cache,
		}))
		files = nil
	}
	ckFiles := make(map[string]svc.File, len(ck.Program.Files))
	for k, v := range ck.Program.Files {
		ckFiles[path.Join(checkerDir, k)] = v
	}
	if ck.Program.Build != nil {
		req.Steps = append(req.Steps, svc.Single(svc.Task{
			Cmd: ck.Program.Build[0], Args: ck.Program.Build[1:], Files: ckFiles,
			WorkingDir: "/svc/" + checkerDir, SandboxProfile: ck.Program.BuildProfile, Cache: &cache,
		}))
		ckFiles = nil
	}
	for i := 0; i < len(cases); i += width {
		var tasks []svc.Task
		for j := i; j < min(i+width, len(cases)); j++ {
			in := testPath(j, "in")
			f := map[string]svc.File{in: {FileID: cases[j].Input}}
			for k, v := range files {
				f[k] = v
			}
			tasks = append(tasks, svc.Task{
				Cmd: p.Run[0], Args: p.Run[1:], Files: f, StdinPath: in, StdoutPath: testPath(j, "out"),
				SandboxProfile: p.RunProfile, Limits: p.RunLimits,
			})
		}
		req.Steps = append(req.Steps, svc.Parallel(tasks...))
		files = nil
	}
	// The checks: test j goes to task j % n.
	n := min(width, len(cases))
	checks := make([]svc.Task, n)
	scripts := make([]strings.Builder, n)
	run := shellQuote(append(append([]string{}, ck.Program.Run...), ck.Args...))
	for j, c := range cases {
		k := j % n
		if checks[k].Files == nil {
			checks[k].Files = map[string]svc.File{}
			for p, v := range ckFiles {
				checks[k].Files[p] = v
			}
			ckFiles = nil
		}
		checks[k].Files[testPath(j, "ans")] = svc.File{FileID: c.Answer}
		// The comment: the first line of the checker's stderr, at most
		// 200 bytes, on the line of the test.
		fmt.Fprintf(&scripts[k], "%s /svc/%s /svc/%s /svc/%s 2>/tmp/c%d; printf '%d %%d ' $?; head -n 1 /tmp/c%d | head -c 200 | tr -d '\\n'; echo\n",
			run, testPath(j, "in"), testPath(j, "out"), testPath(j, "ans"), j, j+1, j)
	}
	for k := range checks {
		checks[k].Cmd, checks[k].Args = "sh", []string{"-c", scripts[k].String()}
		checks[k].WorkingDir = "/svc/" + checkerDir
		checks[k].SandboxProfile = svc.ProfileCompileV2
	}
	if n > 0 {
		req.Steps = append(req.Steps, svc.Parallel(checks...))
	}
	return req
}

// testPath is the workspace path of test j's input, output or answer.
func testPath(j int, ext string) string { return "tests/" + strconv.Itoa(j+1) + "." + ext }

// shellQuote quotes each of args for sh and joins them.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// FileJudgeReport reads the response to [FileJudgeRequest] (the same p,
// ck, cases and width): each case's verdict from its run's outcome
// ([VerdictOf]'s, but for its output) and, for a run that exited 0, from
// the checker's exit status: 0 accepted, 1 wrong answer, 2 presentation
// error, anything else a judge error. The checker's comment is the
// case's Comment.
func FileJudgeReport(p Program, ck Checker, cases []FileCase, width int, resp *svc.Response) (*Report, error) {
	ck = ck.orDefault()
	width = max(1, width)
	results := resp.Results
	rep := &Report{}
	want := 0
	if p.Build != nil {
		want++
	}
	if ck.Program.Build != nil {
		want++
	}
	runSteps := (len(cases) + width - 1) / width
	if len(cases) > 0 {
		want += runSteps + 1
	}
	if len(results) != want {
		return nil, fmt.Errorf("svctest: %d step results, want %d", len(results), want)
	}
	if p.Build != nil {
		b := results[0].Results[0]
		rep.Build, results = &b, results[1:]
	}
	var ckBuild *svc.Result
	if ck.Program.Build != nil {
		b := results[0].Results[0]
		ckBuild, results = &b, results[1:]
	}
	rep.CheckerBuild = ckBuild
	checked := map[int]checkLine{}
	if len(cases) > 0 {
		for _, r := range results[runSteps].Results {
			for _, line := range strings.Split(r.Stdout, "\n") {
				var l checkLine
				var j int
				rest := line
				if _, err := fmt.Sscanf(line, "%d %d", &j, &l.code); err != nil {
					continue
				}
				if parts := strings.SplitN(rest, " ", 3); len(parts) == 3 {
					l.comment = parts[2]
				}
				checked[j-1] = l
			}
		}
	}
	for j, c := range cases {
		name := c.Name
		if name == "" {
			name = strconv.Itoa(j + 1)
		}
		r := results[j/width].Results[j%width]
		cr := CaseResult{Case: Case{Name: name}, Result: r}
		switch {
		case rep.BuildFailed():
			cr.Verdict = CompilationError
		case ckBuild != nil && !exitedZero(*ckBuild):
			cr.Verdict = JudgeError
		default:
			cr.Verdict = VerdictOf(r, "", func(string, string) bool { return true })
			if cr.Verdict == Accepted {
				l, ok := checked[j]
				cr.Comment = l.comment
				switch {
				case !ok:
					cr.Verdict = JudgeError
				case l.code == 0:
				case l.code == 1:
					cr.Verdict = WrongAnswer
				case l.code == 2:
					cr.Verdict = PresentationError
				default:
					cr.Verdict = JudgeError
				}
			}
		}
		rep.Cases = append(rep.Cases, cr)
	}
	return rep, nil
}

type checkLine struct {
	code    int
	comment string
}

// JudgeFiles judges p on cases stored in the file store, with the checker
// ck running in the sandbox: the builds once (replayed from the step
// cache when the sandbox has one), each test's input read as stdin_path
// and its output written to stdout_path, the checker run on input,
// output and answer, and only verdicts travelling back
// ([FileJudgeRequest]). The tests go in requests of as many as fit in
// the sandbox's MaxSteps, each building again (replayed by a cache). The
// zero ck is [TokenChecker]. The error is that of a request the sandbox
// refused or could not run.
func JudgeFiles(ctx context.Context, sb *svc.Sandbox, p Program, cases []FileCase, ck Checker) (*Report, error) {
	if len(p.Run) == 0 {
		return nil, fmt.Errorf("svctest: Program.Run is empty")
	}
	ck = ck.orDefault()
	lim := sb.Limits()
	width := lim.MaxParallelTasks
	steps := lim.MaxSteps - 1 // the checks
	if p.Build != nil {
		steps--
	}
	if ck.Program.Build != nil {
		steps--
	}
	per := max(1, steps) * width
	rep := &Report{}
	for first := true; first || len(rep.Cases) < len(cases); first = false {
		chunk := cases[len(rep.Cases):]
		chunk = chunk[:min(len(chunk), per)]
		resp, err := sb.Run(ctx, FileJudgeRequest(p, ck, chunk, width))
		if err != nil {
			return rep, err
		}
		part, err := FileJudgeReport(p, ck, chunk, width, resp)
		if err != nil {
			return rep, err
		}
		for i := range part.Cases {
			if cases[len(rep.Cases)+i].Name == "" {
				part.Cases[i].Name = strconv.Itoa(len(rep.Cases) + i + 1)
			}
		}
		rep.Build, rep.CheckerBuild = part.Build, part.CheckerBuild
		rep.Cases = append(rep.Cases, part.Cases...)
		if len(chunk) == 0 {
			break
		}
	}
	return rep, nil
}

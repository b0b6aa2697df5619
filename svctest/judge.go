package svctest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/svc-sandbox/svc"
)

// Runs are the results of running a Program on inputs.
type Runs struct {
	// Build is the result of the build; nil for a program without one.
	// When the build failed, every run is not_started.
	Build *svc.Result
	// Results has one result per input, in the order of the inputs.
	Results []svc.Result
}

// BuildFailed reports whether the program had a build that did not exit
// with status 0.
func (r *Runs) BuildFailed() bool {
	return r.Build != nil && !(r.Build.Outcome == svc.OutcomeExited && r.Build.ExitCode == 0)
}

// RunInputs builds p once and runs it on every input, given as its
// standard input, each run under p.RunLimits. The runs go in parallel
// steps of the sandbox's
// MaxParallelTasks after the build, in one request while they fit in its
// MaxSteps, else in as many requests as it takes, each building again
// (the step cache, when the sandbox has one, replays those builds). The
// error is that of a request the sandbox refused or could not run.
func RunInputs(ctx context.Context, sb *svc.Sandbox, p Program, inputs []string) (*Runs, error) {
	if len(p.Run) == 0 {
		return nil, fmt.Errorf("svctest: Program.Run is empty")
	}
	lim := sb.Limits()
	width := lim.MaxParallelTasks
	steps := lim.MaxSteps
	if p.Build != nil {
		steps--
	}
	perRequest := max(1, steps) * width
	runs := &Runs{Results: make([]svc.Result, 0, len(inputs))}
	if len(inputs) == 0 && p.Build == nil {
		return runs, nil
	}
	// One request at least: with no inputs, the build alone.
	for first := true; first || len(runs.Results) < len(inputs); first = false {
		chunk := inputs[len(runs.Results):]
		chunk = chunk[:min(len(chunk), perRequest)]
		req := p.request(chunk, width)
		resp, err := sb.Run(ctx, req)
		if err != nil {
			return runs, err
		}
		results := resp.Results
		if p.Build != nil {
			b := results[0].Results[0]
			runs.Build = &b
			results = results[1:]
			if runs.BuildFailed() {
				for range inputs[len(runs.Results):] {
					runs.Results = append(runs.Results, svc.Result{Outcome: svc.OutcomeNotStarted, Error: "the build failed"})
				}
				return runs, nil
			}
		}
		for _, sr := range results {
			runs.Results = append(runs.Results, sr.Results...)
		}
	}
	return runs, nil
}

// request returns the request that builds p and runs it on inputs, in
// parallel steps of at most width tasks.
func (p Program) request(inputs []string, width int) *svc.Request {
	req := &svc.Request{}
	if p.Build != nil {
		cache := true
		req.Steps = append(req.Steps, svc.Single(svc.Task{
			Cmd: p.Build[0], Args: p.Build[1:], Files: p.Files,
			SandboxProfile: p.BuildProfile, Cache: &cache,
		}))
	}
	files := p.Files
	if p.Build != nil {
		files = nil // placed by the build step
	}
	for i := 0; i < len(inputs); i += width {
		var tasks []svc.Task
		for _, in := range inputs[i:min(i+width, len(inputs))] {
			tasks = append(tasks, svc.Task{
				Cmd: p.Run[0], Args: p.Run[1:], Stdin: in, Files: files,
				SandboxProfile: p.RunProfile, Limits: p.RunLimits,
			})
		}
		req.Steps = append(req.Steps, svc.Parallel(tasks...))
		files = nil
	}
	return req
}

// A Case is one test: an input and the output expected for it.
type Case struct {
	// Name names the case in a Report; "" is its number from 1.
	Name string
	// Input is the program's standard input.
	Input string
	// Want is the output expected, as the Compare of the judging reads it.
	Want string
}

// A Compare reports whether a program's output got is right when want is
// expected.
type Compare func(got, want string) bool

// Exact accepts exactly the expected bytes.
func Exact(got, want string) bool { return got == want }

// Tokens is whitespace-insensitive: it accepts the expected
// whitespace-separated tokens in the same order, however they are spaced
// and broken into lines.
func Tokens(got, want string) bool {
	return slices.Equal(strings.Fields(got), strings.Fields(want))
}

// A Verdict is a judge's verdict on one case.
type Verdict string

// The verdicts, from the outcomes of the runs (VerdictOf).
const (
	Accepted         Verdict = "accepted"
	WrongAnswer      Verdict = "wrong answer"
	TimeLimit        Verdict = "time limit exceeded"
	MemoryLimit      Verdict = "memory limit exceeded"
	OutputLimit      Verdict = "output limit exceeded"
	RuntimeError     Verdict = "runtime error"
	CompilationError Verdict = "compilation error"
	JudgeError       Verdict = "judge error"
)

// VerdictOf judges one run: exit status 0 and output that cmp accepts is
// accepted, other output a wrong answer; the timed_out and
// cpu_time_exceeded outcomes are a time limit, out_of_memory a memory
// limit, output_limit an output limit; a non-zero exit, a signal, a
// denied system call and the pids limit are runtime errors. A task that
// did not run, or that an OOM kill of something else than itself ended
// (ancestor_out_of_memory), is a judge error: run it again. A nil cmp is
// Exact.
func VerdictOf(r svc.Result, want string, cmp Compare) Verdict {
	if cmp == nil {
		cmp = Exact
	}
	switch r.Outcome {
	case svc.OutcomeExited:
		switch {
		case r.ExitCode != 0:
			return RuntimeError
		case r.StdoutTruncated:
			return OutputLimit
		case cmp(r.Stdout, want):
			return Accepted
		}
		return WrongAnswer
	case svc.OutcomeTimedOut, svc.OutcomeCPUTimeExceeded:
		return TimeLimit
	case svc.OutcomeOutOfMemory:
		return MemoryLimit
	case svc.OutcomeOutputLimit:
		return OutputLimit
	case svc.OutcomeSignaled, svc.OutcomePolicyViolation, svc.OutcomePidsLimit:
		return RuntimeError
	}
	return JudgeError
}

// A Report is the verdicts of a program on test cases.
type Report struct {
	// Build is the result of the build; nil for a program without one.
	Build *svc.Result
	// InteractorBuild is the result of the interactor's build
	// (JudgeInteractive); nil for none.
	InteractorBuild *svc.Result
	// CheckerBuild is the result of the checker's build (JudgeFiles);
	// nil for none.
	CheckerBuild *svc.Result
	// Cases are the cases with their verdicts, in order.
	Cases []CaseResult
}

// CaseResult is the verdict on one case and the run it comes from.
type CaseResult struct {
	Case
	// Verdict is the verdict on the case.
	Verdict Verdict
	// Result is the result of the run.
	Result svc.Result
	// Comment is the first line the checker wrote on its stderr
	// (JudgeFiles), at most 200 bytes; "" for none.
	Comment string
	// Interactor is the interactor's result (JudgeInteractive); nil for
	// none. Its Stdout is what it wrote to the solution, the solution's
	// Result.Stdout what the solution wrote to it.
	Interactor *svc.Result
}

// Judge builds p once, runs it on the input of every case in parallel
// (RunInputs) and judges each output against the case's Want with cmp
// (nil is Exact). A problem's time and memory limits are p.RunLimits:
// each run is held to them, while the build has the sandbox's. When the
// build fails, every verdict is a compilation error. The error is that of
// a request the sandbox refused or could not run.
func Judge(ctx context.Context, sb *svc.Sandbox, p Program, cases []Case, cmp Compare) (*Report, error) {
	inputs := make([]string, len(cases))
	for i, c := range cases {
		inputs[i] = c.Input
	}
	runs, err := RunInputs(ctx, sb, p, inputs)
	if err != nil {
		return nil, err
	}
	rep := &Report{Build: runs.Build}
	for i, c := range cases {
		if c.Name == "" {
			c.Name = fmt.Sprint(i + 1)
		}
		v := CompilationError
		if !runs.BuildFailed() {
			v = VerdictOf(runs.Results[i], c.Want, cmp)
		}
		rep.Cases = append(rep.Cases, CaseResult{Case: c, Verdict: v, Result: runs.Results[i]})
	}
	return rep, nil
}

// Verdicts returns the verdict of each case, in order.
func (r *Report) Verdicts() []Verdict {
	vs := make([]Verdict, len(r.Cases))
	for i, c := range r.Cases {
		vs[i] = c.Verdict
	}
	return vs
}

// Accepted reports whether every case was accepted.
func (r *Report) Accepted() bool {
	for _, c := range r.Cases {
		if c.Verdict != Accepted {
			return false
		}
	}
	return true
}

// String returns the report as a table: the build, then one line per
// case with its verdict, CPU time, wall time, peak memory, how the run
// ended and the system calls the sandbox refused it (stats.denied_syscalls:
// a program that misbehaves here and not on a host names the cause). A
// failed build shows the start of the compiler's messages.
//
//	build: exit 0, cpu 371 ms, wall 402 ms
//	case   verdict              cpu      wall     memory    ended              refused
//	1      accepted             1 ms     2 ms     1.1 MiB   exit 0
//	big    time limit exceeded  1000 ms  1004 ms  1.1 MiB   cpu_time_exceeded
//	io     wrong answer         1 ms     2 ms     1.1 MiB   exit 0             io_pgetevents 2
//
// The report of an interactive problem (JudgeInteractive) has the
// interactor's build after the solution's, and a last column with the
// interactor's comment: how it ended and its first line on stderr.
func (r *Report) String() string {
	var b strings.Builder
	writeBuild(&b, "build", r.Build)
	writeBuild(&b, "interactor build", r.InteractorBuild)
	writeBuild(&b, "checker build", r.CheckerBuild)
	interactive := slices.ContainsFunc(r.Cases, func(c CaseResult) bool { return c.Interactor != nil })
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := "case\tverdict\tcpu\twall\tmemory\tended\trefused"
	if interactive {
		head += "\tinteractor"
	}
	fmt.Fprintln(tw, head)
	for _, c := range r.Cases {
		res := c.Result
		line := fmt.Sprintf("%s\t%s\t-\t-\t-\t%s\t", c.Name, c.Verdict, res.Outcome)
		if res.Outcome.Ran() {
			line = fmt.Sprintf("%s\t%s\t%s\t%d ms\t%s\t%s\t%s", c.Name, c.Verdict, cpuTime(res.Stats),
				res.Stats.WallTimeMs, memory(res.Stats), ended(res), refused(res.Stats))
		}
		if interactive {
			line += "\t" + comment(c.Interactor)
		}
		fmt.Fprintln(tw, strings.TrimRight(line, "\t"))
	}
	tw.Flush()
	return b.String()
}

// writeBuild writes the line of a build, and the start of the
// compiler's messages when it failed; nothing for none.
func writeBuild(b *strings.Builder, name string, r *svc.Result) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "%s: %s, cpu %s, wall %d ms", name, ended(*r), cpuTime(r.Stats), r.Stats.WallTimeMs)
	if d := refused(r.Stats); d != "" {
		fmt.Fprintf(b, ", refused %s", d)
	}
	b.WriteByte('\n')
	if msg := strings.TrimSpace(r.Stderr); msg != "" && !exitedZero(*r) {
		lines := strings.SplitN(msg, "\n", 11)
		if len(lines) > 10 {
			lines[10] = "..."
		}
		for _, l := range lines {
			fmt.Fprintf(b, "  %s\n", l)
		}
	}
}

// comment says how an interactor ended and the first line it wrote on
// stderr, shortened: "exit 1: wrong answer: 21 questions".
func comment(r *svc.Result) string {
	if r == nil {
		return "-"
	}
	s := ended(*r)
	if !r.Outcome.Ran() {
		return s
	}
	if line, _, _ := strings.Cut(strings.TrimSpace(r.Stderr), "\n"); line != "" {
		if r := []rune(line); len(r) > 60 {
			line = string(r[:57]) + "..."
		}
		s += ": " + line
	}
	return s
}

// ended says how a run ended: "exit 0", "signal 6", or the outcome.
func ended(r svc.Result) string {
	switch r.Outcome {
	case svc.OutcomeExited:
		return fmt.Sprintf("exit %d", r.ExitCode)
	case svc.OutcomeSignaled:
		return fmt.Sprintf("signal %d", r.Signal)
	}
	return string(r.Outcome)
}

func cpuTime(s svc.Stats) string {
	if s.CPUUsageUsec == nil {
		return "-"
	}
	return fmt.Sprintf("%d ms", *s.CPUUsageUsec/1000)
}

// refused lists the calls the sandbox refused a run, by name with their
// counts ("writev 3, poll 1"), "" for none, "?" where it could not tell.
func refused(s svc.Stats) string {
	if s.DeniedSyscalls == nil {
		return "?"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s.DeniedSyscalls)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, s.DeniedSyscalls[name]))
	}
	return strings.Join(parts, ", ")
}

func memory(s svc.Stats) string {
	if s.MemoryPeakBytes == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(*s.MemoryPeakBytes)/svc.MiB)
}

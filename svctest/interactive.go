package svctest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/svc-sandbox/svc"
)

// The directories of the workspace that hold the programs of an
// interactive problem and the files of its cases.
const (
	solutionDir   = "solution"
	interactorDir = "interactor"
	casesDir      = "cases"
)

// JudgeInteractive judges an interactive problem: solution talks to
// interactor, which knows the case and decides. Both are built once, each
// in a directory of its own (the builds run as one parallel step, marked
// cacheable), then each case is a pair of tasks of a parallel step, each
// feeding the other (svc.Task.StdinFrom), several pairs a step (half
// the sandbox's MaxParallelTasks), in as many requests as it takes. Each
// task has its own sandbox, limits and profile: its program's RunLimits
// and RunProfile (a problem's limits are the solution's RunLimits; an
// interactor that waits on the solution needs the same wall time).
//
// The interactor is called as testlib's are: its Run, then the paths of
// the case's input (Case.Input), of an output file it may write, and of
// the answer (Case.Want), each of its own per case. It reads the
// solution's output on its stdin and writes to the solution on its
// stdout; its exit status and its output decide, as testlib's do
// ([VerdictOfInteraction]): 0 accepted, 1 or 2 a wrong answer (or a
// presentation error), 3 or anything else a judge error; its first line
// on stderr is the verdict's comment in the report.
//
// When the solution's build fails every verdict is a compilation error;
// when the interactor's fails, a judge error. The error is that of a
// request the sandbox refused or could not run.
func JudgeInteractive(ctx context.Context, sb *svc.Sandbox, solution, interactor Program, cases []Case) (*Report, error) {
	if len(solution.Run) == 0 || len(interactor.Run) == 0 {
		return nil, errors.New("svctest: the solution's or the interactor's Program.Run is empty")
	}
	lim := sb.Limits()
	pairs := lim.MaxParallelTasks / 2
	if pairs < 1 {
		return nil, fmt.Errorf("svctest: JudgeInteractive runs two tasks a case: MaxParallelTasks is %d", lim.MaxParallelTasks)
	}
	steps := lim.MaxSteps
	if solution.Build != nil || interactor.Build != nil {
		steps--
	}
	perRequest := max(1, steps) * pairs
	rep := &Report{}
	if len(cases) == 0 && solution.Build == nil && interactor.Build == nil {
		return rep, nil
	}
	for first := 0; first == 0 || first < len(cases); first += perRequest {
		chunk := cases[first:min(len(cases), first+perRequest)]
		req := interactiveRequest(solution, interactor, first, chunk, pairs)
		resp, err := sb.Run(ctx, req)
		if err != nil {
			return rep, err
		}
		results := resp.Results
		if solution.Build != nil || interactor.Build != nil {
			builds := results[0].Results
			if solution.Build != nil {
				rep.Build, builds = &builds[0], builds[1:]
			}
			if interactor.Build != nil {
				rep.InteractorBuild = &builds[0]
			}
			results = results[1:]
		}
		verdict := Verdict("")
		switch {
		case rep.BuildFailed():
			verdict = CompilationError
		case rep.InteractorBuild != nil && !exitedZero(*rep.InteractorBuild):
			verdict = JudgeError
		}
		for k, c := range chunk {
			if c.Name == "" {
				c.Name = strconv.Itoa(first + k + 1)
			}
			cr := CaseResult{Case: c, Verdict: verdict}
			if verdict == "" {
				game := results[k/pairs].Results[2*(k%pairs):]
				inter := game[0]
				cr.Result, cr.Interactor = game[1], &inter
				cr.Verdict = VerdictOfInteraction(cr.Result, inter)
			} else {
				cr.Result = svc.Result{Outcome: svc.OutcomeNotStarted, Error: "a build failed"}
			}
			rep.Cases = append(rep.Cases, cr)
		}
		if verdict != "" {
			// No build to retry: the same sources fail the same way.
			for k, c := range cases[first+len(chunk):] {
				if c.Name == "" {
					c.Name = strconv.Itoa(first + len(chunk) + k + 1)
				}
				rep.Cases = append(rep.Cases, CaseResult{Case: c, Verdict: verdict,
					Result: svc.Result{Outcome: svc.OutcomeNotStarted, Error: "a build failed"}})
			}
			return rep, nil
		}
	}
	return rep, nil
}

// exitedZero reports whether r exited with status 0.
func exitedZero(r svc.Result) bool { return r.Outcome == svc.OutcomeExited && r.ExitCode == 0 }

// BuildFailed reports whether the solution had a build that did not exit
// with status 0.
func (r *Report) BuildFailed() bool { return r.Build != nil && !exitedZero(*r.Build) }

// interactiveRequest returns the request that builds the solution and
// the interactor and plays cases (the first of which is case number
// first, from 0), pairs games a step.
func interactiveRequest(solution, interactor Program, first int, cases []Case, pairs int) *svc.Request {
	req := &svc.Request{StopOnFailure: true}
	var builds []svc.Task
	cache := true
	for _, p := range []struct {
		prog Program
		dir  string
	}{{solution, solutionDir}, {interactor, interactorDir}} {
		if p.prog.Build != nil {
			builds = append(builds, svc.Task{
				Cmd: p.prog.Build[0], Args: p.prog.Build[1:], Files: under(p.dir, p.prog.Files),
				WorkingDir: "/svc/" + p.dir, SandboxProfile: p.prog.BuildProfile, Cache: &cache,
			})
		}
	}
	if len(builds) > 0 {
		req.Steps = append(req.Steps, svc.Parallel(builds...))
	}
	// Without a build a program's files go with its first run.
	solFiles, interFiles := under(solutionDir, solution.Files), under(interactorDir, interactor.Files)
	if solution.Build != nil {
		solFiles = nil
	}
	if interactor.Build != nil {
		interFiles = nil
	}
	for i := 0; i < len(cases); i += pairs {
		var tasks []svc.Task
		for k, c := range cases[i:min(i+pairs, len(cases))] {
			dir := casesDir + "/" + strconv.Itoa(first+i+k)
			files := map[string]svc.File{dir + "/input.txt": {Content: c.Input}, dir + "/answer.txt": {Content: c.Want}}
			for p, f := range interFiles {
				files[p] = f
			}
			abs := "/svc/" + dir + "/"
			// Each feeds the other: the interactor is task 2k, the
			// solution 2k+1.
			inter, sol := 2*k, 2*k+1
			tasks = append(tasks,
				svc.Task{
					Cmd: interactor.Run[0], Args: append(append([]string(nil), interactor.Run[1:]...), abs+"input.txt", abs+"output.txt", abs+"answer.txt"),
					Files: files, WorkingDir: "/svc/" + interactorDir, SandboxProfile: interactor.RunProfile,
					Limits: interactor.RunLimits, StdinFrom: &sol,
				},
				svc.Task{
					Cmd: solution.Run[0], Args: solution.Run[1:], Files: solFiles,
					WorkingDir: "/svc/" + solutionDir, SandboxProfile: solution.RunProfile,
					Limits: solution.RunLimits, StdinFrom: &inter,
				})
			solFiles, interFiles = nil, nil
		}
		req.Steps = append(req.Steps, svc.Parallel(tasks...))
	}
	return req
}

// under returns files with each path under dir.
func under(dir string, files map[string]svc.File) map[string]svc.File {
	if files == nil {
		return nil
	}
	m := make(map[string]svc.File, len(files))
	for p, f := range files {
		m[dir+"/"+p] = f
	}
	return m
}

// VerdictOfInteraction judges one game of an interactive problem from
// the results of the solution and of the interactor, as testlib's
// interactors and DOMjudge's rules have it: the solution's own time and
// memory limits first (a solution killed for them could not answer);
// then the interactor's word, exit status 1 or 2 a wrong answer (even
// when the solution then crashed: the interactor may have closed the
// pipes on it), as is an interactor killed by SIGPIPE (the solution
// stopped reading); then the solution's other failures, its output limit
// and runtime errors (a non-zero exit, a signal, a denied call, the pids
// limit); then exit status 0 of the interactor, accepted. Anything else
// (the interactor's exit status 3, "fail", its crash or its limits, a
// task that did not run) is a judge error.
func VerdictOfInteraction(solution, interactor svc.Result) Verdict {
	if !solution.Outcome.Ran() || !interactor.Outcome.Ran() {
		return JudgeError
	}
	switch solution.Outcome {
	case svc.OutcomeTimedOut, svc.OutcomeCPUTimeExceeded:
		return TimeLimit
	case svc.OutcomeOutOfMemory:
		return MemoryLimit
	}
	switch {
	case interactor.Outcome == svc.OutcomeExited && (interactor.ExitCode == 1 || interactor.ExitCode == 2):
		return WrongAnswer
	case interactor.Outcome == svc.OutcomeSignaled && interactor.Signal == int(syscall.SIGPIPE):
		return WrongAnswer
	}
	switch solution.Outcome {
	case svc.OutcomeOutputLimit:
		return OutputLimit
	case svc.OutcomeSignaled, svc.OutcomePolicyViolation, svc.OutcomePidsLimit:
		return RuntimeError
	case svc.OutcomeExited:
		if solution.ExitCode != 0 {
			return RuntimeError
		}
		if exitedZero(interactor) {
			return Accepted
		}
	}
	return JudgeError
}

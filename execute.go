package svc

import (
	"context"
	"errors"
	"time"
)

// The execute stage: the steps of a plan run in order in one workspace,
// each replayed from the step cache or executed (and stored), until the
// overall deadline.

// hardDeadlineGrace is how long a request may run past its overall
// deadline before it is killed (API.md, Deadlines).
const hardDeadlineGrace = 2 * time.Second

var errHardDeadline = errors.New("overall deadline passed")

// execution is what the execute stage hands the answer: the results of
// the steps, and how many the cache replayed and stored.
type execution struct {
	results          []StepResult
	replayed, stored int
}

// execute runs the steps of p in ws, through the step cache for the
// leading steps it has keys for, starting no step after deadline. A
// layer that could not be replayed leaves the workspace half changed:
// execute then empties it and runs the request again from its first
// step, executing every step.
func (s *Sandbox) execute(ctx context.Context, ws workspace, p *plan, deadline time.Time) (*execution, error) {
	cr := s.newCacheRun(ws, p, true)
	budget := s.newOutputBudget()
	results, err := s.runSteps(ctx, ws, p, deadline, cr, budget)
	if errors.Is(err, errReplayFailed) {
		s.log.Warn("step cache: a replay failed; running the request again without the cache's layers", "err", err)
		if err = ws.reset(); err == nil {
			cr = s.newCacheRun(ws, p, false)
			results, err = s.runSteps(ctx, ws, p, deadline, cr, budget)
		}
	}
	if err != nil {
		return nil, err
	}
	ex := &execution{results: results}
	ex.replayed, ex.stored = cr.counts()
	return ex, nil
}

// runSteps runs the steps of p in order in ws, through the step cache
// for the steps cr covers, the outputs they collect taken from budget.
func (s *Sandbox) runSteps(ctx context.Context, ws workspace, p *plan, deadline time.Time, cr *cacheRun, budget *outputBudget) ([]StepResult, error) {
	results := make([]StepResult, len(p.steps))
	failed := false
	for i := range p.steps {
		step := &p.steps[i]
		var skip string
		switch {
		case failed && p.req.StopOnFailure:
			skip = "an earlier step failed and stop_on_failure is set"
		case !time.Now().Before(deadline):
			skip = "the request's overall deadline passed before this step"
		}
		if skip != "" {
			results[i] = notRun(step, OutcomeNotStarted, skip)
			cr.breakChain()
			continue
		}
		// The next step's sandboxes are built while this one runs, unless
		// the cache may replay it.
		if i+1 < len(p.steps) && !cr.chained(i+1) {
			ws.prepare(ctx, p.steps[i+1].tasks)
		}
		var sr StepResult
		var err error
		if cr.chained(i) {
			sr, err = cr.step(ctx, i, step)
		} else {
			sr, err = ws.runStep(ctx, step, p.stored)
		}
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Run or replayed, the step's tasks have all ended.
		if err := s.collectOutputs(ctx, ws, step, &sr, budget); err != nil {
			return nil, err
		}
		results[i] = sr
		for _, r := range sr.Results {
			if r.Outcome != OutcomeExited || r.ExitCode != 0 {
				failed = true
			}
		}
	}
	return results, nil
}

// notRun returns a step result of not-run task results.
func notRun(step *stepPlan, o Outcome, why string) StepResult {
	sr := StepResult{Parallel: step.parallel, Results: make([]Result, len(step.tasks))}
	for i := range sr.Results {
		sr.Results[i] = Result{Outcome: o, Error: why}
	}
	return sr
}

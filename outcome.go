package svc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/svc-sandbox/svc/internal/cgroup"
	"github.com/svc-sandbox/svc/internal/runner"
)

// The answer stage: how each task ended, as API.md names it (result, from
// the runner's report and the task's cgroup statistics), and what Run
// returns for a request that ran: its response, or the error it ended with.

// result interprets a finished task, applying API.md's outcome precedence.
func result(rr *runner.Result, st cgroup.Stats) Result {
	r := Result{
		Stdout:          validUTF8(string(rr.Stdout)),
		Stderr:          validUTF8(string(rr.Stderr)),
		StdoutTruncated: rr.StdoutTruncated,
		StderrTruncated: rr.StderrTruncated,
		Stats: Stats{
			WallTimeMs:        rr.WallTime.Milliseconds(),
			CPUUsageUsec:      st.CPUUsageUsec,
			CPUUserUsec:       st.CPUUserUsec,
			CPUSystemUsec:     st.CPUSystemUsec,
			CPUNrThrottled:    st.CPUNrThrottled,
			CPUThrottledUsec:  st.CPUThrottledUsec,
			MemoryPeakBytes:   st.MemoryPeakBytes,
			PidsPeak:          st.PidsPeak,
			OOMKillCount:      st.OOMKills,
			PidsLimitHitCount: st.PidsLimitHits,
		},
	}
	// A task killed by us (or whose init was killed) has no status of its
	// own: the kernel killed it with SIGKILL.
	ws := rr.Report.Status
	switch {
	case rr.Report.Exited && ws.Signaled():
		r.Signal = int(ws.Signal())
		r.ExitCode = 128 + r.Signal
	case rr.Report.Exited:
		r.ExitCode = ws.ExitStatus()
	default:
		r.Signal = int(syscall.SIGKILL)
		r.ExitCode = 128 + r.Signal
	}
	oom := st.OOMKills != nil && *st.OOMKills > 0
	pidsHit := st.PidsLimitHits != nil && *st.PidsLimitHits > 0
	switch {
	case r.Signal == int(syscall.SIGSYS):
		r.Outcome = OutcomePolicyViolation
	case oom && !st.OwnLimitOOM:
		r.Outcome = OutcomeAncestorOutOfMemory
	case oom:
		r.Outcome = OutcomeOutOfMemory
	case rr.TimedOut:
		r.Outcome = OutcomeTimedOut
	case rr.CPUExceeded || r.Signal == int(syscall.SIGXCPU):
		r.Outcome = OutcomeCPUTimeExceeded
	case rr.OutputExceeded:
		r.Outcome = OutcomeOutputLimit
	case pidsHit && (r.ExitCode != 0 || r.Signal != 0):
		r.Outcome = OutcomePidsLimit
	case r.Signal != 0:
		r.Outcome = OutcomeSignaled
	default:
		r.Outcome = OutcomeExited
	}
	return r
}

// validUTF8 returns s with each invalid byte replaced by U+FFFD. Most
// text is valid: utf8.ValidString checks it eight ASCII bytes at a time,
// where strings.ToValidUTF8 decodes every rune before it returns s
// unchanged.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// answer is the last stage of Run: the response of a request whose
// execution ended with err, or the error Run returns.
func (s *Sandbox) answer(ctx, rctx context.Context, req *Request, ex *execution, err error) (*Response, error) {
	if err != nil {
		return nil, s.runError(ctx, rctx, err)
	}
	return &Response{
		Results: ex.results,
		Legacy:  req.Legacy,
		Cache:   CacheSummary{Enabled: s.cfg.Cache != nil, ReplayedSteps: ex.replayed, StoredSteps: ex.stored},
	}, nil
}

// runError turns an error of a running request into the error Run returns.
func (s *Sandbox) runError(ctx, rctx context.Context, err error) error {
	switch {
	case context.Cause(s.closing) == errClosing && s.closing.Err() != nil:
		return &Error{Code: CodeShuttingDown, Msg: "the sandbox shut down while the request ran", Err: err}
	case context.Cause(rctx) == errHardDeadline:
		return &Error{Code: CodeDeadlineExceeded, Msg: fmt.Sprintf("the request overran its overall timeout of %v and was killed", s.limits.OverallTimeout)}
	case ctx.Err() != nil:
		return &Error{Code: CodeOf(ctx.Err()), Msg: "the request was cancelled before it finished", Err: ctx.Err()}
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: CodeSandboxSetupFailed, Msg: "sandbox: setup failed", Err: err}
}

package svc

import (
	"syscall"
	"testing"

	"github.com/svc-sandbox/svc/internal/cgroup"
	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/runner"
)

// TestResultPrecedence: result applies API.md's outcome precedence to
// what the runner and the task's cgroup say, without running anything.
func TestResultPrecedence(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	kill := 128 + int(syscall.SIGKILL)
	exit := func(code int) initproc.Report {
		return initproc.Report{Exited: true, Status: syscall.WaitStatus(code << 8)}
	}
	sig := func(s syscall.Signal) initproc.Report {
		return initproc.Report{Exited: true, Status: syscall.WaitStatus(s)}
	}
	for _, c := range []struct {
		name     string
		rr       runner.Result
		st       cgroup.Stats
		outcome  Outcome
		exitCode int
		signal   int
	}{
		{"exit 0", runner.Result{Report: exit(0)}, cgroup.Stats{}, OutcomeExited, 0, 0},
		{"exit 3", runner.Result{Report: exit(3)}, cgroup.Stats{}, OutcomeExited, 3, 0},
		{"signal", runner.Result{Report: sig(syscall.SIGSEGV)}, cgroup.Stats{}, OutcomeSignaled, 128 + int(syscall.SIGSEGV), int(syscall.SIGSEGV)},
		{"killed by the runner", runner.Result{TimedOut: true}, cgroup.Stats{}, OutcomeTimedOut, kill, int(syscall.SIGKILL)},
		{"SIGSYS over an OOM kill", runner.Result{Report: sig(syscall.SIGSYS)}, cgroup.Stats{OOMKills: n(1), OwnLimitOOM: true},
			OutcomePolicyViolation, 128 + int(syscall.SIGSYS), int(syscall.SIGSYS)},
		{"an ancestor's OOM", runner.Result{}, cgroup.Stats{OOMKills: n(1)}, OutcomeAncestorOutOfMemory, kill, int(syscall.SIGKILL)},
		{"its own OOM over a timeout", runner.Result{TimedOut: true}, cgroup.Stats{OOMKills: n(2), OwnLimitOOM: true},
			OutcomeOutOfMemory, kill, int(syscall.SIGKILL)},
		{"timeout over CPU", runner.Result{TimedOut: true, CPUExceeded: true}, cgroup.Stats{}, OutcomeTimedOut, kill, int(syscall.SIGKILL)},
		{"CPU limit", runner.Result{CPUExceeded: true}, cgroup.Stats{}, OutcomeCPUTimeExceeded, kill, int(syscall.SIGKILL)},
		{"SIGXCPU", runner.Result{Report: sig(syscall.SIGXCPU)}, cgroup.Stats{}, OutcomeCPUTimeExceeded, 128 + int(syscall.SIGXCPU), int(syscall.SIGXCPU)},
		{"output over pids", runner.Result{OutputExceeded: true}, cgroup.Stats{PidsLimitHits: n(1)}, OutcomeOutputLimit, kill, int(syscall.SIGKILL)},
		{"pids limit, failed", runner.Result{Report: exit(1)}, cgroup.Stats{PidsLimitHits: n(1)}, OutcomePidsLimit, 1, 0},
		{"pids limit, exit 0", runner.Result{Report: exit(0)}, cgroup.Stats{PidsLimitHits: n(1)}, OutcomeExited, 0, 0},
	} {
		r := result(&c.rr, c.st)
		if r.Outcome != c.outcome || r.ExitCode != c.exitCode || r.Signal != c.signal {
			t.Errorf("%s: %s exit %d signal %d, want %s exit %d signal %d",
				c.name, r.Outcome, r.ExitCode, r.Signal, c.outcome, c.exitCode, c.signal)
		}
	}
}

// TestResultOutput: output is valid UTF-8 and carries its truncation
// flags; the statistics are the cgroup's.
func TestResultOutput(t *testing.T) {
	peak := int64(1 << 20)
	rr := runner.Result{Report: initproc.Report{Exited: true}, Stdout: []byte("a\xffb"), Stderr: []byte("é"), StdoutTruncated: true}
	r := result(&rr, cgroup.Stats{MemoryPeakBytes: &peak})
	if r.Stdout != "a\ufffdb" || r.Stderr != "é" || !r.StdoutTruncated || r.StderrTruncated {
		t.Errorf("stdout %q stderr %q truncated %v %v", r.Stdout, r.Stderr, r.StdoutTruncated, r.StderrTruncated)
	}
	if r.Stats.MemoryPeakBytes != &peak {
		t.Errorf("memory peak %v, want the cgroup's", r.Stats.MemoryPeakBytes)
	}
}

package svc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// A Request is an ordered list of steps run in one sandbox workspace.
// The zero value is an empty (invalid) request.
type Request struct {
	// Steps run in order; each is one task or a set of concurrent tasks.
	Steps []Step `json:"steps"`
	// Cache is the default of Task.Cache for tasks that do not set it.
	// It is ignored when the step cache is disabled.
	Cache bool `json:"cache"`
	// StopOnFailure reports the steps after a step with a task that did
	// not exit with status 0 as not_started instead of running them.
	StopOnFailure bool `json:"stop_on_failure"`
	// Legacy is true for a request decoded from a bare JSON array of steps
	// (spec 2.4). Its response is encoded as a bare array of step results,
	// and every step is cacheable when the cache is enabled.
	Legacy bool `json:"-"`
}

// A Step is one task, or a parallel set of tasks that run concurrently, each
// in its own PID namespace and cgroup, sharing the workspace. It keeps its
// JSON shape: an object for a single task, an array for a parallel step.
type Step struct {
	// Tasks are the step's tasks: one for a single step.
	Tasks []Task
	// Parallel marks a parallel step, encoded as an array even when it
	// has one task.
	Parallel bool
}

// Single returns a step of one task.
func Single(t Task) Step { return Step{Tasks: []Task{t}} }

// Parallel returns a parallel step of the given tasks.
func Parallel(ts ...Task) Step { return Step{Tasks: ts, Parallel: true} }

// array reports whether the step is an array in JSON (and its result
// too): a parallel step, or one of other than one task.
func (s Step) array() bool { return arrayShaped(s.Parallel, len(s.Tasks)) }

// arrayShaped is the rule of Step.array, for a step or a step result of n
// tasks: the one place that says which shape a step has.
func arrayShaped(parallel bool, n int) bool { return parallel || n != 1 }

// MarshalJSON encodes a single step as an object and a parallel step as an array.
func (s Step) MarshalJSON() ([]byte, error) {
	if s.array() {
		if s.Tasks == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(s.Tasks)
	}
	return json.Marshal(s.Tasks[0])
}

// A Task is one program to run (spec 2.1). The zero value is invalid: Cmd is
// required.
type Task struct {
	// Cmd is the program, resolved through PATH inside the sandbox unless
	// it contains a slash.
	Cmd string `json:"cmd"`
	// Args are the arguments after the command's name.
	Args []string `json:"args,omitempty"`
	// Env is added to the fixed task environment (PATH, HOME, TMPDIR, LANG).
	Env map[string]string `json:"env,omitempty"`
	// Stdin is written to the task's standard input, which is then closed.
	Stdin string `json:"stdin,omitempty"`
	// Files are placed in the workspace before the task starts; keys are
	// normalized workspace-relative paths.
	Files map[string]File `json:"files,omitempty"`
	// WorkingDir is an absolute directory inside the sandbox; "" is /svc.
	WorkingDir string `json:"working_dir,omitempty"`
	// SandboxProfile selects the system-call policy; "" is the
	// service's default profile.
	SandboxProfile Profile `json:"sandbox_profile,omitempty"`
	// Cache declares the task deterministic; nil takes Request.Cache.
	Cache *bool `json:"cache,omitempty"`
	// Limits lower the service's limits for this task; the zero value
	// is the service's (see TaskLimits).
	Limits TaskLimits `json:"limits,omitzero"`
	// Outputs are paths of files the task leaves behind, relative to
	// the workspace (/svc) whatever the working dir, at most
	// [MaxOutputs]. After the step's tasks have all ended, whatever
	// their outcome, each is read without following a symlink at any
	// component and kept in the file store ([Config].Files) like an
	// upload, named by its base name; the result's Outputs say where.
	// Validate normalizes them like Files keys. A replayed step has the
	// same outputs, read again from the workspace the replay leaves.
	Outputs []string `json:"outputs,omitempty"`
	// StdinFrom, in a parallel step, is the index of another task of the
	// step whose standard output becomes this task's standard input
	// (Stdin must then be empty); nil for none. A task feeds one task at
	// most; two tasks may feed each other (an interactor and a
	// solution). The producer's Result.Stdout is the transcript of what
	// it wrote, cut at its output limit with StdoutTruncated while the
	// bytes keep flowing: a piped stream is never OutcomeOutputLimit.
	// When the consumer has ended, the producer's writes fail with EPIPE
	// (SIGPIPE); when the producer has ended, the consumer reads
	// end-of-file.
	StdinFrom *int `json:"stdin_from,omitempty"`
	// StdinPath is a workspace-relative path (validated and normalized
	// like a Files key) whose file becomes the task's standard input:
	// one the step's Files place, or one an earlier step left. The
	// service opens it beneath the workspace without following a
	// symlink at any component, and the open file itself is the task's
	// fd 0: nothing is copied. A path with nothing at it, or with
	// something other than a regular file reached without a symlink,
	// does not start the task: its result is a completed one with exit
	// code 127 and a stderr line "svc: stdin_path ...: <why>", as for a
	// command that is not found. Not with a non-empty Stdin nor with
	// StdinFrom.
	StdinPath string `json:"stdin_path,omitempty"`
	// StdoutPath and StderrPath send the stream to that workspace file
	// instead of the result: the service creates it (and its missing
	// directories) or truncates it before the task starts, owned by the
	// task's user, without following a symlink at any component (what
	// StdinPath refuses, they refuse the same way). The file holds at
	// most the task's output limit: a task that writes more is ended
	// with OutcomeOutputLimit and the file holds exactly the limit, as
	// it does when the workspace is full. The result's Stdout (Stderr)
	// is then empty, and the stream does not count against the
	// request's output budget. The two may name the same file: both
	// streams go into one, as 2>&1, within one output limit. Neither
	// may name StdinPath, and a task whose stdout feeds another
	// (StdinFrom) has no StdoutPath.
	StdoutPath string `json:"stdout_path,omitempty"`
	StderrPath string `json:"stderr_path,omitempty"`
}

// A File is the content of a file placed in the workspace: inline bytes, or
// a reference to a file in the file store. In JSON it is a string, or an
// object {"file_id": "<sha256 hex>"}.
type File struct {
	Content string // used when FileID is ""
	FileID  string // lowercase hex SHA-256 of a stored file
}

// MarshalJSON encodes the inline string or the {"file_id": ...} object.
func (f File) MarshalJSON() ([]byte, error) {
	if f.FileID != "" {
		return json.Marshal(struct {
			FileID string `json:"file_id"`
		}{f.FileID})
	}
	return json.Marshal(f.Content)
}

// UnmarshalJSON accepts a string or an object with exactly a "file_id".
func (f *File) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*f = File{}
		return json.Unmarshal(b, &f.Content)
	}
	var ref struct {
		FileID *string `json:"file_id"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil || ref.FileID == nil {
		return fmt.Errorf(`expected a string or an object {"file_id": "<sha256 hex>"}`)
	}
	*f = File{FileID: *ref.FileID}
	return nil
}

// Profile names a versioned system-call policy (spec 2.1, 9).
type Profile string

// The sandbox profiles. v2 profiles are allowlists, v1 denylists; compile
// profiles may create processes and sockets, native ones may not.
const (
	ProfileCompileV2 Profile = "compile_v2"
	ProfileNativeV2  Profile = "native_v2"
	ProfileCompileV1 Profile = "compile_v1"
	ProfileNativeV1  Profile = "native_v1"
)

// Profiles returns every profile the library knows.
func Profiles() []Profile {
	return []Profile{ProfileCompileV2, ProfileNativeV2, ProfileCompileV1, ProfileNativeV1}
}

func (p Profile) known() bool {
	for _, q := range Profiles() {
		if p == q {
			return true
		}
	}
	return false
}

// Outcome says how a task ended. Its string value is the wire value.
type Outcome string

// The outcomes, in precedence order when several apply (API.md).
const (
	OutcomeInfrastructureFailure Outcome = "infrastructure_failure"
	OutcomeNotStarted            Outcome = "not_started"
	OutcomePolicyViolation       Outcome = "policy_violation"
	OutcomeAncestorOutOfMemory   Outcome = "ancestor_out_of_memory"
	OutcomeOutOfMemory           Outcome = "out_of_memory"
	OutcomeTimedOut              Outcome = "timed_out"
	OutcomeCPUTimeExceeded       Outcome = "cpu_time_exceeded"
	OutcomeOutputLimit           Outcome = "output_limit"
	OutcomePidsLimit             Outcome = "pids_limit"
	OutcomeSignaled              Outcome = "signaled"
	OutcomeExited                Outcome = "exited"
)

// Outcomes returns every outcome, in precedence order.
func Outcomes() []Outcome {
	return []Outcome{
		OutcomeInfrastructureFailure, OutcomeNotStarted, OutcomePolicyViolation,
		OutcomeAncestorOutOfMemory, OutcomeOutOfMemory, OutcomeTimedOut,
		OutcomeCPUTimeExceeded, OutcomeOutputLimit, OutcomePidsLimit,
		OutcomeSignaled, OutcomeExited,
	}
}

// Ran reports whether the outcome belongs to a completed result: the task's
// process was created and ended.
func (o Outcome) Ran() bool {
	return o != OutcomeNotStarted && o != OutcomeInfrastructureFailure && o != ""
}

// Result is the result of one task: completed (Outcome.Ran) with an exit
// code, output and statistics, or not run with a reason in Error.
type Result struct {
	// Outcome says how the task ended; Outcome.Ran tells a completed
	// result from a not-run one.
	Outcome Outcome
	// ExitCode is the exit status, or 128+Signal when a signal ended the task.
	ExitCode int
	// Signal is the number of the signal that ended the task, or 0.
	Signal int
	// Replayed is true when the result came from the step cache; Stats
	// are then those of the original run.
	Replayed bool
	// Stdout and Stderr are the task's output, each cut at the output
	// limit; bytes that are not UTF-8 are replaced by U+FFFD.
	Stdout, Stderr string
	// StdoutTruncated and StderrTruncated report a stream cut short.
	StdoutTruncated bool
	StderrTruncated bool
	// Stats are the task's resource statistics.
	Stats Stats
	// Error says why a task did not run (not-run results only).
	Error string
	// Outputs holds an entry for each path of the task's Outputs, by
	// its normalized path: the stored file, or why there is none. It is
	// nil for a task without outputs and for a not-run result.
	Outputs map[string]OutputFile
}

// OutputFile is a collected output (Task.Outputs): a file of the file
// store and its size, or an Error and nothing else. In JSON it is
// {"file_id": "<hex64>", "size": N} or {"error": "<reason>"}.
type OutputFile struct {
	// FileID is the lowercase hex SHA-256 of the content: read it with
	// [FileStore.Open], or over HTTP with GET /file/{id}.
	FileID string
	// Size is the size of the content in bytes.
	Size int64
	// Error says why there is no file; "" when there is one.
	Error OutputError
}

// OutputError says why a collected output has no file. Its string value
// is the wire value.
type OutputError string

// The reasons a collected output has no file.
const (
	// OutputNotFound: nothing is at the path (or a component of it is
	// not a directory).
	OutputNotFound OutputError = "not_found"
	// OutputNotRegular: the path is a directory, a device, a FIFO, a
	// socket, or a symlink is at one of its components.
	OutputNotRegular OutputError = "not_regular"
	// OutputTooLarge: the file is larger than an upload may be
	// (Limits.UploadFileLimit, and the file store's MaxUploadBytes).
	OutputTooLarge OutputError = "too_large"
	// OutputStoreFull: the file store could not take the file: it is
	// full, or failing (the cause is logged), or the file would take the
	// outputs of the request together past Config.WorkspaceSize.
	OutputStoreFull OutputError = "store_full"
)

// MaxOutputs is the most paths a task's Outputs may hold.
const MaxOutputs = 32

type outputFileJSON struct {
	FileID string      `json:"file_id,omitempty"`
	Size   *int64      `json:"size,omitempty"`
	Error  OutputError `json:"error,omitempty"`
}

// MarshalJSON encodes {"file_id": ..., "size": ...} or {"error": ...}.
func (o OutputFile) MarshalJSON() ([]byte, error) {
	if o.Error != "" {
		return json.Marshal(outputFileJSON{Error: o.Error})
	}
	return json.Marshal(outputFileJSON{FileID: o.FileID, Size: &o.Size})
}

// UnmarshalJSON decodes either shape.
func (o *OutputFile) UnmarshalJSON(b []byte) error {
	var v outputFileJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = OutputFile{FileID: v.FileID, Error: v.Error}
	if v.Size != nil {
		o.Size = *v.Size
	}
	return nil
}

// Stats are a completed task's resource statistics. A nil value is one the
// kernel does not provide; it is never a made-up zero.
type Stats struct {
	// WallTimeMs is the task's wall time in milliseconds.
	WallTimeMs int64 `json:"wall_time_ms"`
	// CPU time of all the task's processes in microseconds: in all,
	// in user and in kernel mode. The total is the scheduler's exact
	// count, from the moment the task's first process enters the task's
	// cgroup (before it drops its privileges and installs its seccomp
	// filter: a few hundred microseconds of that setup count) to the end
	// of its last process; the sandbox's init and its setup do not count.
	// User plus system is the total: the kernel samples the split at
	// timer ticks, and on cgroup v1 it is scaled to the total as v2 does,
	// so a task shorter than a tick may show all of it on one side.
	CPUUsageUsec  *int64 `json:"cpu_usage_usec"`
	CPUUserUsec   *int64 `json:"cpu_user_usec"`
	CPUSystemUsec *int64 `json:"cpu_system_usec"`
	// CPU bandwidth throttling by the task's cpu.max: how many periods
	// were throttled and for how long in all, in microseconds.
	CPUNrThrottled   *int64 `json:"cpu_nr_throttled"`
	CPUThrottledUsec *int64 `json:"cpu_throttled_usec"`
	// MemoryPeakBytes is the peak memory use of the task's cgroup.
	MemoryPeakBytes *int64 `json:"memory_peak_bytes"`
	// PidsPeak is the most processes and threads the task had at once.
	PidsPeak *int64 `json:"pids_peak"`
	// OOMKillCount counts the task's processes the OOM killer killed.
	OOMKillCount *int64 `json:"oom_kill_count"`
	// PidsLimitHitCount counts the forks the pids limit refused.
	PidsLimitHitCount *int64 `json:"pids_limit_hit_count"`
	// DeniedSyscalls counts, by name, the system calls a v2 allowlist
	// refused with ENOSYS in all the task's processes: empty when none
	// (always under v1), nil when the sandbox could not watch them.
	// Calls refused by the process rules (clone3) or killed by the
	// dangerous set are not counted.
	DeniedSyscalls map[string]int64 `json:"denied_syscalls"`
}

type completedJSON struct {
	Outcome         Outcome `json:"outcome"`
	ExitCode        int     `json:"exit_code"`
	Signal          *int    `json:"signal"`
	Replayed        bool    `json:"replayed"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	Stats           Stats   `json:"stats"`
	// Outputs is absent for a task without outputs.
	Outputs map[string]OutputFile `json:"outputs,omitempty"`
}

type notRunJSON struct {
	Outcome Outcome `json:"outcome"`
	Signal  *int    `json:"signal"`
	Error   string  `json:"error"`
}

// MarshalJSON encodes the completed or the not-run shape of API.md.
func (r Result) MarshalJSON() ([]byte, error) {
	var sig *int
	if r.Signal != 0 {
		sig = &r.Signal
	}
	if !r.Outcome.Ran() {
		return json.Marshal(notRunJSON{Outcome: r.Outcome, Signal: sig, Error: r.Error})
	}
	return json.Marshal(completedJSON{
		Outcome: r.Outcome, ExitCode: r.ExitCode, Signal: sig, Replayed: r.Replayed,
		Stdout: r.Stdout, Stderr: r.Stderr,
		StdoutTruncated: r.StdoutTruncated, StderrTruncated: r.StderrTruncated,
		Stats: r.Stats, Outputs: r.Outputs,
	})
}

// UnmarshalJSON decodes either shape.
func (r *Result) UnmarshalJSON(b []byte) error {
	var v struct {
		completedJSON
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Result{
		Outcome: v.Outcome, ExitCode: v.ExitCode, Replayed: v.Replayed,
		Stdout: v.Stdout, Stderr: v.Stderr,
		StdoutTruncated: v.StdoutTruncated, StderrTruncated: v.StderrTruncated,
		Stats: v.Stats, Error: v.Error, Outputs: v.Outputs,
	}
	if v.Signal != nil {
		r.Signal = *v.Signal
	}
	return nil
}

// StepResult holds the results of one step, shaped like the step: an
// object for a single task, an array for a parallel step.
type StepResult struct {
	Results  []Result
	Parallel bool
}

// MarshalJSON encodes a single result as an object, a parallel one as an array.
func (s StepResult) MarshalJSON() ([]byte, error) {
	if arrayShaped(s.Parallel, len(s.Results)) {
		if s.Results == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(s.Results)
	}
	return json.Marshal(s.Results[0])
}

// UnmarshalJSON decodes an object or an array of results.
func (s *StepResult) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		s.Parallel = true
		return json.Unmarshal(b, &s.Results)
	}
	s.Parallel = false
	s.Results = make([]Result, 1)
	return json.Unmarshal(b, &s.Results[0])
}

// Response is the result of a request: one StepResult per step, in order,
// and the cache summary.
type Response struct {
	Results []StepResult `json:"results"`
	Cache   CacheSummary `json:"cache"`
	// Legacy mirrors Request.Legacy: the response of a legacy request is
	// encoded as the bare array of step results (spec 2.7).
	Legacy bool `json:"-"`
	// QueueWait is how long the request waited for its task slots
	// (Config.QueueTimeout); 0 when it found them free. Not encoded.
	QueueWait time.Duration `json:"-"`
}

// CacheSummary reports what the step cache did for a request.
type CacheSummary struct {
	// Enabled reports whether the sandbox has a step cache.
	Enabled bool `json:"enabled"`
	// ReplayedSteps is the number of steps replayed from the cache.
	ReplayedSteps int `json:"replayed_steps"`
	// StoredSteps is the number of steps this request ran and stored.
	StoredSteps int `json:"stored_steps"`
}

// MarshalJSON encodes the envelope, or the bare array for a legacy request.
func (r Response) MarshalJSON() ([]byte, error) {
	if r.Legacy {
		if r.Results == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(r.Results)
	}
	type plain Response
	return json.Marshal(plain(r))
}

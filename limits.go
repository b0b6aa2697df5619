package svc

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Binary size units.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// CPUMax is a cgroup cpu.max value: Quota microseconds of CPU time per
// Period microseconds. Quota 0 means unlimited.
type CPUMax struct {
	Quota  int64
	Period int64
}

// String returns the "<quota> <period>" form (or "max <period>").
func (c CPUMax) String() string {
	if c.Quota == 0 {
		return fmt.Sprintf("max %d", c.Period)
	}
	return fmt.Sprintf("%d %d", c.Quota, c.Period)
}

// ParseCPUMax parses "<quota> <period>" or "max <period>" (microseconds).
func ParseCPUMax(s string) (CPUMax, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return CPUMax{}, fmt.Errorf("cpu max %q: want \"<quota> <period>\" in microseconds", s)
	}
	period, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || period < 1000 || period > 1000000 {
		return CPUMax{}, fmt.Errorf("cpu max %q: period must be 1000..1000000 microseconds", s)
	}
	if f[0] == "max" {
		return CPUMax{Period: period}, nil
	}
	quota, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || quota < 1000 {
		return CPUMax{}, fmt.Errorf("cpu max %q: quota must be \"max\" or at least 1000 microseconds", s)
	}
	return CPUMax{Quota: quota, Period: period}, nil
}

// Limits are applied to every task and request; requests cannot raise them.
// A zero field takes its default (DefaultLimits). Encoded as JSON it is the
// ServiceLimits object of spec 2.9.
type Limits struct {
	MemoryMax          int64         // per task, bytes (swap is 0)
	PidsMax            int64         // per task
	CPUMax             CPUMax        // per task
	WallTimeout        time.Duration // per task
	CPUTimeLimit       time.Duration // per task, over all its processes
	OverallTimeout     time.Duration // per request
	OutputLimit        int64         // per stream of a task, bytes
	RequestOutputLimit int64         // all streams of a request, bytes
	MaxSteps           int           // per request
	MaxParallelTasks   int           // per parallel step
	MaxConcurrency     int           // task slots of the instance
	ExecuteBodyLimit   int64         // HTTP body of /execute, bytes
	UploadFileLimit    int64         // one upload, bytes
}

// DefaultLimits returns the defaults of API.md. MaxConcurrency is
// max(number of CPUs, MaxParallelTasks).
func DefaultLimits() Limits {
	return Limits{
		MemoryMax:          256 * MiB,
		PidsMax:            64,
		CPUMax:             CPUMax{Quota: 100000, Period: 100000},
		WallTimeout:        10 * time.Second,
		CPUTimeLimit:       5 * time.Second,
		OverallTimeout:     60 * time.Second,
		OutputLimit:        1 * MiB,
		RequestOutputLimit: 16 * MiB,
		MaxSteps:           32,
		MaxParallelTasks:   8,
		MaxConcurrency:     max(runtime.NumCPU(), 8),
		ExecuteBodyLimit:   16 * MiB,
		UploadFileLimit:    64 * MiB,
	}
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	set(&l.MemoryMax, d.MemoryMax)
	set(&l.PidsMax, d.PidsMax)
	if l.CPUMax == (CPUMax{}) {
		l.CPUMax = d.CPUMax
	}
	if l.CPUMax.Period == 0 {
		l.CPUMax.Period = 100000
	}
	setD(&l.WallTimeout, d.WallTimeout)
	setD(&l.CPUTimeLimit, d.CPUTimeLimit)
	setD(&l.OverallTimeout, d.OverallTimeout)
	set(&l.OutputLimit, d.OutputLimit)
	set(&l.RequestOutputLimit, d.RequestOutputLimit)
	set(&l.ExecuteBodyLimit, d.ExecuteBodyLimit)
	set(&l.UploadFileLimit, d.UploadFileLimit)
	if l.MaxSteps == 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxParallelTasks == 0 {
		l.MaxParallelTasks = d.MaxParallelTasks
	}
	if l.MaxConcurrency == 0 {
		l.MaxConcurrency = max(runtime.NumCPU(), l.MaxParallelTasks)
	}
	return l
}

// validate reports the first limit that is out of range, naming it.
func (l Limits) validate() error {
	pos := []struct {
		name string
		v    int64
	}{
		{"MemoryMax", l.MemoryMax}, {"PidsMax", l.PidsMax},
		{"WallTimeout", int64(l.WallTimeout)}, {"CPUTimeLimit", int64(l.CPUTimeLimit)},
		{"OverallTimeout", int64(l.OverallTimeout)}, {"OutputLimit", l.OutputLimit},
		{"RequestOutputLimit", l.RequestOutputLimit}, {"MaxSteps", int64(l.MaxSteps)},
		{"MaxParallelTasks", int64(l.MaxParallelTasks)}, {"MaxConcurrency", int64(l.MaxConcurrency)},
		{"ExecuteBodyLimit", l.ExecuteBodyLimit}, {"UploadFileLimit", l.UploadFileLimit},
	}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("limits: %s must be positive, got %d", p.name, p.v)
		}
	}
	if l.MemoryMax < minMemoryMax {
		return fmt.Errorf("limits: MemoryMax must be at least 4 MiB, got %d", l.MemoryMax)
	}
	if _, err := ParseCPUMax(l.CPUMax.String()); err != nil {
		return fmt.Errorf("limits: CPUMax: %w", err)
	}
	if l.MaxParallelTasks > l.MaxConcurrency {
		return fmt.Errorf("limits: MaxParallelTasks (%d) is greater than MaxConcurrency (%d)", l.MaxParallelTasks, l.MaxConcurrency)
	}
	return nil
}

// limitsJSON is the ServiceLimits object of spec 2.9.
type limitsJSON struct {
	MemoryMax          int64  `json:"memory_max_bytes"`
	PidsMax            int64  `json:"pids_max"`
	CPUMax             string `json:"cpu_max"`
	WallTimeoutMs      int64  `json:"wall_timeout_ms"`
	CPUTimeLimitMs     int64  `json:"cpu_time_limit_ms"`
	OverallTimeoutMs   int64  `json:"overall_timeout_ms"`
	OutputLimit        int64  `json:"output_limit_bytes"`
	RequestOutputLimit int64  `json:"request_output_limit_bytes"`
	MaxSteps           int    `json:"max_steps"`
	MaxParallelTasks   int    `json:"max_parallel_tasks"`
	MaxConcurrency     int    `json:"max_concurrency"`
	ExecuteBodyLimit   int64  `json:"execute_body_limit_bytes"`
	UploadFileLimit    int64  `json:"upload_file_limit_bytes"`
}

// MarshalJSON encodes the ServiceLimits object of spec 2.9.
func (l Limits) MarshalJSON() ([]byte, error) {
	return json.Marshal(limitsJSON{
		l.MemoryMax, l.PidsMax, l.CPUMax.String(),
		l.WallTimeout.Milliseconds(), l.CPUTimeLimit.Milliseconds(), l.OverallTimeout.Milliseconds(),
		l.OutputLimit, l.RequestOutputLimit, l.MaxSteps, l.MaxParallelTasks, l.MaxConcurrency,
		l.ExecuteBodyLimit, l.UploadFileLimit,
	})
}

// UnmarshalJSON decodes the ServiceLimits object of spec 2.9.
func (l *Limits) UnmarshalJSON(b []byte) error {
	var v limitsJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	cpuMax, err := ParseCPUMax(v.CPUMax)
	if err != nil {
		return fmt.Errorf("cpu_max: %w", err)
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	*l = Limits{
		MemoryMax: v.MemoryMax, PidsMax: v.PidsMax, CPUMax: cpuMax,
		WallTimeout: ms(v.WallTimeoutMs), CPUTimeLimit: ms(v.CPUTimeLimitMs), OverallTimeout: ms(v.OverallTimeoutMs),
		OutputLimit: v.OutputLimit, RequestOutputLimit: v.RequestOutputLimit,
		MaxSteps: v.MaxSteps, MaxParallelTasks: v.MaxParallelTasks, MaxConcurrency: v.MaxConcurrency,
		ExecuteBodyLimit: v.ExecuteBodyLimit, UploadFileLimit: v.UploadFileLimit,
	}
	return nil
}

// Config configures a Sandbox. The zero value is usable: every zero field
// takes the default documented on it.
type Config struct {
	// Limits; zero fields take DefaultLimits.
	Limits Limits
	// QueueTimeout is how long a request that finds fewer free task slots
	// than it needs (or others waiting before it) waits for them: the
	// requests waiting are served strictly in arrival order, and one that
	// still has no slots after QueueTimeout is refused with
	// capacity_exhausted. A request's overall timeout starts once it holds
	// its slots. 0 (the default): a request is refused at once.
	// QUEUE_TIMEOUT_MS of API.md.
	QueueTimeout time.Duration
	// WorkspaceSize bounds /svc and /tmp of a request together (one
	// tmpfs holds both) and the file size a task may write. Default
	// 256 MiB.
	WorkspaceSize int64
	// RootFS is the directory whose system directories (usr, bin, lib,
	// lib64, sbin, etc, opt) are bound read-only into every sandbox.
	// Default "/".
	RootFS string
	// StateDir holds the workspaces of running requests and, by default,
	// the file store and cache. Default "/var/lib/svc".
	StateDir string
	// CgroupParent is the cgroup under which the service cgroup is made,
	// relative to the hierarchy root. Default: this process's own cgroup.
	CgroupParent string
	// UIDBase is the first host uid/gid of the range used for sandbox
	// identities. Each request runs as two ids of it (its init and its
	// tasks), and so does each request prepared ahead: a Sandbox
	// preparing P ahead uses at most 2 * (MaxConcurrency + 2*P) ids, the
	// range [Sandbox.HostIDs] reports. The range must be unused on the
	// host. Default 1000000.
	//
	// New takes the range in /run/svc/uids, a host-wide directory with
	// one lock file per range in use, which names its holder's pid and
	// state dir and which the kernel releases when the holder dies; Close
	// gives it back. A range that overlaps another instance's fails New
	// (ErrHostIDsInUse). Only instances that see the same /run/svc/uids
	// see each other's ranges: containers with a /run of their own each
	// need /run/svc/uids bound from the host, or ranges chosen apart by
	// hand. Nothing checks that no other program runs as the ids.
	UIDBase int
	// AllowedProfiles are the sandbox profiles tasks may ask for.
	// Default compile_v2 and native_v2.
	AllowedProfiles []Profile
	// DefaultProfile is used by tasks that name none. Default compile_v2.
	DefaultProfile Profile
	// Files is the store file_ids resolve against (File.FileID) and
	// collected outputs are kept in (Task.Outputs); nil: any file_id is
	// file_not_found and a request with outputs is invalid_request. The
	// Sandbox does not close it.
	Files *FileStore
	// Cache is the step cache that deterministic steps are stored in and
	// replayed from (see the package documentation, "Step cache"); nil:
	// caching is disabled, Task.Cache and Request.Cache are ignored, and
	// Response.Cache.Enabled is false. The Sandbox does not close it.
	Cache *StepCache
	// GoBuildCache, if set, is a directory in which the Sandbox prepares,
	// once per image, a build cache of the Go standard library for the
	// toolchain in RootFS's /usr/local/go; every request then sees a
	// private, writable copy of it as the tasks' Go build cache, so that
	// a go build compiles the program, not the standard library (see the
	// package documentation, "Go build cache"). It is built in the
	// background after New, in a sandbox, in about a minute of one CPU;
	// until it is ready, each request's cache starts empty. "" (the
	// default): no cache is prepared, and go keeps its build cache in
	// the task's $HOME, the workspace.
	GoBuildCache string
	// ImageID identifies the root filesystem (SVC_IMAGE_ID): the cache
	// prepared in GoBuildCache is kept in a directory named after it,
	// and one prepared for another image is not used. Default: what
	// [DetectImage] finds in RootFS, when GoBuildCache is set.
	ImageID string
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

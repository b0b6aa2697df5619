package svc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/cgroup"
	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/mount"
	"github.com/svc-sandbox/svc/internal/runner"
	"github.com/svc-sandbox/svc/internal/seccomp"
)

// The identity of a task inside its user namespace. The namespace's root
// (the init) and this id map to the two host ids of the request's slot.
const (
	taskUID = 1000
	taskGID = 1000
)

// taskEnv is the fixed environment of every task (API.md); the task's own
// env is added to it.
var taskEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/svc", "TMPDIR=/tmp", "LANG=C.UTF-8"}

// host is the Linux machinery of a Sandbox, set up once by New.
type host struct {
	cfg     *Config
	cg      *cgroup.Hierarchy
	service *cgroup.Group
	sys     []mount.SystemEntry
	runDir  string
	lock    *os.File
	cpuRate float64 // CPUs a task may use at most, for the CPU-limit timer
}

func openHost(cfg *Config) (*host, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("svc needs root to create namespaces, cgroups and mounts")
	}
	h := &host{cfg: cfg, runDir: filepath.Join(cfg.StateDir, "run")}
	// The sandbox identities traverse the run directory to reach their
	// workspace, so it and its ancestors must be searchable by others.
	for _, d := range []string{cfg.StateDir, h.runDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	for d := filepath.Dir(cfg.StateDir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("state dir: %s is not searchable by other users (mode %v); sandboxes could not reach their workspaces", d, fi.Mode().Perm())
		}
		if d == "/" {
			break
		}
	}
	lock, err := os.OpenFile(filepath.Join(h.runDir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("state dir %s is in use by another svc instance: %w", cfg.StateDir, err)
	}
	h.lock = lock

	if h.cg, err = cgroup.Detect(); err != nil {
		h.close()
		return nil, err
	}
	sum := sha256.Sum256([]byte(cfg.StateDir))
	name := "svc-" + hex.EncodeToString(sum[:6])
	if err := h.sweep(name); err != nil {
		h.close()
		return nil, fmt.Errorf("remove what a previous instance left: %w", err)
	}
	if h.service, err = h.cg.Service(cfg.CgroupParent, name); err != nil {
		h.close()
		return nil, err
	}
	if h.sys, err = mount.ScanRootFS(cfg.RootFS); err != nil {
		h.close()
		return nil, err
	}
	h.cpuRate = float64(runtime.NumCPU())
	if q := cfg.Limits.CPUMax; q.Quota > 0 {
		h.cpuRate = min(h.cpuRate, float64(q.Quota)/float64(q.Period))
	}
	return h, nil
}

// sweep removes the leftovers of a crashed instance with this state dir:
// its processes and cgroups, its workspace mounts and directories.
func (h *host) sweep(cgroupName string) error {
	old, err := h.cg.Service(h.cfg.CgroupParent, cgroupName)
	if err != nil {
		return err
	}
	if err := old.Destroy(); err != nil {
		return err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(h.runDir))
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	// Deepest first.
	slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
	for _, m := range mounts {
		if m.Mountpoint == h.runDir {
			continue
		}
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
		}
	}
	entries, err := os.ReadDir(h.runDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".lock" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(h.runDir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (h *host) close() error {
	var err error
	if h.service != nil {
		err = h.service.Destroy()
	}
	if h.lock != nil {
		h.lock.Close()
	}
	return err
}

// request is the per-request state: workspace mounts, cgroup, identity.
type request struct {
	h                *host
	dir, ws, tmp     string
	initUID, taskUID int
	group            *cgroup.Group
	plan             mount.Plan
	budget           *runner.Budget
	ntask            atomic.Int64
}

func (h *host) newRequest(id string, slot, width int) (_ *request, err error) {
	cfg := h.cfg
	rq := &request{
		h:       h,
		dir:     filepath.Join(h.runDir, id),
		initUID: cfg.UIDBase + 2*slot,
		taskUID: cfg.UIDBase + 2*slot + 1,
		budget:  runner.NewBudget(cfg.Limits.RequestOutputLimit),
	}
	rq.ws, rq.tmp = filepath.Join(rq.dir, "svc"), filepath.Join(rq.dir, "tmp")
	defer func() {
		if err != nil {
			rq.close()
		}
	}()
	// Only root and the request's init (its group) may pass through the
	// request's directory: other host users cannot reach the workspace,
	// and the task never needs the host path.
	if err := os.Mkdir(rq.dir, 0o710); err != nil {
		return nil, err
	}
	if err := os.Chown(rq.dir, 0, rq.initUID); err != nil {
		return nil, err
	}
	if err := os.Chmod(rq.dir, 0o710); err != nil {
		return nil, err
	}
	for _, d := range []string{"root", "svc", "tmp"} {
		if err := os.Mkdir(filepath.Join(rq.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	inodes := max(1024, cfg.WorkspaceSize/(16*KiB))
	for _, m := range []struct {
		dir  string
		mode string
	}{{rq.ws, "0755"}, {rq.tmp, "1777"}} {
		data := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%s,uid=%d,gid=%d", cfg.WorkspaceSize, inodes, m.mode, rq.taskUID, rq.taskUID)
		if err := unix.Mount("svc-workspace", m.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
			return nil, fmt.Errorf("mount workspace %s: %w", m.dir, err)
		}
	}
	if rq.group, err = h.service.Child(id); err != nil {
		return nil, err
	}
	// The request's cgroup holds its widest step and what its tasks wrote
	// to the workspace (charged to the request once their cgroups go).
	l := cfg.Limits
	if err := rq.group.SetLimits(cgroup.Limits{
		MemoryMax: l.MemoryMax*int64(width) + 2*cfg.WorkspaceSize,
		PidsMax:   (l.PidsMax + 1) * int64(width),
	}); err != nil {
		return nil, err
	}
	rq.plan = mount.Build(mount.Params{
		RootFS: cfg.RootFS, NewRoot: filepath.Join(rq.dir, "root"),
		Workspace: rq.ws, Tmp: rq.tmp, ShmSize: 16 * MiB,
	}, h.sys)
	return rq, nil
}

// close removes everything of the request. Its processes are already gone
// (runner.Run returns only then); Destroy makes sure.
func (rq *request) close() error {
	var errs []error
	if rq.group != nil {
		errs = append(errs, rq.group.Destroy())
	}
	for _, d := range []string{rq.ws, rq.tmp} {
		if err := unix.Unmount(d, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", d, err))
		}
	}
	errs = append(errs, os.RemoveAll(rq.dir))
	return errors.Join(errs...)
}

// runStep places the files of every task of the step, then runs its tasks
// concurrently. stored holds the open stored files of the request.
func (rq *request) runStep(ctx context.Context, step Step, stored storedFiles) (StepResult, error) {
	sr := StepResult{Parallel: step.Parallel, Results: make([]Result, len(step.Tasks))}
	errs := make([]error, len(step.Tasks))
	var wg sync.WaitGroup
	for i, t := range step.Tasks {
		if err := placeFiles(rq.ws, rq.taskUID, t.Files, stored); err != nil {
			sr.Results[i] = Result{Outcome: OutcomeInfrastructureFailure, Error: err.Error()}
		}
	}
	// Only once every file is in place does any task of the step start.
	for i, t := range step.Tasks {
		if sr.Results[i].Outcome == "" {
			wg.Go(func() { sr.Results[i], errs[i] = rq.runTask(ctx, t) })
		}
	}
	wg.Wait()
	return sr, errors.Join(errs...)
}

func (rq *request) runTask(ctx context.Context, t Task) (Result, error) {
	cfg, l := rq.h.cfg, rq.h.cfg.Limits
	tg, err := rq.group.Child(fmt.Sprintf("t%d", rq.ntask.Add(1)))
	if err != nil {
		return Result{}, err
	}
	defer tg.Remove()
	if err := tg.SetLimits(cgroup.Limits{
		MemoryMax: l.MemoryMax,
		PidsMax:   l.PidsMax + 1, // and the init
		CPUQuota:  l.CPUMax.Quota,
		CPUPeriod: l.CPUMax.Period,
	}); err != nil {
		return Result{}, err
	}

	filter, err := seccomp.Program(string(t.profile(cfg.DefaultProfile)))
	if err != nil {
		return Result{}, err
	}
	dir := t.WorkingDir
	if dir == "" {
		dir = "/svc"
	}
	cpuSecs := uint64(math.Ceil(l.CPUTimeLimit.Seconds())) + 1
	rt := &runner.Task{
		Spec: initproc.Spec{
			Mounts:   rq.plan,
			Hostname: "svc",
			UID:      taskUID,
			GID:      taskGID,
			Rlimits: []initproc.Rlimit{
				{Resource: unix.RLIMIT_CPU, Soft: cpuSecs, Hard: cpuSecs + 1},
				{Resource: unix.RLIMIT_FSIZE, Soft: uint64(cfg.WorkspaceSize), Hard: uint64(cfg.WorkspaceSize)},
				{Resource: unix.RLIMIT_NOFILE, Soft: 1024, Hard: 1024},
				{Resource: unix.RLIMIT_CORE, Soft: 0, Hard: 0},
				{Resource: unix.RLIMIT_STACK, Soft: uint64(l.MemoryMax), Hard: uint64(l.MemoryMax)},
			},
			Dir:    dir,
			Cmd:    t.Cmd,
			Args:   append([]string{t.Cmd}, t.Args...),
			Env:    t.environ(),
			Filter: filter,
		},
		InitUID:     rq.initUID,
		TaskUID:     rq.taskUID,
		Stdin:       t.Stdin,
		WallTimeout: l.WallTimeout,
		CPULimit:    l.CPUTimeLimit,
		CPURate:     rq.h.cpuRate,
		CPUUsage:    tg.CPUUsage,
		OutputLimit: l.OutputLimit,
		Budget:      rq.budget,
	}
	if rq.h.cg.Version() == 2 {
		fd, err := tg.OpenFD()
		if err != nil {
			return Result{}, err
		}
		defer fd.Close()
		rt.CgroupFD = fd
	} else {
		rt.Enter = tg.AddProc
	}

	rr, err := runner.Run(ctx, rt)
	if err != nil {
		return Result{}, err
	}
	if rr.Cancelled {
		return Result{}, context.Cause(ctx)
	}
	if rr.SetupTimedOut {
		return Result{}, fmt.Errorf("sandbox setup took longer than %v", runner.SetupTimeout)
	}
	switch {
	case rr.Report.SetupError != "":
		return Result{}, fmt.Errorf("sandbox init: %s", rr.Report.SetupError)
	case rr.Report.WorkdirError != "":
		return Result{Outcome: OutcomeInfrastructureFailure, Error: rr.Report.WorkdirError}, nil
	case !rr.Report.Started && !rr.Killed():
		return Result{}, errors.New("sandbox init ended before starting the task")
	}
	st, err := tg.Stats()
	if err != nil {
		return Result{}, err
	}
	return result(rr, st), nil
}

// profile returns the task's sandbox profile, def when it names none.
func (t *Task) profile(def Profile) Profile {
	if t.SandboxProfile == "" {
		return def
	}
	return t.SandboxProfile
}

// environ returns the task's environment: the fixed one, overridden and
// extended by the task's env, sorted by name after the fixed ones.
func (t *Task) environ() []string {
	env := slices.Clone(taskEnv)
	names := make([]string, 0, len(t.Env))
	for k := range t.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		kv := k + "=" + t.Env[k]
		if i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }); i >= 0 {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// result interprets a finished task, applying API.md's outcome precedence.
func result(rr *runner.Result, st cgroup.Stats) Result {
	r := Result{
		Stdout:          strings.ToValidUTF8(string(rr.Stdout), "\uFFFD"),
		Stderr:          strings.ToValidUTF8(string(rr.Stderr), "\uFFFD"),
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

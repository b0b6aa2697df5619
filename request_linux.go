package svc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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

// request is the per-request state: workspace, identity, and the cells
// built ahead for its tasks. It has no cgroup of its own: each task has
// one, a child of the service's, whose limits bound the task and what it
// writes to the workspace and /tmp, which share a tmpfs of a bounded size.
type request struct {
	h                *host
	id               string
	slot             int // the identity slot
	dir, ws, tmp     string
	initUID, taskUID int
	budget           *runner.Budget
	ntask            atomic.Int64
	// limits bound its tasks and size its tmpfs: the Sandbox's limits and
	// workspace size, or those of the Go build cache's build. own: its
	// shells are built for it and closed after its tasks, never kept for
	// another request (their rlimits are its limits').
	limits Limits
	size   int64
	own    bool
	// goLower is the prepared Go build cache, the lower layer of the
	// overlay on its /tmp/.gocache; "" for none (see mountGoCache).
	goLower string

	// building counts the cells being built ahead; close waits for them.
	building sync.WaitGroup
	mu       sync.Mutex // guards ready, pending and built
	ready    []*cell    // cells built ahead, not yet used
	// pending counts the cells being built ahead by profile; built is
	// closed, and replaced, as each of them is done (see takeCell).
	pending map[Profile]int
	built   chan struct{}
	// returning counts its cells closing in the background, whose shells
	// come back to its slot (guarded by h.shellMu; see takeShell).
	returning int
}

// cell is a task started ahead in a shell of the request's identity
// slot, with the task's cgroup.
type cell struct {
	c     *runner.Cell
	group *cgroup.Group
	// stats has the group's statistics files open: the task's result
	// reads them without opening any.
	stats *cgroup.StatsReader
	shell *shell
	h     *host
	slot  int
	// early is the profile whose filter the task process installed
	// before it said it was ready; "" for none.
	early Profile
	// returning is the request whose count of cells closing in the
	// background this one is in (closeCell); nil if none.
	returning *request
}

var _ workspace = (*request)(nil)

// identity is the request's identity slot.
func (rq *request) identity() int { return rq.slot }

// newWorkspace is newRequest, for the platform.
func (h *host) newWorkspace(id string, slot int) (workspace, error) {
	rq, err := h.newRequest(id, slot)
	if err != nil {
		return nil, err
	}
	return rq, nil
}

// newRequest makes the environment of a request for identity slot slot:
// its directory, and the tmpfs on it with the workspace and /tmp, with
// the prepared Go build cache in it once there is one.
func (h *host) newRequest(id string, slot int) (*request, error) {
	return h.openRequest(&request{id: id, slot: slot, limits: h.cfg.Limits, size: h.cfg.WorkspaceSize})
}

// openRequest makes the environment of rq, whose id, slot, limits, size
// and own are set.
func (h *host) openRequest(rq *request) (_ *request, err error) {
	cfg := h.cfg
	rq.h = h
	rq.dir = filepath.Join(h.runDir, rq.id)
	rq.initUID, rq.taskUID = cfg.UIDBase+2*rq.slot, cfg.UIDBase+2*rq.slot+1
	rq.budget = runner.NewBudget(rq.limits.RequestOutputLimit)
	rq.ws, rq.tmp = filepath.Join(rq.dir, "svc"), filepath.Join(rq.dir, "tmp")
	defer func() {
		if err != nil {
			rq.close()
		}
	}()
	// One tmpfs holds the workspace and /tmp, bounded together by the
	// workspace size: one mount and one unmount per request, and each
	// unmount costs an expedited RCU grace period. Its root is the
	// request's directory: only root and the request's init (its group)
	// may pass through it, so other host users cannot reach the
	// workspace, and the task never needs the host path.
	if err := os.Mkdir(rq.dir, 0o700); err != nil {
		return nil, err
	}
	inodes := max(1024, rq.size/(16*KiB))
	data := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0710,uid=0,gid=%d", rq.size, inodes, rq.initUID)
	if err := unix.Mount("svc-workspace", rq.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return nil, fmt.Errorf("mount workspace %s: %w", rq.dir, err)
	}
	for _, d := range []struct {
		path string
		mode uint32
	}{{rq.ws, 0o755}, {rq.tmp, 0o1777}} {
		if err := unix.Mkdir(d.path, 0); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", d.path, err)
		}
		if err := unix.Chown(d.path, rq.taskUID, rq.taskUID); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", d.path, err)
		}
		if err := unix.Chmod(d.path, d.mode); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", d.path, err)
		}
	}
	if lower := h.goCacheLower(); lower != "" && !rq.own {
		if err := rq.mountGoCache(lower); err != nil {
			return nil, err
		}
	}
	return rq, nil
}

// prepareWorkspace makes a request's environment and builds the cell of
// its first task, ahead of demand.
func (h *host) prepareWorkspace(ctx context.Context, id string, slot int) (workspace, error) {
	rq, err := h.newRequest(id, slot)
	if err != nil {
		return nil, err
	}
	c, err := rq.buildCell(ctx, h.expected())
	if err != nil {
		rq.close()
		return nil, err
	}
	rq.ready = append(rq.ready, c)
	return rq, nil
}

// discardCells ends the task processes made ahead that no task used,
// once the builds in flight are done, and gives their shells back: no task
// process of the request outlives it (idle shells' inits stay, with no
// task in them).
func (rq *request) discardCells() {
	rq.building.Wait()
	rq.mu.Lock()
	ready := rq.ready
	rq.ready = nil
	rq.mu.Unlock()
	for _, c := range ready {
		if err := c.close(); err != nil {
			rq.h.cfg.Logger.Error("discard a cell built ahead", "err", err)
		}
	}
}

// close removes everything of the request: unused cells, its tmpfs and
// directory.
func (rq *request) close() error {
	rq.discardCells()
	if err := unix.Unmount(rq.dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", rq.dir, err)
	}
	// Unmounted, the directory is the empty one made for the mount point.
	return removeEmpty(rq.dir)
}

// removeEmpty removes dir, an empty directory, with one rmdir; if that
// fails (something was left in it), it removes dir with everything in it.
func removeEmpty(dir string) error {
	if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
		return os.RemoveAll(dir)
	}
	return nil
}

// cellSpec is the sandbox the request's shells are built with.
func (rq *request) cellSpec() initproc.CellSpec {
	return initproc.CellSpec{
		BaseFilter:  rq.h.base,
		BaseWatched: rq.h.baseWatched,
		Mounts:      rq.h.shellPlan,
		Hostname:    "svc",
		UID:         taskUID,
		GID:         taskGID,
		Rlimits: []initproc.Rlimit{
			cpuRlimit(rq.limits),
			{Resource: unix.RLIMIT_FSIZE, Soft: uint64(rq.size), Hard: uint64(rq.size)},
			{Resource: unix.RLIMIT_NOFILE, Soft: 1024, Hard: 1024},
			{Resource: unix.RLIMIT_CORE, Soft: 0, Hard: 0},
			stackRlimit(rq.limits),
		},
	}
}

// cpuRlimit is the RLIMIT_CPU of a task with limits l, the backstop of
// its CPU time limit, at which watchCPU ends the task: a process of the
// task that has used the limit rounded up to whole seconds, plus one, gets
// SIGXCPU, and SIGKILL a second later.
func cpuRlimit(l Limits) initproc.Rlimit {
	secs := uint64(math.Ceil(l.CPUTimeLimit.Seconds())) + 1
	return initproc.Rlimit{Resource: unix.RLIMIT_CPU, Soft: secs, Hard: secs + 1}
}

// stackRlimit is the RLIMIT_STACK of a task with limits l: its memory.
func stackRlimit(l Limits) initproc.Rlimit {
	return initproc.Rlimit{Resource: unix.RLIMIT_STACK, Soft: uint64(l.MemoryMax), Hard: uint64(l.MemoryMax)}
}

// lower gives the cell, built with the request's limits, those of a task
// with limits l where they are lower: its cgroup's memory and pids limits,
// and the rlimits its task process sets once released, which it returns.
// A task with the request's limits, the common one, changes nothing.
func (c *cell) lower(rq *request, l Limits) ([]initproc.Rlimit, error) {
	built := rq.limits
	var cl cgroup.Limits
	if l.MemoryMax != built.MemoryMax {
		cl.MemoryMax = l.MemoryMax
	}
	if l.PidsMax != built.PidsMax {
		cl.PidsMax = l.PidsMax
	}
	if cl != (cgroup.Limits{}) {
		if err := c.group.SetLimits(cl); err != nil {
			return nil, fmt.Errorf("lower the task's limits: %w", err)
		}
	}
	var rl []initproc.Rlimit
	for _, r := range [][2]initproc.Rlimit{{cpuRlimit(built), cpuRlimit(l)}, {stackRlimit(built), stackRlimit(l)}} {
		if r[0] != r[1] {
			rl = append(rl, r[1])
		}
	}
	return rl, nil
}

// buildCell takes a shell of the request's identity slot, makes the task
// cgroup with the task limits and starts the task process in them, for a
// task of profile: its filter installed already where the profile allows
// (host.early). For profile "" the cell serves a task of any profile.
//
// Any task of profile may take it, whatever its streams: a stdin file,
// or its stderr merged into its stdout, go to the task process with its
// command (runner.Task.StdinFile, MergeOutput).
func (rq *request) buildCell(ctx context.Context, profile Profile) (_ *cell, err error) {
	l := rq.limits
	sh, err := rq.h.takeShell(ctx, rq)
	if err != nil {
		return nil, err
	}
	var (
		tg    *cgroup.Group
		stats *cgroup.StatsReader
	)
	// On a failure, what was made goes, in cell.close's order; the shell
	// is given back unless it had to go.
	defer func() {
		if err == nil {
			return
		}
		if stats != nil {
			stats.Close()
		}
		if sh != nil {
			err = errors.Join(err, rq.h.putShell(rq.slot, sh, nil))
		}
		if tg != nil {
			err = errors.Join(err, tg.Remove())
		}
	}()
	name := fmt.Sprintf("%s-t%d", rq.id, rq.ntask.Add(1))
	if sh.share != nil {
		tg, err = rq.h.service.ChildSharing(name, sh.share.Group(), "cpu", "cpuacct")
	} else {
		tg, err = rq.h.service.Child(name)
	}
	if err != nil {
		return nil, err
	}
	limits := cgroup.Limits{
		MemoryMax: l.MemoryMax,
		PidsMax:   l.PidsMax, // the task's processes alone: the init stays out
		CPUQuota:  l.CPUMax.Quota,
		CPUPeriod: l.CPUMax.Period,
	}
	if sh.share != nil {
		// The shell's: its quota is written anew as the task's
		// accounting starts, which ends any throttled period the
		// shell's last task left.
		limits.CPUQuota, limits.CPUPeriod = 0, 0
	}
	if err := tg.SetLimits(limits); err != nil {
		return nil, err
	}
	if sh.share != nil {
		stats, err = tg.OpenStatsShared(sh.share)
	} else {
		stats, err = tg.OpenStats()
	}
	if err != nil {
		return nil, err
	}
	procs, err := stats.OpenProcs()
	if err != nil {
		return nil, err
	}
	// A cell built ahead for no profile in particular (host.expected
	// returns "" while requests mix profiles) installs no filter: every
	// task's is installed as it runs (runIn).
	f, ok := rq.h.filters[profile]
	if !ok && profile != "" {
		return nil, fmt.Errorf("sandbox: no seccomp program for profile %q", profile)
	}
	task := &runner.ShellTask{
		CgroupProcs: procs,
		Trees:       []string{mount.WorkspaceTree: rq.ws, mount.TmpTree: rq.tmp},
		Mounts:      rq.h.taskMounts,
	}
	if f.early {
		task.Filter = f.prog
		if f.watched != nil && rq.h.watch.Load() {
			task.Filter, task.Watched = f.watched, true
		}
	}
	c, err := sh.Cell(ctx, task)
	if errors.Is(err, runner.ErrListener) && rq.h.watch.Swap(false) {
		// The kernel or a security module refuses what watchable could
		// not try: from now on filters are not watched, and the
		// namespace of every task that could make sockets is read.
		rq.h.cfg.Logger.Error("filters not watched from now on: the task process's listener could not be taken", "err", err)
	}
	if err != nil {
		// The shell may hold half a task: it goes.
		err = errors.Join(err, sh.close())
		sh = nil
		return nil, err
	}
	cl := &cell{c: c, group: tg, stats: stats, shell: sh, h: rq.h, slot: rq.slot}
	if f.early {
		cl.early = profile
	}
	return cl, nil
}

// close ends the cell's task if unused, gives its shell back and removes
// its cgroup.
func (c *cell) close() error {
	err := c.c.Close()
	// The reader first: it may hold the shell's files, which go with the
	// shell to its next task or with its close.
	c.stats.Close()
	err = errors.Join(err, c.h.putShell(c.slot, c.shell, c.returning))
	return errors.Join(err, c.group.Remove())
}

// prepare builds the cells of the request's coming tasks in the
// background.
func (rq *request) prepare(ctx context.Context, tasks []taskPlan) {
	rq.mu.Lock()
	if rq.pending == nil {
		rq.pending, rq.built = make(map[Profile]int), make(chan struct{})
	}
	for _, t := range tasks {
		rq.pending[t.profile]++
	}
	rq.mu.Unlock()
	for _, t := range tasks {
		profile := t.profile
		rq.building.Go(func() {
			// On an error the task builds its own and reports it.
			c, err := rq.buildCell(ctx, profile)
			rq.mu.Lock()
			if err == nil {
				rq.ready = append(rq.ready, c)
			}
			rq.pending[profile]--
			close(rq.built)
			rq.built = make(chan struct{})
			rq.mu.Unlock()
		})
	}
}

// takeCell returns a cell built ahead for a task of profile (its filter
// installed, or none), or builds one. A cell whose task process installed
// another profile's filter serves no task of this one: it stays for
// another task, or is discarded with the request. While cells of profile
// are being built ahead, it waits for one of them instead of building
// another: a step that starts soon after its cells were asked for (after
// a replayed step, or a short one) would otherwise build a second cell,
// and shell, for each of its tasks while the first ones are on their way.
func (rq *request) takeCell(ctx context.Context, profile Profile) (*cell, error) {
	rq.mu.Lock()
	for {
		for i := len(rq.ready) - 1; i >= 0; i-- {
			if c := rq.ready[i]; c.early == profile || c.early == "" {
				rq.ready = slices.Delete(rq.ready, i, i+1)
				rq.mu.Unlock()
				return c, nil
			}
		}
		if rq.pending[profile] == 0 {
			break
		}
		built := rq.built
		rq.mu.Unlock()
		select {
		case <-built:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		rq.mu.Lock()
	}
	rq.mu.Unlock()
	return rq.buildCell(ctx, profile)
}

// largeFolioPlacement is the size of a step's files from which they are
// placed with the workspace's tmpfs allowing large folios (placeStep).
const largeFolioPlacement = 1 * MiB

// placeStep places the files of every task of the step, a task's failure
// in its result. When they are large, the workspace's tmpfs takes large
// folios (huge=within_size) while they are written and none again
// (huge=never) before any task runs: the copy into the tmpfs then takes
// under half its time with pages of 4 KiB (1 MiB: 0.23-0.27 ms against
// 0.54-0.59 ms here), and tasks see the tmpfs as before, its
// st_blksize 4 KiB (huge= makes it 2 MiB for larger files, which stdio
// takes as its buffer size, and a task's memory would grow by it). No
// task of the request runs meanwhile: a step's files are placed before
// any of its tasks starts, and the tasks of the step before have ended.
// A kernel whose tmpfs refuses huge= gets the plain copy; a workspace
// that cannot be switched back fails the request.
func (rq *request) placeStep(step *stepPlan, stored storedFiles, results []Result) error {
	var size int64
	for _, t := range step.tasks {
		for _, f := range t.Files {
			if f.FileID != "" {
				size += stored[f.FileID].size
			} else {
				size += int64(len(f.Content))
			}
		}
	}
	large := size >= largeFolioPlacement && !rq.h.noLargeFolios.Load()
	if large {
		if err := rq.remountWorkspace("huge=within_size"); err != nil {
			rq.h.noLargeFolios.Store(true)
			rq.h.cfg.Logger.Info("workspace: tmpfs refuses huge=within_size; files are placed with small pages", "err", err)
			large = false
		}
	}
	for i, t := range step.tasks {
		if err := placeFiles(rq.ws, rq.taskUID, t.Files, stored); err != nil {
			results[i] = Result{Outcome: OutcomeInfrastructureFailure, Error: err.Error()}
		}
	}
	if large {
		if err := rq.remountWorkspace("huge=never"); err != nil {
			return fmt.Errorf("workspace: back to huge=never after placing files: %w", err)
		}
	}
	return nil
}

// remountWorkspace changes an option of the workspace's tmpfs, keeping
// the others (its size, inodes, owner and mount flags).
func (rq *request) remountWorkspace(opt string) error {
	return unix.Mount("", rq.dir, "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, opt)
}

// runStep places the files of every task of the step, then runs its tasks
// concurrently. stored holds the open stored files of the request.
func (rq *request) runStep(ctx context.Context, step *stepPlan, stored storedFiles) (StepResult, error) {
	sr := StepResult{Parallel: step.parallel, Results: make([]Result, len(step.tasks))}
	errs := make([]error, len(step.tasks))
	var wg sync.WaitGroup
	if err := rq.placeStep(step, stored, sr.Results); err != nil {
		return sr, err
	}
	// Then the stream files, once every file of the step is in place.
	streams := make([]*taskStreams, len(step.tasks))
	defer func() {
		for _, ts := range streams {
			ts.close()
		}
	}()
	openStreams(rq.ws, rq.taskUID, step, sr.Results, streams)
	if step.piped() {
		err := rq.runPiped(ctx, step, sr.Results, streams)
		return sr, err
	}
	// Only once every file is in place does any task of the step start;
	// a step of one runs it in this goroutine.
	for i := range step.tasks {
		t := &step.tasks[i]
		switch {
		case sr.Results[i].Outcome != "":
		case len(step.tasks) == 1:
			sr.Results[i], errs[i] = rq.runTaskWith(ctx, t, false, streams[i])
		default:
			wg.Go(func() { sr.Results[i], errs[i] = rq.runTaskWith(ctx, t, true, streams[i]) })
		}
	}
	wg.Wait()
	return sr, errors.Join(errs...)
}

// runPiped runs the tasks of a step some of which feed others
// (stdin_from): every task's cell first, then the pipes between them,
// then the tasks, at once. A task whose files could not be placed
// (results has its result) does not run: the task it feeds reads
// end-of-file, and the task that feeds it gets EPIPE.
func (rq *request) runPiped(ctx context.Context, step *stepPlan, results []Result, streams []*taskStreams) error {
	cells := make([]*cell, len(step.tasks))
	errs := make([]error, len(step.tasks))
	var wg sync.WaitGroup
	for i := range step.tasks {
		if results[i].Outcome == "" {
			wg.Go(func() { cells[i], errs[i] = rq.takeCell(ctx, step.tasks[i].profile) })
		}
	}
	wg.Wait()
	err := errors.Join(errs...)
	for i, t := range step.tasks {
		if err != nil || t.StdinFrom == nil || cells[*t.StdinFrom] == nil {
			continue
		}
		var to *runner.Cell
		if cells[i] != nil {
			to = cells[i].c
		}
		err = cells[*t.StdinFrom].c.PipeTo(to)
	}
	if err != nil {
		for _, c := range cells {
			if c != nil {
				rq.closeCell(c)
			}
		}
		return err
	}
	for i, c := range cells {
		if c != nil {
			wg.Go(func() { results[i], errs[i] = rq.runIn(ctx, &step.tasks[i], c, false, streams[i]) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// piped reports whether a task of the step feeds another.
func (s *stepPlan) piped() bool {
	for _, t := range s.tasks {
		if t.StdinFrom != nil {
			return true
		}
	}
	return false
}

// runTask runs t in a cell of the request: one built ahead for it, or one
// built now. beside says other tasks of its step run meanwhile
// (runner.Task.Park).
func (rq *request) runTask(ctx context.Context, t *taskPlan, beside bool) (Result, error) {
	return rq.runTaskWith(ctx, t, beside, nil)
}

// runTaskWith is runTask for a task with the stream files ts (nil for
// none).
func (rq *request) runTaskWith(ctx context.Context, t *taskPlan, beside bool, ts *taskStreams) (Result, error) {
	c, err := rq.takeCell(ctx, t.profile)
	if err != nil {
		return Result{}, err
	}
	return rq.runIn(ctx, t, c, beside, ts)
}

// closeCell closes c off the critical path: the task's mounts are undone,
// its shell given back and its cgroup removed after the result is out.
func (rq *request) closeCell(c *cell) {
	rq.h.shellMu.Lock()
	rq.returning++
	rq.h.shellMu.Unlock()
	c.returning = rq
	rq.h.background(func() {
		if err := c.close(); err != nil {
			rq.h.cfg.Logger.Error("task cleanup", "err", err)
		}
	})
}

// runIn runs t in c, a cell of the request taken for it, which it
// closes. Its resolved profile, working dir, environment and limits are
// the plan's; the cell takes the limits where they are lower than the
// request's it was built with (cell.lower).
//
// ts are its stream files (nil for none): a stdin file is the task's fd
// 0 itself, which its task process takes with its command
// (runner.Task.StdinFile); a stdout or stderr file takes the stream in
// place of the result (runner.Task.StdoutFile).
func (rq *request) runIn(ctx context.Context, t *taskPlan, c *cell, beside bool, ts *taskStreams) (Result, error) {
	profile, l := t.profile, t.limits
	defer rq.closeCell(c)
	var filter []byte // none if installed already
	if c.early != profile {
		f, ok := rq.h.filters[profile]
		if !ok {
			return Result{}, fmt.Errorf("sandbox: no seccomp program for profile %q", profile)
		}
		filter = f.prog
	}
	rlimits, err := c.lower(rq, l)
	if err != nil {
		return Result{}, err
	}
	rt := &runner.Task{
		Spec: initproc.TaskSpec{
			Dir:     t.dir,
			Cmd:     t.Cmd,
			Args:    append([]string{t.Cmd}, t.Args...),
			Env:     t.env,
			Filter:  filter,
			Rlimits: rlimits,
		},
		Stdin:       t.Stdin,
		WallTimeout: l.WallTimeout,
		CPULimit:    l.CPUTimeLimit,
		CPURate:     rq.h.cpuRate,
		CPUUsage:    c.group.CPUUsage,
		OutputLimit: l.OutputLimit,
		Budget:      rq.budget,
		NoSockets:   refusesSockets(profile),
		Allows:      rq.h.allows[profile],
		Park:        beside,
	}
	if ts != nil {
		rt.StdinFile, rt.StdoutFile, rt.StderrFile, rt.MergeOutput = ts.stdin, ts.stdout, ts.stderr, ts.merged
	}
	rr, err := c.c.Run(ctx, rt)
	if err != nil {
		return Result{}, err
	}
	if rr.Cancelled {
		return Result{}, context.Cause(ctx)
	}
	switch {
	case rr.Report.SetupError != "":
		return Result{}, fmt.Errorf("sandbox init: %s", rr.Report.SetupError)
	case rr.Report.WorkdirError != "":
		return Result{Outcome: OutcomeInfrastructureFailure, Error: rr.Report.WorkdirError}, nil
	case !rr.Report.Exited && !rr.Killed():
		return Result{}, errors.New("sandbox init ended before its task did")
	}
	st, err := c.stats.Stats()
	if err != nil {
		return Result{}, err
	}
	r := result(rr, st)
	r.Stats.DeniedSyscalls = deniedSyscalls(profile, rr)
	return r, nil
}

// deniedSyscalls names the calls the task's allowlist refused: nil where
// no listener saw them, and none ever under a v1 profile, which refuses
// nothing it does not kill (clone3's refusal is no allowlist's).
func deniedSyscalls(p Profile, rr *runner.Result) map[string]int64 {
	if !rr.Watched && strings.HasSuffix(string(p), "_v2") {
		return nil
	}
	m := make(map[string]int64, len(rr.Denied))
	for nr, n := range rr.Denied {
		m[seccomp.CallName(nr)] += n
	}
	return m
}

// refusesSockets reports whether tasks under p can make no socket.
func refusesSockets(p Profile) bool {
	sp, err := seccomp.Lookup(string(p))
	return err == nil && sp.RefusesSockets()
}

package svc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Sandbox runs requests in isolated Linux sandboxes. Create one with New;
// it is safe for concurrent use by multiple goroutines. Close releases it.
type Sandbox struct {
	cfg    Config
	limits Limits
	log    *slog.Logger
	host   platform // the machinery of the system (platform.go)
	// hostIDs holds the range of host ids HostIDs reports against other
	// instances on the host (uidlock.go) until Close.
	hostIDs *hostIDLock

	// slots are the task slots of Limits.MaxConcurrency and the requests
	// waiting for them (admit.go); a request holds as many as its widest
	// step has tasks.
	slots  *slotQueue
	tag    string // of this instance, in request ids
	nextID atomic.Uint64

	// pool holds requests prepared ahead of demand by prepareLoop: their
	// workspace, cgroup and the sandbox of their first task built, each
	// for one request. stopPreparing ends prepareLoop, preparing tracks it.
	pool          chan workspace
	stopPreparing context.CancelFunc
	preparing     sync.WaitGroup
	// fromPool and built count the workspaces requests took: prepared
	// ahead, or built on their critical path (WorkspaceStats).
	fromPool, built atomic.Uint64
	// goWaits counts the requests waiting for the Go build cache
	// (waitGoCache).
	goWaits atomic.Int64

	// closing is cancelled by Close; requests run under it.
	closing context.Context
	close   context.CancelCauseFunc

	mu sync.Mutex // guards ids
	// ids are the identity slots in use: one for each running request
	// (at most MaxConcurrency), each prepared one (at most cap(pool)) and
	// each being prepared (one per preparer), so a request always finds
	// one free.
	ids []bool
}

// poolSize is how many requests wait prepared at most: enough for a burst
// of a quarter of the instance's slots, from 1 to 4.
func poolSize(maxConcurrency int) int { return min(max(maxConcurrency/4, 1), 4) }

// preparers is how many requests are prepared at once: a build mostly
// waits (for the zygote, for the init's mounts), so one preparer per CPU
// keeps up with requests a single one could not, and more would only
// take CPU from the requests.
func preparers(maxConcurrency int) int { return min(poolSize(maxConcurrency), runtime.NumCPU()) }

// identitySlots is the number of identity slots of a Sandbox, each two
// host ids from Config.UIDBase: for the running requests, the prepared
// ones and those being prepared.
func identitySlots(maxConcurrency int) int {
	return maxConcurrency + poolSize(maxConcurrency) + preparers(maxConcurrency)
}

// errClosing is the cause of closing's cancellation.
var errClosing = errors.New("sandbox closed")

// New checks the configuration, detects the cgroup hierarchy, removes
// whatever a crashed instance with the same StateDir left behind
// (processes, cgroups, mounts, workspaces), takes its range of host ids
// (Config.UIDBase) and returns a ready Sandbox. A range that overlaps one
// another instance on the host holds is sandbox_setup_failed, naming the
// range and that instance, and matches ErrHostIDsInUse.
func New(cfg Config) (*Sandbox, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{
		cfg:    cfg,
		limits: cfg.Limits,
		log:    cfg.Logger,
		slots:  newSlotQueue(cfg.Limits.MaxConcurrency),
		tag:    strconv.FormatInt(time.Now().UnixNano()%(36*36*36*36), 36),
		pool:   make(chan workspace, poolSize(cfg.Limits.MaxConcurrency)),
		ids:    make([]bool, identitySlots(cfg.Limits.MaxConcurrency)),
	}
	s.closing, s.close = context.WithCancelCause(context.Background())
	h, err := openHost(&s.cfg)
	if err != nil {
		return nil, &Error{Code: CodeSandboxSetupFailed, Msg: "sandbox: setup failed", Err: err}
	}
	s.host = h
	// Taken once the host is open, so that a process that is not root
	// hears so first; nothing runs as the ids before startPreparing.
	first, count := s.HostIDs()
	if s.hostIDs, err = lockHostIDs(hostIDLockDir, first, count, cfg.StateDir); err != nil {
		h.close()
		if CodeOf(err) == CodeSandboxSetupFailed {
			return nil, err
		}
		return nil, &Error{Code: CodeSandboxSetupFailed, Msg: "sandbox: setup failed", Err: err}
	}
	// Refuse to start rather than fail every request: a host or container
	// that cannot give a task its isolation says so now.
	if err := h.startCheck(); err != nil {
		return nil, &Error{Code: CodeSandboxSetupFailed, Msg: "sandbox: setup failed",
			Err: errors.Join(err, h.close(), s.hostIDs.release())}
	}
	s.startPreparing()
	return s, nil
}

// startPreparing starts the preparers.
func (s *Sandbox) startPreparing() {
	ctx, cancel := context.WithCancel(s.closing)
	s.stopPreparing = cancel
	for i := range preparers(s.limits.MaxConcurrency) {
		s.preparing.Go(func() {
			if i == 0 {
				// On the identity slot it would prepare a request on:
				// one preparer builds the Go build cache first, if it
				// is missing, and the count of identity slots holds.
				s.prepareGoCache(ctx)
			}
			s.prepareLoop(ctx)
		})
	}
}

// drainPool stops prepareLoop and removes the prepared requests.
func (s *Sandbox) drainPool() {
	s.stopPreparing()
	s.preparing.Wait()
	for {
		select {
		case ws := <-s.pool:
			s.finish(ws)
		default:
			return
		}
	}
}

// prepareLoop keeps the pool full until Close: each request prepared
// ahead takes the building of its workspace, cgroup and first sandbox off
// its critical path. A failure is logged and retried after a pause that
// doubles up to a minute; requests meanwhile build their own, and fail
// with the same error.
func (s *Sandbox) prepareLoop(ctx context.Context) {
	wait := 100 * time.Millisecond
	for {
		slot := s.takeID()
		ws, err := s.host.prepareWorkspace(ctx, s.newRequestID(), slot)
		if err != nil {
			s.putID(slot)
			if ctx.Err() != nil {
				return
			}
			s.log.Error("sandbox: preparing a sandbox ahead failed", "err", err, "retry_in", wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, time.Minute)
			continue
		}
		wait = 100 * time.Millisecond
		select {
		case s.pool <- ws:
		case <-ctx.Done():
			s.finish(ws)
			return
		}
	}
}

// newRequestID names a request's directory and cgroup: unique within the
// instance, and across instances sharing a state dir one after another.
func (s *Sandbox) newRequestID() string { return fmt.Sprintf("r%s-%d", s.tag, s.nextID.Add(1)) }

// takeWorkspace returns the workspace of the request of p: one prepared
// ahead, or one made now. A request with a Go build waits first for the
// Go build cache being prepared (waitGoCache).
func (s *Sandbox) takeWorkspace(ctx context.Context, p *plan) (workspace, error) {
	s.waitGoCache(ctx, p)
	s.host.expectFirst(p.steps[0].tasks[0].profile)
	ws, err := s.request()
	if err != nil {
		return nil, &Error{Code: CodeSandboxSetupFailed, Msg: "sandbox: request setup failed", Err: err}
	}
	return ws, nil
}

// request returns a prepared request, or makes one. One prepared before
// the Go build cache was ready goes: its sandboxes see none.
func (s *Sandbox) request() (workspace, error) {
	for done := false; !done; {
		select {
		case ws := <-s.pool:
			if !ws.lacksGoCache() {
				s.fromPool.Add(1)
				return ws, nil
			}
			s.finish(ws)
		default:
			done = true
		}
	}
	slot := s.takeID()
	ws, err := s.host.newWorkspace(s.newRequestID(), slot)
	if err != nil {
		s.putID(slot)
		return nil, err
	}
	s.built.Add(1)
	return ws, nil
}

// WorkspaceStats counts where the workspaces of requests came from. The
// zero value is no request yet.
type WorkspaceStats struct {
	// Prepared is the number of requests that took a workspace prepared
	// ahead of them, with the sandbox of their first task built; Built
	// the number that built their own on their critical path, because
	// none was waiting (a burst, or preparing failing: the log says
	// why).
	Prepared, Built uint64
	// Ready is the number of prepared workspaces waiting for a request
	// now.
	Ready int
}

// WorkspaceStats returns the counts of workspaces prepared ahead and built
// on requests' paths since New. It is safe to call concurrently with Run.
func (s *Sandbox) WorkspaceStats() WorkspaceStats {
	return WorkspaceStats{Prepared: s.fromPool.Load(), Built: s.built.Load(), Ready: len(s.pool)}
}

// finish ends a request whose processes are gone: it frees its identity
// slot and removes the rest (cells, cgroups, mounts, directory) in the
// background.
func (s *Sandbox) finish(ws workspace) {
	ws.discardCells()
	s.putID(ws.identity())
	s.host.background(func() {
		if err := ws.close(); err != nil {
			s.log.Error("request cleanup", "err", err)
		}
	})
}

// withDefaults fills zero fields and validates the result.
func (c Config) withDefaults() (Config, error) {
	c.Limits = c.Limits.withDefaults()
	if err := c.Limits.validate(); err != nil {
		return c, err
	}
	if c.QueueTimeout < 0 {
		return c, fmt.Errorf("config: QueueTimeout must not be negative, got %v", c.QueueTimeout)
	}
	if c.WorkspaceSize == 0 {
		c.WorkspaceSize = 256 * MiB
	}
	if c.WorkspaceSize < MiB {
		return c, fmt.Errorf("config: WorkspaceSize must be at least 1 MiB, got %d", c.WorkspaceSize)
	}
	if c.RootFS == "" {
		c.RootFS = "/"
	}
	if c.StateDir == "" {
		c.StateDir = "/var/lib/svc"
	}
	var err error
	if c.StateDir, err = filepath.Abs(c.StateDir); err != nil {
		return c, fmt.Errorf("config: StateDir: %w", err)
	}
	if c.UIDBase == 0 {
		c.UIDBase = 1_000_000
	}
	if c.UIDBase < 65536 {
		return c, fmt.Errorf("config: UIDBase must be at least 65536 (outside the host's own users), got %d", c.UIDBase)
	}
	if len(c.AllowedProfiles) == 0 {
		c.AllowedProfiles = []Profile{ProfileCompileV2, ProfileNativeV2}
	}
	for _, p := range c.AllowedProfiles {
		if !p.known() {
			return c, fmt.Errorf("config: AllowedProfiles: unknown profile %q", p)
		}
	}
	if c.DefaultProfile == "" {
		c.DefaultProfile = ProfileCompileV2
	}
	if !c.DefaultProfile.known() {
		return c, fmt.Errorf("config: DefaultProfile: unknown profile %q", c.DefaultProfile)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.GoBuildCache != "" {
		if c.GoBuildCache, err = filepath.Abs(c.GoBuildCache); err != nil {
			return c, fmt.Errorf("config: GoBuildCache: %w", err)
		}
		if c.ImageID == "" {
			if c.ImageID, _, err = DetectImage(c.RootFS); err != nil {
				return c, fmt.Errorf("config: ImageID: %w", err)
			}
		}
	}
	return c, nil
}

// HostIDs returns the range of host uids and gids the Sandbox runs
// sandboxes as: count ids from first (Config.UIDBase). Another Sandbox on
// the same host needs a range of its own: New takes the range in a
// host-wide lock directory, /run/svc/uids (see Config.UIDBase).
func (s *Sandbox) HostIDs() (first, count int) { return s.cfg.UIDBase, 2 * len(s.ids) }

// CgroupVersion returns the version of the cgroup hierarchy the sandboxes
// run in: 1 or 2; 0 off Linux, where there are none.
func (s *Sandbox) CgroupVersion() int { return s.host.cgroupVersion() }

// Limits returns the effective limits.
func (s *Sandbox) Limits() Limits { return s.limits }

// Config returns the effective configuration, defaults filled in.
func (s *Sandbox) Config() Config { return s.cfg }

// Run validates req and runs its steps in order in one workspace. Task
// failures are outcomes in the response; an error means the request was
// refused or could not be run, and is an *Error with a Code.
//
// Before anything runs, Run opens every stored file the tasks refer to
// (File.FileID) in Config.Files: one that is not stored is file_not_found.
// The open files serve the whole request, so a file deleted or expired
// meanwhile is still placed. The files a request places in the workspace
// must fit in Config.WorkspaceSize, else limits_exceeded: for each path,
// the largest content placed there, inline or stored, summed over paths
// (a path placed again by a later step is overwritten, not added).
//
// A request with a Go build (a task whose command is go) that starts
// while the Go build cache is being prepared (GoBuildCacheState) waits
// for it before its first step, within that task's wall time limit: the
// wait counts against the limit, and the task runs with what is left, in
// a workspace with the cache if it became ready.
//
// Cancelling ctx kills every task of the request; Run returns only when
// the request's processes are gone. Its mounts, cgroups and workspace are
// removed in the background afterwards; Close waits for that.
func (s *Sandbox) Run(ctx context.Context, req *Request) (*Response, error) {
	// One call per stage: plan (plan.go), admit (admit.go), execute
	// (execute.go) in a workspace of the platform, answer (outcome.go).
	p, err := s.plan(req)
	if err != nil {
		return nil, err
	}
	defer p.close()
	waited, err := s.admit(ctx, p)
	if err != nil {
		return nil, err
	}
	defer s.release(p.width)
	// The request runs until the overall deadline plus a grace period
	// (API.md, Deadlines), until ctx ends, or until Close. The deadline
	// starts now that the request holds its slots, not when it arrived.
	deadline := time.Now().Add(s.limits.OverallTimeout)
	rctx, cancel := context.WithDeadlineCause(ctx, deadline.Add(hardDeadlineGrace), errHardDeadline)
	defer cancel()
	stop := context.AfterFunc(s.closing, func() { cancel() })
	defer stop()
	ws, err := s.takeWorkspace(rctx, p)
	if err != nil {
		return nil, err
	}
	defer s.finish(ws)
	ex, err := s.execute(rctx, ws, p, deadline)
	resp, err := s.answer(ctx, rctx, p.req, ex, err)
	if resp != nil {
		resp.QueueWait = waited
	}
	return resp, err
}

// takeID returns a free identity slot; by the count of ids one is always
// free.
func (s *Sandbox) takeID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, used := range s.ids {
		if !used {
			s.ids[i] = true
			return i
		}
	}
	panic("svc: identity slots exhausted")
}

func (s *Sandbox) putID(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[i] = false
}

// Close stops accepting requests, refuses those waiting for slots and
// kills the running ones (all return shutting_down), waits for them to be
// cleaned up or for ctx to end, removes the service's cgroups and gives
// back its range of host ids.
func (s *Sandbox) Close(ctx context.Context) error {
	s.slots.close()
	s.close(errClosing)
	done := make(chan struct{})
	go func() {
		s.slots.held.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.drainPool()
	err := s.host.close()
	// Its processes are gone: another instance may run as the ids.
	return errors.Join(err, s.hostIDs.release())
}

var (
	defaultOnce sync.Once
	defaultSB   *Sandbox
	defaultErr  error
)

// Run runs steps with the default Config in a Sandbox shared by every call
// of this function (created on first use, never closed).
func Run(ctx context.Context, steps ...Step) (*Response, error) {
	defaultOnce.Do(func() { defaultSB, defaultErr = New(Config{}) })
	if defaultErr != nil {
		return nil, defaultErr
	}
	return defaultSB.Run(ctx, &Request{Steps: steps})
}

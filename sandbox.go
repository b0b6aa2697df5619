package svc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
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

	// slots are the task slots of Limits.MaxConcurrency; a request holds
	// as many as its widest step has tasks.
	slots  chan struct{}
	tag    string // of this instance, in request ids
	nextID atomic.Uint64

	// pool holds requests prepared ahead of demand by prepareLoop: their
	// workspace, cgroup and the sandbox of their first task built, each
	// for one request. stopPreparing ends prepareLoop, preparing tracks it.
	pool          chan workspace
	stopPreparing context.CancelFunc
	preparing     sync.WaitGroup

	// closing is cancelled by Close; requests run under it.
	closing context.Context
	close   context.CancelCauseFunc
	running sync.WaitGroup

	mu     sync.Mutex // guards closed and ids
	closed bool
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
// (processes, cgroups, mounts, workspaces) and returns a ready Sandbox.
func New(cfg Config) (*Sandbox, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{
		cfg:    cfg,
		limits: cfg.Limits,
		log:    cfg.Logger,
		slots:  make(chan struct{}, cfg.Limits.MaxConcurrency),
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
		case rq := <-s.pool:
			s.finish(rq)
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
		rq, err := s.host.prepareWorkspace(ctx, s.newRequestID(), slot)
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
		case s.pool <- rq:
		case <-ctx.Done():
			s.finish(rq)
			return
		}
	}
}

// newRequestID names a request's directory and cgroup: unique within the
// instance, and across instances sharing a state dir one after another.
func (s *Sandbox) newRequestID() string { return fmt.Sprintf("r%s-%d", s.tag, s.nextID.Add(1)) }

// request returns a prepared request, or makes one. One prepared before
// the Go build cache was ready goes: its sandboxes see none.
func (s *Sandbox) request() (workspace, error) {
	for done := false; !done; {
		select {
		case rq := <-s.pool:
			if !rq.lacksGoCache() {
				return rq, nil
			}
			s.finish(rq)
		default:
			done = true
		}
	}
	slot := s.takeID()
	rq, err := s.host.newWorkspace(s.newRequestID(), slot)
	if err != nil {
		s.putID(slot)
		return nil, err
	}
	return rq, nil
}

// finish ends a request whose processes are gone: it frees its identity
// slot and removes the rest (cells, cgroups, mounts, directory) in the
// background.
func (s *Sandbox) finish(rq workspace) {
	rq.discardCells()
	s.putID(rq.identity())
	s.host.background(func() {
		if err := rq.close(); err != nil {
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
// the same host needs a range of its own.
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
// Cancelling ctx kills every task of the request; Run returns only when
// the request's processes are gone. Its mounts, cgroups and workspace are
// removed in the background afterwards; Close waits for that.
func (s *Sandbox) Run(ctx context.Context, req *Request) (*Response, error) {
	if err := req.Validate(s.limits, s.cfg.AllowedProfiles); err != nil {
		return nil, err
	}
	// Inline files first: a request refused for its size opens nothing.
	if err := s.checkPlacedBytes(req, nil); err != nil {
		return nil, err
	}
	stored, err := s.openStored(req)
	if err != nil {
		return nil, err
	}
	defer stored.close()
	if err := s.checkPlacedBytes(req, stored); err != nil {
		return nil, err
	}
	width := req.width()
	// The keys of the leading cacheable steps: CPU only, before a slot is
	// taken.
	var keys []string
	if c := s.cfg.Cache; c != nil {
		if n := req.leadingCacheable(); n > 0 {
			keys = stepKeys(c.keyRoot(&s.cfg), req, n, s.cfg.DefaultProfile)
		}
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, &Error{Code: CodeShuttingDown, Msg: "the sandbox is shutting down"}
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()

	if !s.acquire(width) {
		return nil, &Error{Code: CodeCapacityExhausted, Msg: fmt.Sprintf("no free execution slots for a step of %d tasks", width)}
	}
	defer s.release(width)

	// The request runs until the overall deadline plus a grace period
	// (API.md, Deadlines), until ctx ends, or until Close.
	start := time.Now()
	deadline := start.Add(s.limits.OverallTimeout)
	rctx, cancel := context.WithDeadlineCause(ctx, deadline.Add(hardDeadlineGrace), errHardDeadline)
	defer cancel()
	stop := context.AfterFunc(s.closing, func() { cancel() })
	defer stop()

	if len(req.Steps) > 0 && len(req.Steps[0].Tasks) > 0 {
		s.host.expectFirst(req.Steps[0].Tasks[0].profile(s.cfg.DefaultProfile))
	}
	rq, err := s.request()
	if err == nil {
		defer s.finish(rq)
	}
	if err != nil {
		return nil, &Error{Code: CodeSandboxSetupFailed, Msg: "sandbox: request setup failed", Err: err}
	}

	resp := &Response{Legacy: req.Legacy, Cache: CacheSummary{Enabled: s.cfg.Cache != nil}}
	cr := s.newCacheRun(rq, stored, keys, true)
	resp.Results, err = s.runSteps(rctx, rq, req, stored, deadline, cr)
	if errors.Is(err, errReplayFailed) {
		// A layer could not be replayed and the workspace is half
		// changed: start over in an empty one, executing every step.
		s.log.Warn("step cache: a replay failed; running the request again without the cache's layers", "err", err)
		if err = rq.reset(); err == nil {
			cr = s.newCacheRun(rq, stored, keys, false)
			resp.Results, err = s.runSteps(rctx, rq, req, stored, deadline, cr)
		}
	}
	if err != nil {
		return nil, s.runError(ctx, rctx, err)
	}
	resp.Cache.ReplayedSteps, resp.Cache.StoredSteps = cr.counts()
	return resp, nil
}

// runSteps runs the steps of req in order in rq's workspace, through the
// step cache for the steps cr covers.
func (s *Sandbox) runSteps(rctx context.Context, rq workspace, req *Request, stored storedFiles, deadline time.Time, cr *cacheRun) ([]StepResult, error) {
	results := make([]StepResult, len(req.Steps))
	failed := false
	for i, step := range req.Steps {
		var skip string
		switch {
		case failed && req.StopOnFailure:
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
		if i+1 < len(req.Steps) && !cr.chained(i+1) {
			rq.prepare(rctx, req.Steps[i+1].Tasks)
		}
		var sr StepResult
		var err error
		if cr.chained(i) {
			sr, err = cr.step(rctx, i, step)
		} else {
			sr, err = rq.runStep(rctx, step, stored)
		}
		if err != nil {
			return nil, err
		}
		if err := rctx.Err(); err != nil {
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

const hardDeadlineGrace = 2 * time.Second

var errHardDeadline = errors.New("overall deadline passed")

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

// notRun returns a step result of not-run task results.
func notRun(step Step, o Outcome, why string) StepResult {
	sr := StepResult{Parallel: step.Parallel, Results: make([]Result, len(step.Tasks))}
	for i := range sr.Results {
		sr.Results[i] = Result{Outcome: o, Error: why}
	}
	return sr
}

func (s *Sandbox) acquire(n int) bool {
	for i := range n {
		select {
		case s.slots <- struct{}{}:
		default:
			s.release(i)
			return false
		}
	}
	return true
}

func (s *Sandbox) release(n int) {
	for range n {
		<-s.slots
	}
}

// SlotsInUse returns the number of task slots currently held.
func (s *Sandbox) SlotsInUse() int { return len(s.slots) }

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

// Close stops accepting requests, kills the running ones (they return
// shutting_down), waits for them to be cleaned up or for ctx to end, and
// removes the service's cgroups.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.close(errClosing)
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.drainPool()
	return s.host.close()
}

// width is the number of tasks of the widest step.
func (r *Request) width() int {
	w := 1
	for _, s := range r.Steps {
		w = max(w, len(s.Tasks))
	}
	return w
}

// storedFile is a stored file a request uses, opened before it runs.
type storedFile struct {
	f    *os.File
	size int64
}

// storedFiles are the stored files of a request by file id. The open
// files keep their contents readable for the whole request, even when the
// stored files are deleted or expire meanwhile.
type storedFiles map[string]storedFile

func (m storedFiles) close() {
	for _, sf := range m {
		sf.f.Close()
	}
}

// openStored opens every stored file the tasks of req refer to, in request
// order. A file that is not stored is file_not_found, naming where the
// first reference to it is.
func (s *Sandbox) openStored(req *Request) (storedFiles, error) {
	var m storedFiles
	for i, step := range req.Steps {
		sp := indexPath("steps", i)
		for j, t := range step.Tasks {
			tp := taskPath(sp, step, j)
			for _, p := range sortedKeys(t.Files) {
				id := t.Files[p].FileID
				if id == "" {
					continue
				}
				if _, ok := m[id]; ok {
					continue
				}
				missing := &Error{Code: CodeFileNotFound,
					Msg: fmt.Sprintf("%s: file_id %s is not stored", keyPath(tp+".files", p), id)}
				if s.cfg.Files == nil {
					return nil, missing
				}
				f, info, err := s.cfg.Files.Open(id)
				if err != nil {
					m.close()
					if CodeOf(err) == CodeNotFound {
						return nil, missing
					}
					return nil, err
				}
				if m == nil {
					m = make(storedFiles)
				}
				m[id] = storedFile{f: f, size: info.Size}
			}
		}
	}
	return m, nil
}

// checkPlacedBytes refuses a request whose files do not fit in the
// workspace: for each path the largest content placed there, summed over
// paths. Stored files missing from stored count as empty.
func (s *Sandbox) checkPlacedBytes(req *Request, stored storedFiles) error {
	largest := make(map[string]int64)
	for _, step := range req.Steps {
		for _, t := range step.Tasks {
			for p, f := range t.Files {
				n := int64(len(f.Content))
				if f.FileID != "" {
					n = stored[f.FileID].size
				}
				largest[p] = max(largest[p], n)
			}
		}
	}
	var n int64
	for _, v := range largest {
		n += v
	}
	if n > s.cfg.WorkspaceSize {
		return &Error{Code: CodeLimitsExceeded,
			Msg: fmt.Sprintf("files: %d bytes in all exceed the workspace size of %d bytes", n, s.cfg.WorkspaceSize)}
	}
	return nil
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

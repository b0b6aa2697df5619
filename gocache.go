package svc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
)

// The Go build cache (Config.GoBuildCache) is prepared once per image:
// a task in a sandbox of its own, with the environment of every task,
// runs goCacheCmd with its cache in /tmp/.gocache (the go.env every
// sandbox sees says so), and the cache is copied out of its /tmp into
// GoBuildCache/<image>. Each request then has that directory as the
// lower layer of an overlay on its /tmp/.gocache, whose upper layer is in
// the request's tmpfs: the go commands of its tasks find the standard
// library compiled, and what they change is the request's alone.
var goCacheCmd = []string{"go", "build", "std"}

// goCacheLimits are the limits of the task that prepares the Go build
// cache: one CPU for as long as it takes, memory for go's compilers and
// for the cache itself (its tmpfs pages count against the task's
// memory), threads for go's parallel compiles.
func goCacheLimits(l Limits) Limits {
	l.MemoryMax = max(l.MemoryMax, 2*GiB)
	l.PidsMax = max(l.PidsMax, 512)
	l.CPUMax = CPUMax{Quota: 100000, Period: 100000}
	l.CPUTimeLimit = 10 * time.Minute
	l.WallTimeout = 30 * time.Minute
	return l
}

// goCacheSize bounds the tmpfs of the task that prepares the Go build
// cache: the standard library of linux/amd64 compiled takes about
// 170 MiB.
const goCacheSize = 1 * GiB

// goCacheMtime is the modification time of every file of a prepared Go
// build cache: far ahead, so that go never marks an entry used (it sets
// the time of an entry last used more than an hour ago, which in an
// overlay copies the whole file up) and never trims one (it removes
// entries unused for five days).
var goCacheMtime = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// safeName is an image id usable as a directory name as it is.
var safeName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// goCacheName is the name of the directory of image id's prepared Go
// build cache in Config.GoBuildCache: the id, or a digest of an id that
// is no plain file name.
func goCacheName(id string) string {
	if safeName.MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256-" + hex.EncodeToString(sum[:8])
}

// goCache is the state of a Sandbox's prepared Go build cache: missing,
// being built, ready, or failed for good.
type goCache struct {
	dir   string      // the prepared cache once ready: Config.GoBuildCache/<image>
	ready atomic.Bool // dir is there, complete

	mu       sync.Mutex // guards building, err and done's closing
	building bool
	err      error
	done     chan struct{} // closed once ready or failed
}

// newGoCache returns the state of the cache prepared in dir: ready if an
// earlier instance prepared it (the directory appears complete, by a
// rename, or not at all).
func newGoCache(dir string) *goCache {
	gc := &goCache{dir: dir, done: make(chan struct{})}
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		gc.finish(nil)
	}
	return gc
}

// lower returns the prepared cache's directory, or "" while it is not
// ready.
func (gc *goCache) lower() string {
	if gc == nil || !gc.ready.Load() {
		return ""
	}
	return gc.dir
}

// start reports whether the caller is to build the cache: it is neither
// ready, nor failed, nor being built.
func (gc *goCache) start() bool {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	select {
	case <-gc.done:
		return false
	default:
	}
	if gc.building {
		return false
	}
	gc.building = true
	return true
}

// finish ends a build: ready when err is nil, failed for good otherwise.
func (gc *goCache) finish(err error) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	gc.building = false
	gc.err = err
	gc.ready.Store(err == nil)
	close(gc.done)
}

// abandon ends a build that was interrupted: the next start builds
// again.
func (gc *goCache) abandon() {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	gc.building = false
}

// GoBuildCacheState is the state of the Go build cache prepared in
// Config.GoBuildCache: a string equal to its JSON, as /info and /metrics
// show it.
type GoBuildCacheState string

const (
	// GoBuildCacheOff: none is prepared (Config.GoBuildCache is empty,
	// or the root filesystem has no Go toolchain in /usr/local/go).
	GoBuildCacheOff GoBuildCacheState = "off"
	// GoBuildCachePreparing: it is being prepared, or about to be, in
	// the background after New. A request with a Go build waits for it
	// (see Sandbox.Run); every other request gets an empty cache.
	GoBuildCachePreparing GoBuildCacheState = "preparing"
	// GoBuildCacheReady: prepared; every request gets a private copy.
	GoBuildCacheReady GoBuildCacheState = "ready"
	// GoBuildCacheFailed: preparing it failed (the log says why) and is
	// not tried again until the next New; requests get an empty cache.
	GoBuildCacheFailed GoBuildCacheState = "failed"
)

// GoBuildCacheStates returns every GoBuildCacheState.
func GoBuildCacheStates() []GoBuildCacheState {
	return []GoBuildCacheState{GoBuildCacheOff, GoBuildCachePreparing, GoBuildCacheReady, GoBuildCacheFailed}
}

// state is the cache's GoBuildCacheState; a nil cache is off.
func (gc *goCache) state() GoBuildCacheState {
	if gc == nil {
		return GoBuildCacheOff
	}
	select {
	case <-gc.done:
		if gc.ready.Load() {
			return GoBuildCacheReady
		}
		return GoBuildCacheFailed
	default:
		return GoBuildCachePreparing
	}
}

// GoBuildCacheState returns the state of the Go build cache. It is safe
// to call concurrently with Run.
func (s *Sandbox) GoBuildCacheState() GoBuildCacheState { return s.host.goCache().state() }

// goBuild returns the first task of p that is a Go build, nil for none.
// A task is taken for a Go build when its command is go, by name or by a
// path whose last element is go (/usr/local/go/bin/go): go build, go
// run, go test and go vet all compile what the cache holds. A go started
// by another program (sh -c "go build") is not recognised.
func goBuild(p *plan) *taskPlan {
	for i := range p.steps {
		for j := range p.steps[i].tasks {
			if t := &p.steps[i].tasks[j]; path.Base(t.Cmd) == "go" {
				return t
			}
		}
	}
	return nil
}

// waitGoCache waits, before a request takes its workspace, for the Go
// build cache while it is being prepared, if the request has a Go build
// (goBuild): within that task's wall time limit, and not past ctx. The
// wait counts against the limit: the task then runs with what is left of
// it. Its workspace has the prepared cache if it became ready meanwhile,
// and the build compiles the program alone instead of the standard
// library, which under the default limits takes more than they allow
// (and CPU from the preparation). If the cache is still not ready, the
// task has no wall time left, and ends timed_out as soon as it starts.
func (s *Sandbox) waitGoCache(ctx context.Context, p *plan) {
	gc := s.host.goCache()
	if gc.state() != GoBuildCachePreparing {
		return
	}
	t := goBuild(p)
	if t == nil {
		return
	}
	s.goWaits.Add(1)
	defer s.goWaits.Add(-1)
	start := time.Now()
	timer := time.NewTimer(t.limits.WallTimeout)
	defer timer.Stop()
	select {
	case <-gc.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	waited := time.Since(start)
	t.limits.WallTimeout = max(t.limits.WallTimeout-waited, time.Millisecond)
	s.log.Info("go build cache: a request with a go build waited for it", "waited_ms", waited.Milliseconds(),
		"state", gc.state(), "wall_timeout_left_ms", t.limits.WallTimeout.Milliseconds())
}

var errNoGoCache = errors.New("svc: no Go build cache is prepared: Config.GoBuildCache is empty, or RootFS has no Go in /usr/local/go")

// WaitGoBuildCache waits until the Go build cache prepared in
// Config.GoBuildCache is ready, and returns nil; or returns why it will
// not be: none is prepared (GoBuildCache is empty, or the root
// filesystem has no Go toolchain in /usr/local/go), its preparation
// failed, the Sandbox was closed, or ctx ended first. Until it is ready
// a request gets an empty cache, but one with a Go build waits for it
// first, within that task's wall time limit (see Sandbox.Run).
func (s *Sandbox) WaitGoBuildCache(ctx context.Context) error {
	gc := s.host.goCache()
	if gc == nil {
		return errNoGoCache
	}
	select {
	case <-gc.done:
		return gc.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing.Done():
		return context.Cause(s.closing)
	}
}

// prepareGoCache builds the Go build cache if it is neither ready nor
// failed nor being built: in a sandbox of its own, on an identity slot
// taken for the time. ctx ending interrupts it; a later call builds it
// again.
func (s *Sandbox) prepareGoCache(ctx context.Context) {
	gc := s.host.goCache()
	if gc == nil || !gc.start() {
		return
	}
	start := time.Now()
	slot := s.takeID()
	r, err := s.host.buildGoCache(ctx, s.newRequestID(), slot, gc.dir)
	s.putID(slot)
	switch {
	case err != nil && ctx.Err() != nil:
		gc.abandon()
	case err != nil:
		s.log.Error("go build cache: preparing it failed; go builds start from an empty cache", "dir", gc.dir, "err", err)
		gc.finish(err)
	case r == nil:
		s.log.Info("go build cache: prepared by another instance", "dir", gc.dir)
		gc.finish(nil)
	default:
		s.log.Info("go build cache: prepared", "dir", gc.dir, "wall_ms", time.Since(start).Milliseconds(),
			"cpu_usage_usec", orZero(r.Stats.CPUUsageUsec), "memory_peak_bytes", orZero(r.Stats.MemoryPeakBytes))
		gc.finish(nil)
	}
}

// orZero is *p, or 0 for nil.
func orZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

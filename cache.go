package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// CacheConfig configures a [StepCache]. URL is required; every other zero
// field takes the default documented on it (the defaults of API.md).
type CacheConfig struct {
	// URL names the store (CACHE_URL):
	//
	//	dir:///path            a directory, shared safely by the instances
	//	                       on one host or on a shared volume
	//	redis://host:port/db   a Redis server, shared by instances on
	//	                       several hosts (user:password@ and rediss://
	//	                       for TLS are accepted too)
	URL string
	// Namespace partitions the store (CACHE_NAMESPACE): 1 to 64 of
	// A-Z a-z 0-9 . _ - (not "." or ".."). Instances share layers only
	// within one namespace. Default "default".
	Namespace string
	// TTL is how long a layer is kept after it was stored or last
	// replayed (CACHE_TTL_SECS). Default 24 hours.
	TTL time.Duration
	// MaxBytes bounds the size of a dir store, all namespaces in it
	// together; the layers used least recently are removed first.
	// Redis bounds its memory itself (maxmemory). Default 4 GiB.
	MaxBytes int64
	// ImageID identifies the root filesystem the sandboxes see
	// (SVC_IMAGE_ID), and Toolchains the compilers and interpreters in
	// it (SVC_TOOLCHAINS); both are part of every key. Default: what
	// [DetectImage] finds in "/", the default [Config].RootFS; set them
	// when the sandboxes see another root.
	ImageID    string
	Toolchains []string
	// Timeout bounds each call to the store (CACHE_TIMEOUT_MS): a lookup
	// (which fetches the whole layer from Redis), a store, a removal. A
	// call that overruns it is a failure: a miss for the request, counted
	// in CacheStats.Errors, and it opens the circuit breaker, so that the
	// requests after it do not each wait for the store (cache_breaker.go).
	// Lookups are made before the request takes its task slots. Default
	// 1 s; set it above the time the store takes to send the largest
	// layers.
	Timeout time.Duration
	// Now is the clock of expiry, of least-recently-used eviction and of
	// the breaker's back-off; nil is time.Now. Tests inject a fake clock
	// here. (Redis expires layers on its own clock.)
	Now func() time.Time
	// Logger receives operational logs (store failures, damaged layers);
	// nil discards them.
	Logger *slog.Logger
}

// CacheStats are the counters of a [StepCache] since it was opened.
type CacheStats struct {
	// Hits and Misses count the lookups of steps: a hit is a step
	// replayed, a miss one that was executed because no usable layer was
	// found, whatever the reason (absent, expired, damaged, store down).
	Hits, Misses uint64
	// Stores counts the layers written.
	Stores uint64
	// Errors counts the failures of the store and of layers: the store
	// unreachable, full or not answering within CacheConfig.Timeout, a
	// layer that did not verify or could not be replayed, a layer that
	// could not be captured or written.
	Errors uint64
	// StoreDown is true while the store is left alone after a failure
	// (the circuit breaker is open): lookups are misses without a call.
	StoreDown bool
}

// StepCache stores the layers of deterministic steps and replays them on
// later requests; see the package documentation, "Step cache". Open one
// with [OpenCache] and set it as [Config].Cache; several Sandboxes may
// share one. A StepCache is safe for concurrent use. Close releases it.
//
// A failure of the store never fails a request: the step is executed (a
// miss), and the failure is logged and counted in [StepCache.Stats]. A
// store that does not answer costs a request at most CacheConfig.Timeout,
// and, once it failed, none until it answers again.
type StepCache struct {
	store      cacheBackend
	kind       string // "dir" or "redis"
	ns         string
	ttl        time.Duration
	timeout    time.Duration // of each call to the store
	guard      storeGuard    // of the store (cache_breaker.go)
	imageID    string
	toolchains []string
	now        func() time.Time
	log        *slog.Logger

	hits, misses, stores, errs atomic.Uint64

	// flights are the steps being executed by a request of this process,
	// by key: concurrent requests at the same step wait for one of them.
	flights   flightGroup
	closeOnce sync.Once
}

// cacheBackend is a store of layer blobs by key, within one namespace.
// Implementations are safe for concurrent use, by several processes too.
type cacheBackend interface {
	// get returns the blob of key, refreshing its expiry, or an error
	// wrapping errCacheMiss when there is none (or it expired).
	get(ctx context.Context, key string) (cacheBlob, error)
	// create starts writing the blob of key; nothing is visible before
	// commit, and a concurrent writer of the same key is harmless.
	create(ctx context.Context, key string) (cacheSink, error)
	// remove removes the blob of key, if any.
	remove(ctx context.Context, key string) error
	// drop removes every blob of the namespace and returns how many.
	drop(ctx context.Context) (int, error)
	close() error
}

// cacheBlob is a stored blob, readable at any offset until closed.
type cacheBlob interface {
	ReadAt(p []byte, off int64) (int, error)
	Size() int64
	Close() error
}

// cacheSink receives a blob being stored.
type cacheSink interface {
	Write(p []byte) (int, error)
	// commit makes the size bytes written visible under the key.
	commit(ctx context.Context, size int64) error
	// abort discards what was written; after commit it does nothing.
	abort()
}

var (
	errCacheMiss = errors.New("no layer")
	// errCacheUnavailable is returned without trying while a store that
	// failed is given time to recover (the breaker is open); it counts as
	// a miss, not an error.
	errCacheUnavailable = errors.New("the store is backing off after a failure")
)

// cacheNamespaceRE is what a namespace may be (cmd/svc checks the same).
var cacheNamespaceRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// OpenCache opens the store of cfg.URL, creating a dir store if needed.
// A Redis server that does not answer is not an error: the cache counts
// misses until it does.
func OpenCache(cfg CacheConfig) (*StepCache, error) {
	if cfg.URL == "" {
		return nil, errors.New("cache: URL is required")
	}
	switch {
	case cfg.TTL < 0:
		return nil, fmt.Errorf("cache: TTL must not be negative, got %v", cfg.TTL)
	case cfg.MaxBytes < 0:
		return nil, fmt.Errorf("cache: MaxBytes must not be negative, got %d", cfg.MaxBytes)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("cache: Timeout must not be negative, got %v", cfg.Timeout)
	}
	c := &StepCache{
		ns:         orDefault(cfg.Namespace, "default"),
		ttl:        orDefault(cfg.TTL, 24*time.Hour),
		timeout:    orDefault(cfg.Timeout, defaultCacheTimeout),
		imageID:    cfg.ImageID,
		toolchains: slices.Clone(cfg.Toolchains),
		now:        cfg.Now,
		log:        cfg.Logger,
	}
	if !cacheNamespaceRE.MatchString(c.ns) || c.ns == "." || c.ns == ".." {
		return nil, fmt.Errorf("cache: Namespace must be 1 to 64 of A-Z a-z 0-9 . _ - (not . or ..), got %q", c.ns)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.imageID == "" || c.toolchains == nil {
		id, tc, err := DetectImage("/")
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		if c.imageID == "" {
			c.imageID = id
		}
		if c.toolchains == nil {
			c.toolchains = tc
		}
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("cache: URL: %w", err)
	}
	c.guard = storeGuard{brk: breaker{now: c.now}, name: "step cache", kind: u.Scheme, log: c.log, errs: &c.errs}
	switch u.Scheme {
	case "dir":
		if u.Host != "" || u.Path == "" || u.Path[0] != '/' {
			return nil, fmt.Errorf("cache: URL: want dir:///absolute/path, got %q", cfg.URL)
		}
		c.kind = "dir"
		c.store, err = openDirCache(u.Path, c.ns, c.ttl, orDefault(cfg.MaxBytes, 4*GiB), c.now, c.log)
	case "redis", "rediss":
		c.kind = "redis"
		c.store, err = openRedisCache(cfg.URL, c.ns, c.ttl, c.timeout, c.log)
	default:
		return nil, fmt.Errorf("cache: URL: want dir:///path or redis://host:port/db, got %q", cfg.URL)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return c, nil
}

// Drop removes every layer of the namespace, for every instance sharing
// the store, and returns how many it removed. Requests running meanwhile
// may store layers again.
//
// Drop waits for the store at most dropTimeouts times CacheConfig.Timeout,
// and not at all while the store is left alone after a failure.
func (c *StepCache) Drop(ctx context.Context) (int, error) {
	n, err := callStore(ctx, c, dropTimeouts*c.timeout, "drop the namespace", "", c.store.drop, nil)
	if err != nil {
		c.log.Error("step cache: drop", "namespace", c.ns, "err", err)
		return n, &Error{Code: CodeInternalError, Msg: "cache: dropping the layers failed", Err: err}
	}
	c.log.Info("step cache: dropped the namespace", "namespace", c.ns, "layers", n)
	return n, nil
}

// Stats returns the counters since the cache was opened.
func (c *StepCache) Stats() CacheStats {
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Stores: c.stores.Load(), Errors: c.errs.Load(),
		StoreDown: c.guard.brk.isOpen()}
}

// Info describes the cache for GET /info: the backend ("dir" or
// "redis"), the namespace and the TTL.
func (c *StepCache) Info() (backend, namespace string, ttl time.Duration) {
	return c.kind, c.ns, c.ttl
}

// Close releases the store: it stops the background expiry of a dir store
// and closes the connections to Redis. Sandboxes using the cache must be
// closed first. Close is idempotent.
func (c *StepCache) Close() error {
	var err error
	c.closeOnce.Do(func() { err = c.store.close() })
	return err
}

// lookup returns the verified layer of key for a step of ntasks tasks and
// its blob, which the caller closes; nil when there is none to use. A
// layer that does not verify is removed; so is one of another format
// version, quietly: it is not damaged, only old, and the step's run
// stores it again.
func (c *StepCache) lookup(ctx context.Context, key string, ntasks int) (*layer, cacheBlob) {
	// Failures are counted and logged by callStore.
	blob, err := callStore(ctx, c, c.timeout, "look up a layer", key,
		func(ctx context.Context) (cacheBlob, error) { return c.store.get(ctx, key) },
		func(b cacheBlob) { b.Close() })
	if err != nil {
		return nil, nil
	}
	l, err := verifyLayer(blob, blob.Size(), key)
	if err == nil {
		err = checkResults(l.results, ntasks)
	}
	if errors.Is(err, errLayerVersion) {
		blob.Close()
		c.log.Info("step cache: removing a layer of another format version", "key", key, "err", err)
		c.remove(ctx, key)
		return nil, nil
	}
	if err != nil {
		blob.Close()
		c.discard(ctx, key, err)
		return nil, nil
	}
	return l, blob
}

// checkResults checks the results of a layer: one per task, each of a
// step that may be stored.
func checkResults(rs []Result, ntasks int) error {
	if len(rs) != ntasks {
		return corruptLayer("%d results for a step of %d tasks", len(rs), ntasks)
	}
	if why := unstorable(rs); why != "" {
		return corruptLayer("results: %s", why)
	}
	return nil
}

// unstorable says why a step with these results may not be stored, or ""
// when it may: every task must have exited by itself with whole output. A
// compile error is as deterministic as a success; a timeout, an OOM kill
// or a truncated output is not.
func unstorable(rs []Result) string {
	for i, r := range rs {
		switch {
		case r.Outcome != OutcomeExited:
			return fmt.Sprintf("task %d ended %s", i, r.Outcome)
		case r.StdoutTruncated || r.StderrTruncated:
			return fmt.Sprintf("task %d's output was truncated", i)
		}
	}
	return ""
}

// discard removes the layer of key, found damaged or unusable for why.
func (c *StepCache) discard(ctx context.Context, key string, why error) {
	c.errs.Add(1)
	c.log.Warn("step cache: removing a damaged layer", "key", key, "err", why)
	c.remove(ctx, key)
}

// remove removes the layer of key from the store; a failure is counted
// and logged.
func (c *StepCache) remove(ctx context.Context, key string) {
	callStore(ctx, c, c.timeout, "remove a layer", key,
		func(ctx context.Context) (struct{}, error) { return struct{}{}, c.store.remove(ctx, key) }, nil)
}

// failed counts and logs a failure of the store or of a layer.
func (c *StepCache) failed(what, key string, err error) { c.guard.failed(what, key, err) }

// put writes the layer of key: the results, then what write adds. A
// layer over limit bytes, or over what the store may hold, is not stored
// (errLayerTooLarge), nor is one with an entry no layer may hold
// (errNoLayer); neither is counted as an error. Failures are counted and
// logged, and returned.
func (c *StepCache) put(ctx context.Context, key string, results []Result, limit int64, write func(*layerWriter) error) error {
	js, err := json.Marshal(results)
	if err != nil {
		c.failed("encode results", key, err)
		return err
	}
	// Failures of the calls to the store are counted and logged by
	// callStore.
	sink, err := callStore(ctx, c, c.timeout, "store a layer", key,
		func(ctx context.Context) (cacheSink, error) { return c.store.create(ctx, key) },
		func(s cacheSink) { s.abort() })
	if err != nil {
		return err
	}
	lw := newLayerWriter(sink, key, js, limit)
	err = write(lw)
	var size int64
	if err == nil {
		size, err = lw.close()
	}
	called := false
	if err == nil {
		// A commit abandoned at the deadline may still be running: it
		// aborts the sink itself when it fails.
		called = true
		_, err = callStore(ctx, c, c.timeout, "store a layer", key, func(ctx context.Context) (struct{}, error) {
			err := sink.commit(ctx, size)
			if err != nil {
				sink.abort()
			}
			return struct{}{}, err
		}, nil)
	}
	if err != nil {
		if !called {
			sink.abort()
		}
		switch {
		case errors.Is(err, errLayerTooLarge):
			c.log.Info("step cache: not storing a layer too large to store", "key", key, "workspace_size", limit)
		case errors.Is(err, errNoLayer):
			c.log.Info("step cache: not storing a step", "key", key, "reason", err)
		case called || errors.Is(err, errCacheUnavailable) || ctx.Err() != nil:
		default:
			c.failed("store a layer", key, err)
		}
		return err
	}
	c.stores.Add(1)
	return nil
}

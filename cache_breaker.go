package svc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// The guard on a store that is a dependency outside the process (the
// step cache's store, the file store's object store): every call to the
// store has a deadline, and a circuit breaker spares the requests after a
// failure the wait for the next one. It sits on the contract's side of
// cacheBackend and of fileObjects, so every backend (dir, Redis, S3) gets
// it; each store has a storeGuard of its own, so one store down does not
// stop the calls to another.
//
// The breaker has three states:
//
//	closed     every call goes to the store
//	open       no call goes: each is errCacheUnavailable (a miss) at once,
//	           for a back-off of 1 s after the first failure, doubling
//	           while failures go on, up to 30 s
//	half-open  the back-off has passed: one call, the probe, goes to the
//	           store; the others are still refused until it ends. An
//	           answer closes the breaker, a failure opens it again
//
// A failure is a call that ends in an error of the store: unreachable,
// an I/O error, or no answer within the deadline. A call whose caller
// gave up first (the request was cancelled or ran out of time) says
// nothing of the store and changes nothing. An error the store answered
// with (errStoreReply: a full Redis refusing a write) is counted as an
// error but shows the store is up.

// Defaults of the guard.
const (
	// defaultCacheTimeout bounds each call to the store
	// (CacheConfig.Timeout, CACHE_TIMEOUT_MS).
	defaultCacheTimeout = time.Second
	breakerBackoffMin   = time.Second
	breakerBackoffMax   = 30 * time.Second
	// dropTimeouts is how many call deadlines Drop, which walks the
	// whole namespace, may take.
	dropTimeouts = 30
)

// errCacheTimeout is the cause of a call that overran its deadline.
var errCacheTimeout = errors.New("the store did not answer within the cache timeout")

// errStoreReply wraps an error the store answered with: the call failed,
// but the store is reachable.
type errStoreReply struct{ err error }

func (e errStoreReply) Error() string { return e.err.Error() }
func (e errStoreReply) Unwrap() error { return e.err }

// breaker is the circuit breaker of a store. The zero value is closed,
// with now unset; set now before use. It is safe for concurrent use.
type breaker struct {
	now func() time.Time

	mu        sync.Mutex // guards what follows
	openUntil time.Time  // while open: when the next probe may go
	backoff   time.Duration
	open      bool // a call failed and no answer came since
	probing   bool // a probe is out
}

// allow reports whether a call may go to the store now. A call allowed
// must be followed by exactly one of succeeded, failed or abandoned.
func (b *breaker) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.open:
		return true
	case b.probing || b.now().Before(b.openUntil):
		return false
	}
	b.probing = true
	return true
}

// canCall reports whether allow would let a call go now, taking nothing.
func (b *breaker) canCall() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.open || !b.probing && !b.now().Before(b.openUntil)
}

// succeeded closes the breaker, the store having answered, and reports
// whether it was open until now.
func (b *breaker) succeeded() (closed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	closed = b.open
	b.open, b.probing, b.backoff = false, false, 0
	return closed
}

// failed opens the breaker for the next back-off and reports whether it
// was closed until now.
func (b *breaker) failed() (tripped bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tripped = !b.open
	b.backoff = min(max(2*b.backoff, breakerBackoffMin), breakerBackoffMax)
	b.open, b.probing = true, false
	b.openUntil = b.now().Add(b.backoff)
	return tripped
}

// abandoned ends a call that says nothing of the store: a probe's turn
// goes to the next call.
func (b *breaker) abandoned() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

// isOpen reports whether calls are being refused (open or half-open).
func (b *breaker) isOpen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}

// storeGuard is the breaker of one store with where its failures go: a
// counter and a log. Set brk.now, name, kind, log and errs before use.
type storeGuard struct {
	brk  breaker
	name string         // of the owner in logs: "step cache", "file store"
	kind string         // the backend in logs: "redis", "s3"
	log  *slog.Logger   // never nil
	errs *atomic.Uint64 // counts the failures
}

// guarded is the owner of a store's guard: a StepCache or a FileStore.
type guarded interface{ storeGuard() *storeGuard }

func (c *StepCache) storeGuard() *storeGuard { return &c.guard }

// callStore runs op, a call to g's store, under the breaker and within
// timeout of now (and ctx). It returns errCacheUnavailable without
// calling when the breaker is open. A failure of the store is counted
// (CacheStats.Errors, FileStoreStats.Errors) and logged as what, with
// key, and trips the breaker; a timeout is such a failure.
//
// op runs on a goroutine of its own, so that a backend stuck in a call
// that ignores its context (a file system that hangs) still costs the
// caller no more than timeout: the call is then abandoned, and release,
// if not nil, is given what op returns when it returns at last.
func callStore[T any](ctx context.Context, owner guarded, timeout time.Duration, what, key string,
	op func(context.Context) (T, error), release func(T)) (T, error) {
	var zero T
	c := owner.storeGuard()
	if !c.brk.allow() {
		return zero, errCacheUnavailable
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errCacheTimeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	var (
		mu        sync.Mutex // guards abandoned and the send on done
		abandoned bool
		done      = make(chan result, 1)
	)
	go func() {
		v, err := op(cctx)
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if err == nil && release != nil {
				release(v)
			}
			return
		}
		done <- result{v, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-cctx.Done():
		mu.Lock()
		select {
		case res = <-done: // it ended as the deadline came
		default:
			abandoned = true
			res.err = context.Cause(cctx)
		}
		mu.Unlock()
	}
	var reply errStoreReply
	switch err := res.err; {
	case err == nil || errors.Is(err, errCacheMiss) || errors.Is(err, errLayerTooLarge) || errors.Is(err, errNoObject) ||
		errors.Is(err, errObjectExists):
		// A layer too large for the store is the layer's, not a failure;
		// nor is a miss, or a file stored already.
		c.answered()
	case errors.As(err, &reply):
		c.answered()
		c.failed(what, key, err)
	case ctx.Err() != nil:
		// The caller gave up first: not the store's fault.
		c.brk.abandoned()
	default:
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errCacheTimeout) {
			err = fmt.Errorf("%w (%v): %w", errCacheTimeout, timeout, err)
		}
		c.failed(what, key, err)
		if c.brk.failed() {
			c.log.Warn(c.name+": the store failed; calls to it are refused until it answers again",
				"backend", c.kind, "retry_in", breakerBackoffMin, "err", err)
		}
		res.err = err
	}
	return res.v, res.err
}

// answered closes the breaker after an answer of the store.
func (g *storeGuard) answered() {
	if g.brk.succeeded() {
		g.log.Info(g.name+": the store answers again", "backend", g.kind)
	}
}

// failed counts and logs a failure of the store. Keys name no secret.
func (g *storeGuard) failed(what, key string, err error) {
	g.errs.Add(1)
	g.log.Warn(g.name+": "+what, "key", key, "err", err)
}

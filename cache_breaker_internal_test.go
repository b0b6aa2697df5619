package svc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// guardedCache is a StepCache with no store, for the guard's own tests:
// callStore is given the calls.
func guardedCache(now func() time.Time) *StepCache {
	c := &StepCache{kind: "test", log: slog.New(slog.DiscardHandler), now: now}
	c.guard = storeGuard{brk: breaker{now: now}, name: "step cache", kind: "test", log: c.log, errs: &c.errs}
	return c
}

type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var errDown = errors.New("connection refused")

func call(c *StepCache, err error) error {
	_, e := callStore(context.Background(), c, time.Minute, "test", "k",
		func(context.Context) (int, error) { return 0, err }, nil)
	return e
}

// TestBreakerStates walks the breaker: closed, open after a failure with
// a back-off that doubles to its cap, half-open with one probe, closed by
// an answer. Errors are counted per call made, never per call refused.
func TestBreakerStates(t *testing.T) {
	clock := &manualClock{t: time.Unix(1e9, 0)}
	c := guardedCache(clock.Now)
	if err := call(c, nil); err != nil {
		t.Fatal(err)
	}
	if err := call(c, errCacheMiss); !errors.Is(err, errCacheMiss) || c.Stats().StoreDown {
		t.Fatalf("a miss: %v, %+v", err, c.Stats())
	}
	if err := call(c, errDown); !errors.Is(err, errDown) {
		t.Fatal(err)
	}
	want := breakerBackoffMin
	for round := range 8 {
		if s := c.Stats(); !s.StoreDown || s.Errors != uint64(round+1) {
			t.Fatalf("round %d: %+v", round, s)
		}
		if err := call(c, nil); !errors.Is(err, errCacheUnavailable) {
			t.Fatalf("round %d, open: %v", round, err)
		}
		clock.Add(want - time.Millisecond)
		if err := call(c, nil); !errors.Is(err, errCacheUnavailable) {
			t.Fatalf("round %d, just before %v: %v", round, want, err)
		}
		clock.Add(time.Millisecond)
		if err := call(c, errDown); !errors.Is(err, errDown) { // the probe fails
			t.Fatalf("round %d, probe: %v", round, err)
		}
		want = min(2*want, breakerBackoffMax)
	}
	clock.Add(breakerBackoffMax)
	if err := call(c, nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.StoreDown || s.Errors != 9 {
		t.Errorf("after a successful probe: %+v", s)
	}
	// Closed again: the back-off starts over at its minimum.
	call(c, errDown)
	clock.Add(breakerBackoffMin)
	if err := call(c, nil); err != nil {
		t.Errorf("after the minimum back-off: %v", err)
	}
	// A reply of a store that answers (a full Redis) is counted, and
	// keeps the breaker closed.
	if err := call(c, errStoreReply{errors.New("OOM")}); err == nil || c.Stats().StoreDown || c.Stats().Errors != 11 {
		t.Errorf("a reply: %v, %+v", err, c.Stats())
	}
}

// TestBreakerOneProbe: once the back-off has passed, of many concurrent
// calls exactly one goes to the store; the others are refused at once
// until it ends.
func TestBreakerOneProbe(t *testing.T) {
	clock := &manualClock{t: time.Unix(1e9, 0)}
	c := guardedCache(clock.Now)
	call(c, errDown)
	clock.Add(breakerBackoffMax)
	release := make(chan struct{})
	var calls, refused atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			_, err := callStore(context.Background(), c, time.Minute, "test", "k", func(context.Context) (int, error) {
				calls.Add(1)
				<-release
				return 0, nil
			}, nil)
			if errors.Is(err, errCacheUnavailable) {
				refused.Add(1)
			}
		})
	}
	for refused.Load() < 31 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if calls.Load() != 1 || c.Stats().StoreDown {
		t.Errorf("%d calls, %d refused, %+v", calls.Load(), refused.Load(), c.Stats())
	}
}

// TestCallStoreAbandons: a backend stuck in a call that ignores its
// context costs the caller the timeout, not the call; what it returns
// late is released. A caller that gives up first says nothing of the
// store.
func TestCallStoreAbandons(t *testing.T) {
	c := guardedCache(time.Now)
	unstick := make(chan struct{})
	released := make(chan int, 1)
	_, err := callStore(context.Background(), c, 50*time.Millisecond, "look up a layer", "k",
		func(context.Context) (int, error) {
			<-unstick // ignores its context
			return 7, nil
		}, func(v int) { released <- v })
	if !errors.Is(err, errCacheTimeout) {
		t.Fatalf("err %v, want the timeout", err)
	}
	if s := c.Stats(); s.Errors != 1 || !s.StoreDown {
		t.Errorf("after a timeout: %+v", s)
	}
	close(unstick)
	if v := <-released; v != 7 {
		t.Errorf("released %d", v)
	}

	// The caller's own end: not counted, and the probe's turn passes on.
	c = guardedCache(time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	_, err = callStore(ctx, c, time.Minute, "look up a layer", "k", func(ctx context.Context) (int, error) {
		cancel()
		<-ctx.Done()
		return 0, ctx.Err()
	}, nil)
	if err == nil || c.Stats().Errors != 0 || c.Stats().StoreDown {
		t.Errorf("a cancelled caller: %v, %+v", err, c.Stats())
	}
}

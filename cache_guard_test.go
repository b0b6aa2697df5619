package svc_test

// The step cache's guard on its store (cache_breaker.go) against stores
// that hang rather than refuse: a real redis-server stopped with SIGSTOP,
// and a TCP listener that accepts and never answers.

import (
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// arrivals records, for each request that arrives at a Sandbox's task
// slots, the cache's counters at that moment: what its lookups had done
// before it asked for slots.
type arrivals struct {
	mu    sync.Mutex
	stats []svc.CacheStats
}

func observeArrivals(sb *svc.Sandbox, c *svc.StepCache) *arrivals {
	a := &arrivals{}
	svc.ObserveQueue(sb, func(_ *svc.Request, event string) {
		if event == "arrive" {
			a.mu.Lock()
			a.stats = append(a.stats, c.Stats())
			a.mu.Unlock()
		}
	})
	return a
}

func (a *arrivals) last(t testing.TB) svc.CacheStats {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.stats) == 0 {
		t.Fatal("no request arrived at the task slots")
	}
	return a.stats[len(a.stats)-1]
}

// TestCacheRedisHung: Redis stopped (SIGSTOP: connections hang instead of
// being refused). A request that would replay its step waits for the
// lookup at most the cache's Timeout, before it takes its slots, and runs
// uncached; the timeout is counted and opens the breaker, so the next
// request makes no call at all. Once Redis runs again, the breaker's
// probe after the back-off finds it and the cache works again.
func TestCacheRedisHung(t *testing.T) {
	r := startRedis(t)
	clock := newTestClock()
	const timeout = 2 * time.Second
	c := newCache(t, svc.CacheConfig{URL: r.URL, Timeout: timeout, Now: clock.Now})
	sb := newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1}})
	seen := observeArrivals(sb, c)
	req := cached(svc.Single(sh("echo one > f; cat f")))
	wantSummary(t, runReq(t, sb, req), 0, 1)

	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Signal(syscall.SIGCONT) })
	start := time.Now()
	resp := runReq(t, sb, req)
	took := time.Since(start)
	wantSummary(t, resp, 0, 0)
	if got := stdout(resp, 0); got != "one\n" {
		t.Errorf("stdout %q", got)
	}
	// The lookup timed out, and was counted, before the request asked
	// for its slot.
	if s := seen.last(t); s.Errors != 1 || !s.StoreDown {
		t.Errorf("at admission: %+v, want the lookup's timeout counted and the store down", s)
	}
	if took > timeout+10*time.Second {
		t.Errorf("the request took %v with a cache timeout of %v", took, timeout)
	}

	// The breaker is open: no call, no wait, no new error.
	before := c.Stats()
	wantSummary(t, runReq(t, sb, req), 0, 0)
	if s := c.Stats(); s.Errors != before.Errors || s.Misses != before.Misses+1 || !s.StoreDown {
		t.Errorf("with the breaker open: %+v, before %+v", s, before)
	}

	// Still stopped after the back-off: the probe fails, and the breaker
	// opens again.
	clock.Add(time.Minute)
	wantSummary(t, runReq(t, sb, req), 0, 0)
	if s := c.Stats(); s.Errors != before.Errors+1 || !s.StoreDown {
		t.Errorf("after a failed probe: %+v, before %+v", s, before)
	}

	// Redis runs again: the next probe closes the breaker, and the layer
	// stored before is replayed.
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute)
	resp = runReq(t, sb, req)
	wantSummary(t, resp, 1, 0)
	if s := c.Stats(); s.StoreDown {
		t.Errorf("after Redis answered: %+v", s)
	}
}

// blackhole is a TCP listener that accepts connections and never
// answers; accepted receives each accepted connection.
func blackhole(t testing.TB) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan net.Conn, 64)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			select {
			case ch <- conn:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String(), ch
}

// TestCacheStoreAcceptsAndNeverAnswers: a "Redis" that accepts and says
// nothing. While a request's lookup waits for it, the request holds no
// task slot, and a request of another kind runs on the instance's only
// slot; the lookup gives up at the Timeout, and the requests after it
// make no call until the back-off has passed.
func TestCacheStoreAcceptsAndNeverAnswers(t *testing.T) {
	addr, accepted := blackhole(t)
	clock := newTestClock()
	const timeout = 3 * time.Second
	c := newCache(t, svc.CacheConfig{URL: "redis://" + addr + "/0", Timeout: timeout, Now: clock.Now})
	// OpenCache's PING is unanswered too; it only logs. The breaker is
	// still closed: the first lookup goes to the store.
	if s := c.Stats(); s.StoreDown || s.Errors != 0 {
		t.Fatalf("after open: %+v", s)
	}
	drain(accepted)
	sb := newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1}})
	seen := observeArrivals(sb, c)

	type result struct {
		resp *svc.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := sb.Run(t.Context(), cached(svc.Single(sh("echo cached"))))
		done <- result{resp, err}
	}()
	select {
	case <-accepted: // the lookup is waiting for an answer
	case res := <-done:
		t.Fatalf("the request ended before its lookup reached the store: %+v %v", res.resp, res.err)
	}
	if n := sb.SlotsInUse(); n != 0 {
		t.Errorf("%d slots in use while the lookup waits", n)
	}
	// The only slot is free for a request the cache has nothing to do
	// with.
	plain := runReq(t, sb, &svc.Request{Steps: []svc.Step{svc.Single(sh("echo plain"))}})
	if got := stdout(plain, 0); got != "plain\n" {
		t.Errorf("the plain request: %q", got)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("the cached request: %v", res.err)
	}
	wantSummary(t, res.resp, 0, 0)
	if got := stdout(res.resp, 0); got != "cached\n" {
		t.Errorf("the cached request: %q", got)
	}
	if s := seen.last(t); s.Errors != 1 || !s.StoreDown {
		t.Errorf("at admission: %+v, want the lookup's timeout counted and the store down", s)
	}

	// Open: the next requests do not call.
	for range 3 {
		wantSummary(t, runReq(t, sb, cached(svc.Single(sh("echo again")))), 0, 0)
	}
	select {
	case <-accepted:
		t.Error("a request called the store while the breaker was open")
	default:
	}
	if s := c.Stats(); s.Errors != 1 {
		t.Errorf("errors counted with the breaker open: %+v", s)
	}
	// After the back-off, one probe.
	clock.Add(time.Minute)
	wantSummary(t, runReq(t, sb, cached(svc.Single(sh("echo probe")))), 0, 0)
	if s := c.Stats(); s.Errors != 2 || !s.StoreDown {
		t.Errorf("after the probe: %+v", s)
	}
}

// drain empties ch.
func drain[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

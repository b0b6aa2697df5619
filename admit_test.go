package svc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The queue of task slots, without sandboxes: requests are *Request
// values named by their first task's Cmd.

// queueLog records what a slotQueue's observe sees, in order.
type queueLog struct {
	mu     sync.Mutex
	events []string // "<event> <name>"
}

func (l *queueLog) observe(req *Request, event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event+" "+req.Steps[0].Tasks[0].Cmd)
}

// of returns the names of the requests of event, in order.
func (l *queueLog) of(event string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for _, e := range l.events {
		if name, ok := strings.CutPrefix(e, event+" "); ok {
			names = append(names, name)
		}
	}
	return names
}

// testQueue returns a queue of size slots whose events are logged.
func testQueue(size int) (*slotQueue, *queueLog) {
	q := newSlotQueue(size)
	l := &queueLog{}
	q.observe = l.observe
	return q, l
}

func named(name string) *Request { return &Request{Steps: []Step{Single(Task{Cmd: name})}} }

// acquisition is an acquire running in its goroutine.
type acquisition struct {
	cancel context.CancelFunc
	done   chan error
}

// enqueue starts an acquire of width slots for name and returns once it
// waits in q.
func enqueue(t *testing.T, q *slotQueue, name string, width int, timeout time.Duration) *acquisition {
	t.Helper()
	before := q.length()
	ctx, cancel := context.WithCancel(context.Background())
	a := &acquisition{cancel: cancel, done: make(chan error, 1)}
	go func() {
		_, err := q.acquire(ctx, width, timeout, named(name))
		a.done <- err
	}()
	waitUntil(t, name+" waits", func() bool { return q.length() == before+1 })
	return a
}

// result waits for the acquire to return.
func (a *acquisition) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-a.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("acquire did not return within 10 s")
		return nil
	}
}

// pending reports whether the acquire still waits.
func (a *acquisition) pending() bool { return len(a.done) == 0 }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func hold(t *testing.T, q *slotQueue, name string, width int) {
	t.Helper()
	if _, err := q.acquire(context.Background(), width, 0, named(name)); err != nil {
		t.Fatalf("acquire %d for %s: %v", width, name, err)
	}
}

// TestQueueOrderMixedWidths: waiters of any width are admitted in arrival
// order, each once its width is free.
func TestQueueOrderMixedWidths(t *testing.T) {
	q, l := testQueue(4)
	hold(t, q, "full", 4)
	a := enqueue(t, q, "a3", 3, time.Minute)
	b := enqueue(t, q, "b1", 1, time.Minute)
	c := enqueue(t, q, "c2", 2, time.Minute)
	d := enqueue(t, q, "d1", 1, time.Minute)
	q.release(4) // a3 and b1 fit; c2 does not, and d1 may not pass it
	for _, x := range []*acquisition{a, b} {
		if err := x.result(t); err != nil {
			t.Fatal(err)
		}
	}
	if !c.pending() || !d.pending() || q.length() != 2 || q.inUse() != 4 {
		t.Fatalf("after the release of 4: queue %d, in use %d", q.length(), q.inUse())
	}
	q.release(3) // a3 done: c2 and d1 fit
	for _, x := range []*acquisition{c, d} {
		if err := x.result(t); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.of("admit"), []string{"full", "a3", "b1", "c2", "d1"}; !slices.Equal(got, want) {
		t.Errorf("admitted %v, want %v", got, want)
	}
	if q.inUse() != 4 {
		t.Errorf("in use %d, want 4 (b1, c2, d1)", q.inUse())
	}
}

// TestQueueNoOvertaking: a narrow request that finds its one slot free
// still waits behind a wide one that does not fit yet: the wide one is
// never starved.
func TestQueueNoOvertaking(t *testing.T) {
	q, l := testQueue(4)
	hold(t, q, "three", 3)
	wide := enqueue(t, q, "wide", 2, time.Minute)
	narrow := enqueue(t, q, "narrow", 1, time.Minute)
	if q.inUse() != 3 {
		t.Fatalf("in use %d: the narrow request overtook the wide one", q.inUse())
	}
	// More narrow ones come and go; the wide one keeps its place.
	for i := range 3 {
		n := enqueue(t, q, fmt.Sprint("n", i), 1, time.Minute)
		n.cancel()
		wantCode(t, n.result(t), CodeCancelled)
	}
	q.release(3)
	if err := wide.result(t); err != nil {
		t.Fatal(err)
	}
	if err := narrow.result(t); err != nil {
		t.Fatal(err)
	}
	if got, want := l.of("admit"), []string{"three", "wide", "narrow"}; !slices.Equal(got, want) {
		t.Errorf("admitted %v, want %v", got, want)
	}
}

// TestQueueCancelHead: the head leaving at once lets in the next, which
// fits in what is free.
func TestQueueCancelHead(t *testing.T) {
	q, l := testQueue(4)
	hold(t, q, "three", 3)
	head := enqueue(t, q, "head", 2, time.Minute)
	next := enqueue(t, q, "next", 1, time.Minute)
	head.cancel()
	wantCode(t, head.result(t), CodeCancelled)
	if err := next.result(t); err != nil {
		t.Fatal(err)
	}
	if q.length() != 0 || q.inUse() != 4 {
		t.Errorf("queue %d, in use %d; want 0 and 4", q.length(), q.inUse())
	}
	if got, want := l.of("admit"), []string{"three", "next"}; !slices.Equal(got, want) {
		t.Errorf("admitted %v, want %v", got, want)
	}
}

// TestQueueCancelMiddle: a waiter that leaves from the middle is never
// admitted; the others keep their order.
func TestQueueCancelMiddle(t *testing.T) {
	q, l := testQueue(2)
	hold(t, q, "full", 2)
	a := enqueue(t, q, "a", 1, time.Minute)
	b := enqueue(t, q, "b", 1, time.Minute)
	c := enqueue(t, q, "c", 1, time.Minute)
	b.cancel()
	wantCode(t, b.result(t), CodeCancelled)
	if q.length() != 2 {
		t.Fatalf("queue %d after b left, want 2", q.length())
	}
	q.release(1)
	if err := a.result(t); err != nil {
		t.Fatal(err)
	}
	if !c.pending() {
		t.Fatal("c was admitted without a free slot")
	}
	q.release(1)
	if err := c.result(t); err != nil {
		t.Fatal(err)
	}
	if got, want := l.of("admit"), []string{"full", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("admitted %v, want %v", got, want)
	}
	if got := l.of("leave"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("left %v, want [b]", got)
	}
}

// TestQueueTimeout: a waiter with no slots after its timeout is refused
// with capacity_exhausted and leaves the queue; the one behind it, which
// it held back, is let in.
func TestQueueTimeout(t *testing.T) {
	q, _ := testQueue(4)
	hold(t, q, "three", 3)
	const timeout = 50 * time.Millisecond
	start := time.Now()
	head := enqueue(t, q, "head", 2, timeout)
	next := enqueue(t, q, "next", 1, time.Minute)
	err := head.result(t)
	wantCode(t, err, CodeCapacityExhausted)
	if d := time.Since(start); d < timeout {
		t.Errorf("refused after %v, before the timeout of %v", d, timeout)
	}
	t.Logf("refused: %v", err)
	if err := next.result(t); err != nil {
		t.Fatal(err)
	}
	if q.length() != 0 || q.inUse() != 4 {
		t.Errorf("queue %d, in use %d; want 0 and 4", q.length(), q.inUse())
	}
}

// TestQueueZeroTimeout: without a queue timeout a request that finds too
// few slots is refused at once and nothing waits: the spec's behaviour.
func TestQueueZeroTimeout(t *testing.T) {
	q, _ := testQueue(2)
	hold(t, q, "one", 1)
	_, err := q.acquire(context.Background(), 2, 0, named("two"))
	wantCode(t, err, CodeCapacityExhausted)
	if q.length() != 0 || q.inUse() != 1 {
		t.Errorf("queue %d, in use %d; want 0 and 1", q.length(), q.inUse())
	}
	hold(t, q, "other", 1)
	q.release(1)
	q.release(1)
	if q.inUse() != 0 {
		t.Errorf("in use %d after the releases", q.inUse())
	}
}

// TestQueueClose: Close refuses the waiters at once with shutting_down,
// whatever their timeout, and every later request; those holding slots
// keep them until they give them back.
func TestQueueClose(t *testing.T) {
	q, _ := testQueue(2)
	hold(t, q, "full", 2)
	a := enqueue(t, q, "a", 1, time.Hour)
	b := enqueue(t, q, "b", 2, time.Hour)
	q.close()
	wantCode(t, a.result(t), CodeShuttingDown)
	wantCode(t, b.result(t), CodeShuttingDown)
	_, err := q.acquire(context.Background(), 1, time.Hour, named("late"))
	wantCode(t, err, CodeShuttingDown)
	if q.length() != 0 || q.inUse() != 2 {
		t.Errorf("queue %d, in use %d; want 0 and 2", q.length(), q.inUse())
	}
	released := make(chan struct{})
	go func() {
		q.held.Wait()
		close(released)
	}()
	q.release(2)
	<-released
}

// TestQueueTooWide: a request wider than the instance is refused at once
// rather than blocking the queue forever.
func TestQueueTooWide(t *testing.T) {
	q, _ := testQueue(2)
	_, err := q.acquire(context.Background(), 3, time.Hour, named("wide"))
	wantCode(t, err, CodeCapacityExhausted)
}

// TestQueueStress: many requests of random widths, some cancelled, some
// timing out, against few slots. The slots never go below zero nor above
// the size, every admitted request is admitted in arrival order among
// those admitted, and all slots come back.
func TestQueueStress(t *testing.T) {
	const size, n = 6, 400
	q := newSlotQueue(size)
	var mu sync.Mutex
	var arrived, admitted []*Request
	var held int
	q.observe = func(req *Request, event string) {
		mu.Lock()
		defer mu.Unlock()
		switch event {
		case "arrive":
			arrived = append(arrived, req)
		case "admit":
			admitted = append(admitted, req)
		}
	}
	var wg sync.WaitGroup
	var failures sync.Map
	for i := range n {
		wg.Go(func() {
			width := 1 + rand.IntN(size)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			timeout := time.Minute
			switch i % 7 {
			case 3:
				timeout = time.Duration(rand.IntN(2000)) * time.Microsecond
			case 5:
				time.AfterFunc(time.Duration(rand.IntN(2000))*time.Microsecond, cancel)
			}
			_, err := q.acquire(ctx, width, timeout, named(fmt.Sprint(i)))
			if err != nil {
				if c := CodeOf(err); c != CodeCapacityExhausted && c != CodeCancelled {
					failures.Store(i, err)
				}
				return
			}
			mu.Lock()
			held += width
			if held > size {
				failures.Store(i, fmt.Errorf("%d slots held of %d", held, size))
			}
			mu.Unlock()
			for range rand.IntN(20) {
				runtime.Gosched() // hold the slots a while
			}
			mu.Lock()
			held -= width
			mu.Unlock()
			q.release(width)
		})
	}
	wg.Wait()
	failures.Range(func(k, v any) bool {
		t.Errorf("request %v: %v", k, v)
		return true
	})
	if q.inUse() != 0 || q.length() != 0 {
		t.Errorf("in use %d, queue %d at the end", q.inUse(), q.length())
	}
	// The admitted requests, in the order they arrived, are the order
	// they were admitted in.
	in := slices.DeleteFunc(slices.Clone(arrived), func(r *Request) bool { return !slices.Contains(admitted, r) })
	if !slices.Equal(in, admitted) {
		t.Errorf("admission order differs from arrival order")
	}
	t.Logf("%d of %d admitted", len(admitted), n)
}

// BenchmarkAdmit is admit and release of a one-task request with free
// slots and no queue timeout: the cost the queue adds to every request.
func BenchmarkAdmit(b *testing.B) {
	s := &Sandbox{slots: newSlotQueue(8)}
	p := &plan{req: named("x"), width: 1}
	ctx := context.Background()
	for b.Loop() {
		_, err := s.admit(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		s.release(p.width)
	}
}

// BenchmarkAdmitParallel is BenchmarkAdmit from every P at once, with
// slots enough for all: contention on the queue's lock, no waiting.
func BenchmarkAdmitParallel(b *testing.B) {
	s := &Sandbox{slots: newSlotQueue(64)}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		p := &plan{req: named("x"), width: 2}
		for pb.Next() {
			if _, err := s.admit(ctx, p); err != nil {
				b.Fatal(err)
			}
			s.release(p.width)
		}
	})
}

// BenchmarkAdmitQueued: 16 goroutines per P take turns on 2 slots with a
// queue timeout, so nearly every admit waits: the cost of a hand-over
// from a releasing request to the head of the queue.
func BenchmarkAdmitQueued(b *testing.B) {
	s := &Sandbox{slots: newSlotQueue(2), cfg: Config{QueueTimeout: time.Minute}}
	ctx := context.Background()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		p := &plan{req: named("x"), width: 1}
		for pb.Next() {
			if _, err := s.admit(ctx, p); err != nil {
				b.Error(err)
				return
			}
			s.release(p.width)
		}
	})
}

package svc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// The admit stage: a planned request takes as many task slots as its
// widest step has tasks. When fewer are free it waits for them, first
// come first served, for at most Config.QueueTimeout, or is refused at
// once when that is 0 (API.md, "Waiting for a slot").

// admit lets p's request in: it returns once the request holds p.width
// task slots, with how long it waited for them, or refuses it:
// shutting_down once Close has begun (also while it waits),
// capacity_exhausted when no slots came free in time, and ctx's code
// (cancelled) when ctx ends while it waits. The caller gives the slots
// back with release.
//
// The step cache's lookups come first (lookAhead, into p.ahead): they
// are calls to a store outside the process, which a request makes
// without holding slots, so that a store that hangs costs each request
// at most the cache's Timeout and the instance none of its capacity.
func (s *Sandbox) admit(ctx context.Context, p *plan) (waited time.Duration, err error) {
	p.ahead = s.lookAhead(ctx, p)
	return s.slots.acquire(ctx, p.width, s.cfg.QueueTimeout, p.req)
}

// release gives back n task slots, handing them to the requests waiting
// for them.
func (s *Sandbox) release(n int) { s.slots.release(n) }

// SlotsInUse returns the number of task slots currently held.
func (s *Sandbox) SlotsInUse() int { return s.slots.inUse() }

// QueueLength returns the number of requests waiting for task slots.
// It is always 0 when Config.QueueTimeout is 0.
func (s *Sandbox) QueueLength() int { return s.slots.length() }

// slotQueue is the task slots of a Sandbox and the requests waiting for
// them. Requests are served strictly in arrival order: the first waiter
// (the head) waits until its width is free, and no request behind it
// takes slots before it, however narrow, so a wide request is never
// starved by narrow ones. Create it with newSlotQueue; it is safe for
// concurrent use.
type slotQueue struct {
	size int // the slots of the instance

	// held counts the requests holding slots: Close waits for it to
	// reach 0. Add is called under mu while !closed, so every Add happens
	// before close and so before Close's Wait.
	held sync.WaitGroup

	mu     sync.Mutex // guards what follows
	free   int
	queue  []*waiter // in arrival order; queue[0] is the head
	closed bool
	// observe, set by tests only, sees under mu each request arrive
	// ("arrive"), take its slots ("admit") or go without them ("leave";
	// also just after "admit" when its context ended as they came).
	observe func(req *Request, event string)
}

// A waiter is a request in the queue.
type waiter struct {
	width int
	req   *Request
	ready chan struct{} // closed when done becomes true
	// done and granted are set under mu: done once the waiter has left
	// the queue, granted when it left with its slots (not by Close).
	done, granted bool
}

func newSlotQueue(size int) *slotQueue { return &slotQueue{size: size, free: size} }

// acquire takes width slots for req, waiting at most timeout in arrival
// order when fewer are free or others wait; see Sandbox.admit.
func (q *slotQueue) acquire(ctx context.Context, width int, timeout time.Duration, req *Request) (time.Duration, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, &Error{Code: CodeShuttingDown, Msg: "the sandbox is shutting down"}
	}
	q.note(req, "arrive")
	if len(q.queue) == 0 && width <= q.free {
		q.take(width, req)
		q.mu.Unlock()
		return 0, nil
	}
	if timeout <= 0 || width > q.size {
		q.note(req, "leave")
		q.mu.Unlock()
		return 0, &Error{Code: CodeCapacityExhausted, Msg: fmt.Sprintf("no free execution slots for a step of %d tasks", width)}
	}
	w := &waiter{width: width, req: req, ready: make(chan struct{})}
	q.queue = append(q.queue, w)
	q.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var refusal error
	select {
	case <-w.ready:
	case <-timer.C:
		refusal = &Error{Code: CodeCapacityExhausted,
			Msg: fmt.Sprintf("no execution slots for a step of %d tasks came free within the queue timeout of %v", width, timeout)}
	case <-ctx.Done():
	}
	waited := time.Since(start)
	q.mu.Lock()
	defer q.mu.Unlock()
	if ctx.Err() != nil {
		refusal = &Error{Code: CodeOf(ctx.Err()), Msg: "the request was cancelled while it waited for execution slots", Err: context.Cause(ctx)}
	}
	switch {
	case w.granted && ctx.Err() != nil:
		// Its client left as the slots came: they go to the next.
		q.note(req, "leave")
		q.put(width)
		return waited, refusal
	case w.granted:
		// Granted, perhaps just as the timer fired: the slots are its.
		return waited, nil
	case w.done:
		return waited, &Error{Code: CodeShuttingDown, Msg: "the sandbox shut down while the request waited for execution slots"}
	}
	i := slices.Index(q.queue, w)
	q.queue = slices.Delete(q.queue, i, i+1)
	w.done = true
	q.note(req, "leave")
	q.grant() // the head may have left: the next may fit now
	return waited, refusal
}

// release gives back width slots and hands them on.
func (q *slotQueue) release(width int) {
	q.mu.Lock()
	q.put(width)
	q.mu.Unlock()
}

// take gives width free slots to req. Called with mu held.
func (q *slotQueue) take(width int, req *Request) {
	q.free -= width
	q.held.Add(1)
	q.note(req, "admit")
}

// put gives back width slots and serves the queue. Called with mu held.
func (q *slotQueue) put(width int) {
	q.free += width
	q.held.Done()
	q.grant()
}

// grant admits the waiters at the head of the queue while their width is
// free. Called with mu held.
func (q *slotQueue) grant() {
	for len(q.queue) > 0 && q.queue[0].width <= q.free {
		w := q.queue[0]
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.take(w.width, w.req)
		w.done, w.granted = true, true
		close(w.ready)
	}
	if len(q.queue) == 0 {
		q.queue = nil
	}
}

// close refuses every request that arrives from now on, and those that
// wait, with shutting_down, at once. The requests holding slots keep
// them until they release them; wait for them with held.
func (q *slotQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, w := range q.queue {
		w.done = true
		close(w.ready)
		q.note(w.req, "leave")
	}
	q.queue = nil
}

// note tells observe of an event. Called with mu held.
func (q *slotQueue) note(req *Request, event string) {
	if q.observe != nil {
		q.observe(req, event)
	}
}

func (q *slotQueue) inUse() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.size - q.free
}

func (q *slotQueue) length() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

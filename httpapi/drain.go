package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/svc-sandbox/svc"
)

// Draining (spec section 8; API.md, /health): from Drain on, /health
// answers 503 shutting_down, new executions and uploads answer
// shutting_down, and the request bodies still arriving are cut, their
// requests answering shutting_down. Shutdown then closes the Sandbox,
// which kills the running requests (they answer shutting_down), and waits
// for every request to be answered while the server still accepts
// connections, so that /health answers 503 until the very end; only then
// does it stop the server. Whatever the clients do, it returns by its
// context's deadline.

// refuseWhileDraining answers shutting_down to new work once Drain was
// called.
func (h *Handler) refuseWhileDraining(w http.ResponseWriter, r *http.Request) bool {
	if !h.draining.Load() {
		return false
	}
	h.fail(w, r, &svc.Error{Code: svc.CodeShuttingDown, Msg: "the instance is shutting down"})
	return true
}

// Drain makes /health answer 503 and new executions and uploads answer
// shutting_down, and cuts the request bodies being received: their
// requests answer shutting_down. Requests already running go on until
// the Sandbox is closed.
func (h *Handler) Drain() {
	h.draining.Store(true)
	h.bodies.cut()
}

// Shutdown stops the service: it drains h; closes the Sandbox, which
// kills the running requests (they answer 503 shutting_down); waits for
// every request being served to be answered, srv serving meanwhile (a
// /health answers 503); and then shuts srv down. A request still not
// answered shortly before ctx's deadline (a client that does not read
// its response) has its connection closed, and is logged: Shutdown
// returns by ctx's deadline whatever the clients do. It returns an error
// only when the Sandbox could not be closed. The file store and the
// cache are the caller's to close afterwards.
func (h *Handler) Shutdown(ctx context.Context, srv *http.Server) error {
	h.Drain()
	closed := make(chan error, 1)
	go func() { closed <- h.sb.Close(ctx) }()
	// The answers get until a little before the deadline: the rest is
	// for closing the connections that are left.
	grace := ctx
	if deadline, ok := ctx.Deadline(); ok {
		margin := min(time.Second, time.Until(deadline)/5)
		var cancel context.CancelFunc
		grace, cancel = context.WithDeadline(ctx, deadline.Add(-margin))
		defer cancel()
	}
	select {
	case <-h.active.zero():
	case <-grace.Done():
	}
	if err := srv.Shutdown(grace); err != nil {
		n := h.active.count()
		srv.Close()
		h.log.Warn("shutdown: closed the connections still open at the shutdown timeout",
			"requests_not_answered", n, "err", err.Error())
	}
	if err := <-closed; err != nil {
		return fmt.Errorf("close sandbox: %w", err)
	}
	return nil
}

// inFlight counts the requests being served. Its zero value is ready.
type inFlight struct {
	mu   sync.Mutex // guards n and idle
	n    int
	idle chan struct{} // closed when n reaches 0; nil when no one waits
}

func (f *inFlight) enter() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inFlight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// zero returns a channel closed once no request is being served.
func (f *inFlight) zero() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	return f.idle
}

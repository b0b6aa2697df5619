package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-sandbox/svc"
)

// Request bodies (POST /execute, POST /file) are read under an idle
// timeout: a client that sends nothing for Config.BodyIdleTimeout
// (BODY_IDLE_TIMEOUT_MS) loses the request, and with it the upload slot
// it holds, and is answered 408 with code cancelled (the spec has no code
// of its own for it; the request was cancelled before it finished). The
// timeout starts again with every read that receives bytes, so a slow
// but steady client is never cut off. A body declared (Content-Length)
// over its limit is refused before it is read. Drain cuts the bodies
// still arriving: their requests answer 503 shutting_down.

// defaultBodyIdleTimeout is Config.BodyIdleTimeout's default.
const defaultBodyIdleTimeout = 10 * time.Second

// bodyReader reads a request's body under the idle timeout. Its read
// deadline is the connection's (http.ResponseController), which the
// server also reads under after the handler (the rest of a body not read
// to its end) and at EOF (to see the client go): finish settles it once
// the handler has read what it needs. It is used by one goroutine, but
// for cut.
type bodyReader struct {
	body io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	// cut is set by Drain: the next read fails, and a read in progress
	// is woken by a deadline in the past.
	cut atomic.Bool
	h   *Handler
	// eof is set once the body was read to its end; failed once a read
	// was given up on.
	eof, failed bool
}

// errBodyIdle and errBodyCut are the causes of a body given up on.
var (
	errBodyIdle = errors.New("the client sent nothing within the body idle timeout")
	errBodyCut  = errors.New("cut by the drain")
)

// bodyError is a body read given up on: the client's pause (408
// cancelled) or the drain (503 shutting_down). It unwraps to the
// *svc.Error to answer, so that the file store passes it on as is.
type bodyError struct {
	e      *svc.Error
	status int
}

func (b *bodyError) Error() string { return b.e.Error() }
func (b *bodyError) Unwrap() error { return b.e }

// readBody returns r's body under the idle timeout, registered to be cut
// by Drain; the caller calls finish once it has read the body.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) *bodyReader {
	b := &bodyReader{body: r.Body, rc: http.NewResponseController(w), idle: h.bodyIdle, h: h}
	h.bodies.add(b)
	if h.draining.Load() {
		b.cut.Store(true)
	}
	return b
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.cut.Load() {
		b.failed = true
		return 0, b.failure(errBodyCut)
	}
	b.rc.SetReadDeadline(time.Now().Add(b.idle))
	if b.cut.Load() { // Drain came between the check and the deadline
		b.rc.SetReadDeadline(time.Unix(1, 0))
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.failed = true
		if b.cut.Load() {
			return n, b.failure(errBodyCut)
		}
		return n, b.failure(fmt.Errorf("%w (%v): %w", errBodyIdle, b.idle, err))
	}
	return n, err
}

func (b *bodyReader) Close() error { return b.body.Close() }

// failure is the error of a read given up on for cause.
func (b *bodyReader) failure(cause error) error {
	if errors.Is(cause, errBodyCut) {
		return &bodyError{status: http.StatusServiceUnavailable, e: &svc.Error{Code: svc.CodeShuttingDown,
			Msg: "the instance is shutting down; the request body was not read to its end", Err: cause}}
	}
	return &bodyError{status: http.StatusRequestTimeout, e: &svc.Error{Code: svc.CodeCancelled,
		Msg: fmt.Sprintf("body: nothing received for %v (BODY_IDLE_TIMEOUT_MS); send the body without pausing", b.idle),
		Err: cause}}
}

// finish takes the body out of Drain's reach, the handler having read
// what it needs, and settles the read deadline: none once the body was
// read to its end (the server then waits for the client to go, for as
// long as the request runs); one idle timeout from now for the rest of a
// body the server discards; and the one passed, after a read given up
// on, so that the server discards nothing more.
func (b *bodyReader) finish() {
	b.h.bodies.remove(b)
	switch {
	case b.eof:
		b.rc.SetReadDeadline(time.Time{})
	case b.failed:
	default:
		b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
}

// failBody answers err, a failure to read a body: the body's own status
// when it was given up on, and reports whether it was.
func (h *Handler) failBody(w http.ResponseWriter, r *http.Request, err error) bool {
	var be *bodyError
	if !errors.As(err, &be) {
		return false
	}
	// The connection's read side is spent: it is not reused.
	w.Header().Set("Connection", "close")
	h.failStatus(w, r, be.status, be.e)
	return true
}

// declaredTooLarge answers payload_too_large, without reading the body,
// when r declares a Content-Length over limit, and reports whether it
// did. msg is the message, naming the limit.
func (h *Handler) declaredTooLarge(w http.ResponseWriter, r *http.Request, limit int64, msg string) bool {
	if r.ContentLength <= limit {
		return false
	}
	w.Header().Set("Connection", "close")
	h.fail(w, r, &svc.Error{Code: svc.CodePayloadTooLarge, Msg: msg + " (declared Content-Length " + fmt.Sprint(r.ContentLength) + ")"})
	return true
}

// bodySet is the bodies being read, for Drain to cut.
type bodySet struct {
	mu sync.Mutex // guards m
	m  map[*bodyReader]struct{}
}

func (s *bodySet) add(b *bodyReader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[*bodyReader]struct{})
	}
	s.m[b] = struct{}{}
}

func (s *bodySet) remove(b *bodyReader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, b)
}

// cut makes every body being read fail at once with shutting_down.
func (s *bodySet) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for b := range s.m {
		b.cut.Store(true)
		b.rc.SetReadDeadline(time.Unix(1, 0))
	}
}

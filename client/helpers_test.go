package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/internal/apicheck"
	"github.com/svc-sandbox/svc/svctest"
)

// A fault is what the proxy does to one request instead of passing it on.
type fault struct {
	status     int    // answer this status...
	code       string // ...with an error body of this code (status's text when "")
	body       string // ...or with this body as it is
	retryAfter string // Retry-After header, if any
	hangup     bool   // close the connection without an answer
	drain      bool   // read the request body before answering
	pass       bool   // pass the request on after then
	then       func() // run before answering
}

// proxy stands between a client and a real server: it passes requests on
// and counts them, unless a fault is queued for the request's method and
// path.
type proxy struct {
	URL string

	rp *httputil.ReverseProxy
	// bodyBytes counts the request body bytes passed on.
	bodyBytes atomic.Int64

	mu     sync.Mutex // guards faults, hits, ids, aff
	faults map[string][]fault
	hits   map[string]int
	ids    map[string][]string
	aff    map[string][]string // the X-Svc-Affinity of each request
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{rp: httputil.NewSingleHostReverseProxy(u),
		faults: map[string][]fault{}, hits: map[string]int{}, ids: map[string][]string{}, aff: map[string][]string{}}
	p.rp.ErrorLog = log.New(io.Discard, "", 0)
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// queue adds faults for the next requests of key ("POST /execute").
func (p *proxy) queue(key string, fs ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[key] = append(p.faults[key], fs...)
}

// count returns how many requests of key came.
func (p *proxy) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[key]
}

// affinities returns the X-Svc-Affinity of each request of key.
func (p *proxy) affinities(key string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.aff[key]...)
}

// requestIDs returns the x-request-id of each request of key.
func (p *proxy) requestIDs(key string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids[key]...)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	p.mu.Lock()
	p.hits[key]++
	p.ids[key] = append(p.ids[key], r.Header.Get("X-Request-Id"))
	p.aff[key] = append(p.aff[key], r.Header.Get(client.AffinityHeader))
	var f *fault
	if q := p.faults[key]; len(q) > 0 {
		f, p.faults[key] = &q[0], q[1:]
	}
	p.mu.Unlock()

	if f == nil || f.pass {
		if f != nil && f.then != nil {
			f.then()
		}
		r.Body = countingBody{r.Body, &p.bodyBytes}
		p.rp.ServeHTTP(w, r)
		return
	}
	if f.drain {
		io.Copy(io.Discard, r.Body)
	}
	if f.then != nil {
		f.then()
	}
	if f.hangup {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set(apicheck.InjectedHeader, "1") // not the server's answer
	if f.retryAfter != "" {
		w.Header().Set("Retry-After", f.retryAfter)
	}
	w.Header().Set("X-Request-Id", "proxy-"+r.Header.Get("X-Request-Id"))
	body := f.body
	if body == "" {
		code := f.code
		if code == "" {
			code = "internal_error"
		}
		body = fmt.Sprintf(`{"error": "injected %d", "code": %q}`, f.status, code)
	}
	w.WriteHeader(f.status)
	io.WriteString(w, body)
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// waits records the waits of a client between attempts; sleep says
// whether they are slept through or skipped.
type waits struct {
	mu    sync.Mutex
	ds    []time.Duration
	sleep bool
}

func (w *waits) wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.ds = append(w.ds, d)
	w.mu.Unlock()
	if !w.sleep {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.ds...)
}

// env is a real server, a proxy in front of it and a client of the proxy
// whose waits are recorded, not slept.
type env struct {
	s     *svctest.Server
	p     *proxy
	c     *client.Client
	waits *waits
}

func newEnv(t *testing.T, cfg svctest.Config, retry client.RetryPolicy) *env {
	t.Helper()
	s := newServer(t, cfg)
	p := newProxy(t, s.URL)
	c, err := client.New(client.Config{URL: p.URL, Key: s.Key, Retry: retry, HTTPClient: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	client.SetSleep(c, w.wait)
	return &env{s: s, p: p, c: c, waits: w}
}

// newServer starts a server for cfg (svctest.NewServer) whose client
// checks every request and every response against openapi.yaml: each
// test of this package makes its servers with it.
func newServer(t *testing.T, cfg svctest.Config) *svctest.Server {
	t.Helper()
	s := svctest.NewServer(t, cfg)
	apicheck.Wrap(t, s.Client)
	return s
}

// checked returns an HTTP client that checks every request and every
// response against openapi.yaml, for a client of a proxy: the proxy marks
// the answers it makes up, which are not checked.
func checked(t *testing.T) *http.Client {
	return &http.Client{Transport: apicheck.Transport(t, http.DefaultTransport.(*http.Transport).Clone())}
}

// echo is a request whose one task prints hi.
func echo() *svc.Request {
	return &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "echo", Args: []string{"hi"}})}}
}

// stdout returns the stdout of the only task of the response of execute,
// failing the test on an error or another shape.
func stdout(t *testing.T, execute func() (*svc.Response, error)) string {
	t.Helper()
	resp, err := execute()
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if len(resp.Results) != 1 || len(resp.Results[0].Results) != 1 {
		t.Fatalf("response of %d steps", len(resp.Results))
	}
	r := resp.Results[0].Results[0]
	if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
		t.Fatalf("task: %s exit %d: %s", r.Outcome, r.ExitCode, r.Stderr)
	}
	return r.Stdout
}

// wantCode fails the test unless err is an *svc.Error of code.
func wantCode(t *testing.T, err error, code svc.Code) *client.ResponseError {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v (%T), want code %s", err, err, code)
	}
	var re *client.ResponseError
	errors.As(err, &re)
	return re
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// cat returns a request whose task prints the stored file id, placed as
// name.
func cat(name, id string) *svc.Request {
	return &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{
		Cmd: "cat", Args: []string{name}, Files: map[string]svc.File{name: {FileID: id}}})}}
}

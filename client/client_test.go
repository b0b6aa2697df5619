package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/internal/apicheck"
	"github.com/svc-sandbox/svc/svctest"
)

const helloC = "#include <stdio.h>\nint main(void) { puts(\"hello from the sandbox\"); return 0; }\n"

// TestEndpoints calls every method against a real server.
func TestEndpoints(t *testing.T) {
	s := newServer(t, svctest.Config{})
	c := s.NewClient(client.Config{})
	ctx := context.Background()

	if err := c.Health(ctx); err != nil {
		t.Fatalf("health: %v", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Limits != s.Sandbox.Limits() || info.Version != "devel" || info.Cache.Enabled ||
		(info.CgroupVersion != 1 && info.CgroupVersion != 2) || info.DefaultProfile != svc.ProfileCompileV2 ||
		!slices.Equal(info.AllowedProfiles, []svc.Profile{svc.ProfileCompileV2, svc.ProfileNativeV2}) || info.ImageID == "" {
		t.Errorf("info %+v\nlimits %+v", info, s.Sandbox.Limits())
	}

	up, err := c.UploadBytes(ctx, "hello.c", []byte(helloC))
	if err != nil {
		t.Fatal(err)
	}
	if up.FileID != sha([]byte(helloC)) || up.Size != int64(len(helloC)) || up.AlreadyExists {
		t.Errorf("upload %+v", up)
	}
	if again, err := c.UploadBytes(ctx, "hello.c", []byte(helloC)); err != nil || !again.AlreadyExists || again.FileID != up.FileID {
		t.Errorf("upload again: %+v %v", again, err)
	}
	other, err := c.Upload(ctx, "data.bin", strings.NewReader("some data"))
	if err != nil || other.FileID != sha([]byte("some data")) {
		t.Fatalf("upload: %+v %v", other, err)
	}

	files, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("list: %+v", files)
	}
	for _, f := range files {
		if f.ID == up.FileID && (f.Filename == nil || *f.Filename != "hello.c" || f.Size != up.Size || f.ContentType == nil || f.CreatedAt.IsZero()) {
			t.Errorf("list entry %+v", f)
		}
	}

	var buf bytes.Buffer
	if n, err := c.Download(ctx, up.FileID, &buf); err != nil || n != up.Size || buf.String() != helloC {
		t.Errorf("download: %d %v %q", n, err, buf.String())
	}

	req := &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-o", "hello", "hello.c"},
			Files: map[string]svc.File{"hello.c": {FileID: up.FileID}}}),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
	}}
	resp, err := c.Execute(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Results[1].Results[0].Stdout; got != "hello from the sandbox\n" || resp.Legacy || resp.Cache.Enabled {
		t.Errorf("execute: %q %+v", got, resp)
	}
	legacy := *req
	legacy.Legacy = true
	resp, err = c.Execute(ctx, &legacy)
	if err != nil || !resp.Legacy || len(resp.Results) != 2 || resp.Results[1].Results[0].Stdout != "hello from the sandbox\n" {
		t.Errorf("legacy: %v %+v", err, resp)
	}
	resp, err = c.Run(ctx, svc.Parallel(svc.Task{Cmd: "echo", Args: []string{"a"}}, svc.Task{Cmd: "echo", Args: []string{"b"}}))
	if err != nil || !resp.Results[0].Parallel || resp.Results[0].Results[1].Stdout != "b\n" {
		t.Errorf("run: %v %+v", err, resp)
	}

	m, err := c.Metrics(ctx)
	if err != nil || !strings.Contains(m, "svc_execution_slots_in_use ") {
		t.Errorf("metrics: %v\n%s", err, m)
	}

	_, err = c.DropCache(ctx)
	if re := wantCode(t, err, svc.CodeCacheDisabled); re == nil || re.StatusCode != 409 || re.RequestID == "" || re.Attempts != 1 {
		t.Errorf("drop cache: %+v", re)
	}
	if !errors.Is(err, svc.ErrCacheDisabled) {
		t.Errorf("errors.Is(%v, ErrCacheDisabled) is false", err)
	}

	if err := c.Delete(ctx, up.FileID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Download(ctx, up.FileID, io.Discard)
	wantCode(t, err, svc.CodeNotFound)
	wantCode(t, c.Delete(ctx, up.FileID), svc.CodeNotFound)
	_, err = c.Download(ctx, "../info", io.Discard)
	if re := wantCode(t, err, svc.CodeInvalidRequest); re != nil {
		t.Errorf("an invalid id was sent: %v", re)
	}

	// A base URL with the /api/v1 prefix (and a trailing slash).
	v1 := s.NewClient(client.Config{URL: s.URL + "/api/v1/"})
	if info, err := v1.Info(ctx); err != nil || info.Limits != s.Sandbox.Limits() {
		t.Errorf("info under /api/v1: %v", err)
	}
}

// TestQueueNoRetry: a server with a queue timeout holds a request that
// finds its one slot taken until the slot is free: the client sends it
// once, and Info reports the queue timeout.
func TestQueueNoRetry(t *testing.T) {
	s := newServer(t, svctest.Config{Sandbox: svc.Config{QueueTimeout: time.Minute, Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1}}})
	p := newProxy(t, s.URL)
	c, err := client.New(client.Config{URL: p.URL, Key: s.Key})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	client.SetSleep(c, w.wait)
	if info, err := c.Info(context.Background()); err != nil || info.QueueTimeout != time.Minute {
		t.Fatalf("info: %+v %v", info, err)
	}

	busy := holdSlot(t, s, "1")
	if got := stdout(t, func() (*svc.Response, error) { return c.Execute(context.Background(), echo()) }); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if n := p.count("POST /execute"); n != 1 || len(w.all()) != 0 {
		t.Errorf("%d requests sent, waits %v; want one request, no retry", n, w.all())
	}
}

func TestNewChecksURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://h/?q=1", "http://h/#x", ":"} {
		if _, err := client.New(client.Config{URL: u}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	c, err := client.New(client.Config{URL: "https://svc.example.com/api/v1/"})
	if err != nil || c.URL() != "https://svc.example.com/api/v1" {
		t.Errorf("%v %v", c, err)
	}
}

// TestErrorCodes: the code of an error body is the Code of the error, an
// unknown one internal_error; none of these is retried.
func TestErrorCodes(t *testing.T) {
	e := newEnv(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{MaxSteps: 2}}}, client.RetryPolicy{})
	ctx := context.Background()

	bad, err := client.New(client.Config{URL: e.p.URL, Key: "wrong-key", HTTPClient: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Execute(ctx, echo())
	if re := wantCode(t, err, svc.CodeUnauthorized); re.StatusCode != 401 || re.Code != "unauthorized" {
		t.Errorf("%+v", re)
	}
	_, err = e.c.Execute(apicheck.Malformed(ctx), &svc.Request{}) // steps: null
	wantCode(t, err, svc.CodeInvalidRequest)
	three := &svc.Request{Steps: []svc.Step{echo().Steps[0], echo().Steps[0], echo().Steps[0]}}
	_, err = e.c.Execute(ctx, three)
	wantCode(t, err, svc.CodeLimitsExceeded)
	if !strings.Contains(err.Error(), "HTTP 422 limits_exceeded") {
		t.Errorf("error text %q", err)
	}
	if n := e.p.count("POST /execute"); n != 3 {
		t.Errorf("%d requests for 3 calls", n)
	}

	e.p.queue("GET /info", fault{status: 418, code: "brand_new_code"})
	_, err = e.c.Info(ctx)
	if re := wantCode(t, err, svc.CodeInternalError); re.Code != "brand_new_code" || re.StatusCode != 418 || re.RequestID == "" {
		t.Errorf("%+v", re)
	}
	if n := e.p.count("GET /info"); n != 1 {
		t.Errorf("4xx retried: %d requests", n)
	}
	if len(e.waits.all()) != 0 {
		t.Errorf("waits %v", e.waits.all())
	}
}

// TestNoRetry4xx: a 4xx is returned at once, Retry-After or not.
func TestNoRetry4xx(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	for _, f := range []fault{
		{status: 400, code: "invalid_request"}, {status: 401, code: "unauthorized"},
		{status: 404, code: "not_found"}, {status: 404, code: "file_not_found"},
		{status: 409, code: "cache_disabled"}, {status: 413, code: "payload_too_large"},
		{status: 422, code: "limits_exceeded"}, {status: 422, code: "profile_not_allowed"},
		{status: 429, code: "rate_limited", retryAfter: "1"}, {status: 405, code: "invalid_request"},
	} {
		before := e.p.count("GET /file")
		e.p.queue("GET /file", f)
		_, err := e.c.List(context.Background())
		re := wantCode(t, err, svc.Code(f.code))
		if n := e.p.count("GET /file") - before; n != 1 || re.Attempts != 1 || re.StatusCode != f.status {
			t.Errorf("%d %s: %d requests, %+v", f.status, f.code, n, re)
		}
		if f.retryAfter != "" && re.RetryAfter != time.Second {
			t.Errorf("Retry-After: %v", re.RetryAfter)
		}
	}
	if len(e.waits.all()) != 0 {
		t.Errorf("waits %v", e.waits.all())
	}
}

// TestRateLimitedIsNotRetried against a real rate limit.
func TestRateLimitedIsNotRetried(t *testing.T) {
	e := newEnv(t, svctest.Config{API: httpapi.Config{RateLimitPerMinute: 1}}, client.RetryPolicy{})
	if _, err := e.c.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, err := e.c.List(context.Background())
	if re := wantCode(t, err, svc.CodeRateLimited); re.StatusCode != 429 || re.RetryAfter < time.Second || re.Attempts != 1 {
		t.Errorf("%+v", re)
	}
	if n := e.p.count("GET /file"); n != 2 {
		t.Errorf("%d requests", n)
	}
}

// TestRetry503RetryAfter: a server whose one slot is taken answers 503
// capacity_exhausted with Retry-After; the client waits that long and
// gets through once the slot is free.
func TestRetry503RetryAfter(t *testing.T) {
	s := newServer(t, svctest.Config{Sandbox: svc.Config{Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1}}})
	p := newProxy(t, s.URL)
	c, err := client.New(client.Config{URL: p.URL, Key: s.Key, Retry: client.RetryPolicy{MaxRetries: 10}, HTTPClient: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{sleep: true}
	client.SetSleep(c, w.wait)

	busy := holdSlot(t, s, "1.5")
	if got := stdout(t, func() (*svc.Response, error) { return c.Execute(context.Background(), echo()) }); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	ws := w.all()
	if len(ws) == 0 || p.count("POST /execute") != len(ws)+1 {
		t.Fatalf("waits %v for %d requests", ws, p.count("POST /execute"))
	}
	for _, d := range ws {
		if d != time.Second {
			t.Errorf("waited %v, want the Retry-After of 1s", d)
		}
	}
	if ids := p.requestIDs("POST /execute"); len(slices.Compact(ids)) != 1 || ids[0] == "" {
		t.Errorf("request ids %q: want one id over the attempts", ids)
	}
}

// TestRetry503Backoff: without Retry-After the waits grow exponentially,
// with jitter.
func TestRetry503Backoff(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{MinDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond, MaxRetries: 4})
	e.p.queue("POST /execute", fault{status: 503, code: "capacity_exhausted"}, fault{status: 503, code: "shutting_down"},
		fault{status: 503, code: "cancelled"}, fault{status: 503, body: "<html>busy</html>"})
	if got := stdout(t, func() (*svc.Response, error) { return e.c.Execute(context.Background(), echo()) }); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	ws := e.waits.all()
	bounds := [][2]time.Duration{{50, 100}, {100, 200}, {150, 300}, {150, 300}}
	if len(ws) != 4 || e.p.count("POST /execute") != 5 {
		t.Fatalf("waits %v, %d requests", ws, e.p.count("POST /execute"))
	}
	for i, d := range ws {
		if lo, hi := bounds[i][0]*time.Millisecond, bounds[i][1]*time.Millisecond; d < lo || d > hi {
			t.Errorf("wait %d: %v, want %v..%v", i+1, d, lo, hi)
		}
	}
}

// TestRetryGivesUp: MaxRetries bounds the retries; the last answer is
// the error.
func TestRetryGivesUp(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	for range 10 {
		e.p.queue("POST /execute", fault{status: 503, code: "capacity_exhausted", retryAfter: "2"})
	}
	_, err := e.c.Execute(context.Background(), echo())
	re := wantCode(t, err, svc.CodeCapacityExhausted)
	if re.Attempts != 4 || re.RetryAfter != 2*time.Second || e.p.count("POST /execute") != 4 {
		t.Errorf("%+v, %d requests", re, e.p.count("POST /execute"))
	}
	if ws := e.waits.all(); !slices.Equal(ws, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second}) {
		t.Errorf("waits %v", ws)
	}
	if !errors.Is(err, svc.ErrCapacityExhausted) || !strings.Contains(err.Error(), "4 attempts") {
		t.Errorf("error %v", err)
	}
}

// TestRetryAfterOverMaxDelay: a Retry-After longer than MaxDelay ends the
// retries at once.
func TestRetryAfterOverMaxDelay(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	e.p.queue("POST /execute", fault{status: 503, code: "shutting_down", retryAfter: "3600"})
	_, err := e.c.Execute(context.Background(), echo())
	if re := wantCode(t, err, svc.CodeShuttingDown); re.RetryAfter != time.Hour || re.Attempts != 1 {
		t.Errorf("%+v", re)
	}
	if len(e.waits.all()) != 0 {
		t.Errorf("waits %v", e.waits.all())
	}
}

// TestRetryConnectionFailure: a connection closed without an answer is
// retried like a 503, up to MaxRetries.
func TestRetryConnectionFailure(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{MaxRetries: 2})
	e.p.queue("POST /execute", fault{hangup: true}, fault{hangup: true})
	if got := stdout(t, func() (*svc.Response, error) { return e.c.Execute(context.Background(), echo()) }); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	if n := e.p.count("POST /execute"); n != 3 || len(e.waits.all()) != 2 {
		t.Errorf("%d requests, waits %v", n, e.waits.all())
	}

	// (POST: net/http itself sends a GET again when a kept-alive
	// connection fails before an answer, which would eat the faults.)
	e.p.queue("POST /execute", fault{hangup: true}, fault{hangup: true}, fault{hangup: true})
	_, err := e.c.Execute(context.Background(), echo())
	wantCode(t, err, svc.CodeInternalError)
	if n := e.p.count("POST /execute"); n != 3+3 || !strings.Contains(err.Error(), "connection failed (3 attempts)") {
		t.Errorf("%d requests: %v", n, err)
	}
	if errors.Unwrap(err) == nil {
		t.Error("no cause")
	}

	// A server that is not there at all: connection refused.
	c, err := client.New(client.Config{URL: "http://127.0.0.1:1", Retry: client.RetryPolicy{MaxRetries: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ws := &waits{}
	client.SetSleep(c, ws.wait)
	if err := c.Health(context.Background()); err == nil {
		t.Error("health of nothing")
	}
	_, err = c.List(context.Background())
	wantCode(t, err, svc.CodeInternalError)
	if len(ws.all()) != 1 {
		t.Errorf("waits %v: health is not retried, list once", ws.all())
	}
}

// TestRetryServerErrorOnce: 500, 502 and 504 are retried once.
func TestRetryServerErrorOnce(t *testing.T) {
	for _, f := range []fault{
		{status: 500, code: "internal_error"}, {status: 500, code: "sandbox_setup_failed"},
		{status: 502, body: "bad gateway"}, {status: 504, code: "deadline_exceeded"},
	} {
		t.Run(fmt.Sprintf("%d %s", f.status, f.code), func(t *testing.T) {
			e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
			e.p.queue("POST /execute", f)
			if got := stdout(t, func() (*svc.Response, error) { return e.c.Execute(context.Background(), echo()) }); got != "hi\n" {
				t.Errorf("stdout %q", got)
			}
			e.p.queue("POST /execute", f, f, f)
			_, err := e.c.Execute(context.Background(), echo())
			code := svc.Code(f.code)
			if code == "" {
				code = svc.CodeInternalError
			}
			re := wantCode(t, err, code)
			if n := e.p.count("POST /execute"); n != 4 || re.Attempts != 2 || re.StatusCode != f.status {
				t.Errorf("%d requests, %+v", n, re)
			}
			if len(e.waits.all()) != 2 {
				t.Errorf("waits %v", e.waits.all())
			}
		})
	}
}

// TestRetryBudgets: the 503 budget and the one retry of a 500 are
// separate.
func TestRetryBudgets(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{MaxRetries: 2})
	e.p.queue("POST /execute", fault{status: 503, code: "capacity_exhausted"}, fault{status: 500},
		fault{status: 503, code: "capacity_exhausted"})
	if got := stdout(t, func() (*svc.Response, error) { return e.c.Execute(context.Background(), echo()) }); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	e.p.queue("POST /execute", fault{status: 500}, fault{status: 503, code: "capacity_exhausted"}, fault{status: 504, code: "deadline_exceeded"})
	_, err := e.c.Execute(context.Background(), echo())
	wantCode(t, err, svc.CodeDeadlineExceeded)
	if n := e.p.count("POST /execute"); n != 4+3 {
		t.Errorf("%d requests", n)
	}
}

// TestCancelStopsRetries: cancelling the context ends a wait at once.
func TestCancelStopsRetries(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	e.waits.sleep = true
	e.p.queue("POST /execute", fault{status: 503, code: "capacity_exhausted", retryAfter: "5"})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := e.c.Execute(ctx, echo())
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("returned after %v", d)
	}
	wantCode(t, err, svc.CodeCancelled)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, svc.ErrCancelled) {
		t.Errorf("error %v", err)
	}
	if n := e.p.count("POST /execute"); n != 1 {
		t.Errorf("%d requests", n)
	}

	// Cancelled while the request runs: the server kills it.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start = time.Now()
	_, err = e.c.Run(ctx, svc.Single(svc.Task{Cmd: "sleep", Args: []string{"30"}}))
	wantCode(t, err, svc.CodeCancelled)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned after %v", d)
	}
}

// TestDeadlineBeforeRetryAfter: a wait that would outlast the context's
// deadline is not begun; the server's answer is the error.
func TestDeadlineBeforeRetryAfter(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	e.waits.sleep = true
	e.p.queue("POST /execute", fault{status: 503, code: "capacity_exhausted", retryAfter: "5"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := e.c.Execute(ctx, echo())
	wantCode(t, err, svc.CodeCapacityExhausted)
	if d := time.Since(start); d > time.Second || len(e.waits.all()) != 0 {
		t.Errorf("returned after %v, waits %v", d, e.waits.all())
	}
}

// TestRetryDisabled sends everything once.
func TestRetryDisabled(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{Disabled: true})
	e.p.queue("POST /execute", fault{status: 503, code: "capacity_exhausted", retryAfter: "1"})
	_, err := e.c.Execute(context.Background(), echo())
	wantCode(t, err, svc.CodeCapacityExhausted)
	e.p.queue("POST /execute", fault{status: 500})
	_, err = e.c.Execute(context.Background(), echo())
	wantCode(t, err, svc.CodeInternalError)

	up, err := e.c.UploadBytes(context.Background(), "x", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	e.s.Files.Delete(up.FileID)
	_, err = e.c.Execute(context.Background(), cat("x", up.FileID))
	wantCode(t, err, svc.CodeFileNotFound)
	if n, m := e.p.count("POST /execute"), e.p.count("POST /file"); n != 3 || m != 1 {
		t.Errorf("%d executes, %d uploads", n, m)
	}
}

// TestReupload: a file that disappears between upload and execute is
// uploaded again, once, when the client has its bytes.
func TestReupload(t *testing.T) {
	ctx := context.Background()
	data := []byte("the content of a test file\n")
	dir := t.TempDir()
	path := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	uploads := map[string]func(c *client.Client) (client.Uploaded, error){
		"UploadBytes": func(c *client.Client) (client.Uploaded, error) { return c.UploadBytes(ctx, "input.txt", data) },
		"UploadFile":  func(c *client.Client) (client.Uploaded, error) { return c.UploadFile(ctx, path) },
		"Remember": func(c *client.Client) (client.Uploaded, error) {
			up, err := c.Upload(ctx, "input.txt", bytes.NewReader(data))
			c.Remember(up.FileID, "input.txt", func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
			return up, err
		},
	}
	for name, upload := range uploads {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
			up, err := upload(e.c)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.s.Files.Delete(up.FileID); err != nil { // expired, say
				t.Fatal(err)
			}
			if got := stdout(t, func() (*svc.Response, error) { return e.c.Execute(ctx, cat("in.txt", up.FileID)) }); got != string(data) {
				t.Errorf("stdout %q", got)
			}
			if n, m := e.p.count("POST /execute"), e.p.count("POST /file"); n != 2 || m != 2 {
				t.Errorf("%d executes, %d uploads; want 2 and 2", n, m)
			}
		})
	}

	t.Run("affinity", func(t *testing.T) {
		// The uploads again and the request again carry one fresh
		// X-Svc-Affinity, for a load balancer to keep them together;
		// nothing else carries one.
		e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
		other := []byte("a second file\n")
		up, err := e.c.UploadBytes(ctx, "input.txt", data)
		if err != nil {
			t.Fatal(err)
		}
		up2, err := e.c.UploadBytes(ctx, "other.txt", other)
		if err != nil {
			t.Fatal(err)
		}
		req := cat("in.txt", up.FileID)
		req.Steps[0].Tasks[0].Files["other.txt"] = svc.File{FileID: up2.FileID}
		for round := range 2 {
			e.s.Files.Delete(up.FileID)
			e.s.Files.Delete(up2.FileID)
			if _, err := e.c.Execute(ctx, req); err != nil {
				t.Fatal(err)
			}
			ex, fi := e.p.affinities("POST /execute"), e.p.affinities("POST /file")
			ex, fi = ex[2*round:], fi[2+2*round:]
			if len(ex) != 2 || len(fi) != 2 {
				t.Fatalf("round %d: %d executes, %d uploads; want 2 and 2", round, len(ex), len(fi))
			}
			a := ex[1]
			if ex[0] != "" || a == "" || fi[0] != a || fi[1] != a {
				t.Errorf("round %d: X-Svc-Affinity of the executes %q, of the uploads again %q; want none on the first, one value on the rest", round, ex, fi)
			}
		}
		ex := e.p.affinities("POST /execute")
		if ex[1] == ex[3] {
			t.Errorf("two rounds of uploads again share the X-Svc-Affinity %q", ex[1])
		}
		if fi := e.p.affinities("POST /file"); fi[0] != "" || fi[1] != "" {
			t.Errorf("first uploads carry X-Svc-Affinity %q", fi[:2])
		}
	})

	t.Run("only once", func(t *testing.T) {
		e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
		up, err := e.c.UploadBytes(ctx, "input.txt", data)
		if err != nil {
			t.Fatal(err)
		}
		gone := func() { e.s.Files.Delete(up.FileID) }
		e.p.queue("POST /execute", fault{pass: true, then: gone}, fault{pass: true, then: gone})
		_, err = e.c.Execute(ctx, cat("in.txt", up.FileID))
		wantCode(t, err, svc.CodeFileNotFound)
		if n, m := e.p.count("POST /execute"), e.p.count("POST /file"); n != 2 || m != 2 {
			t.Errorf("%d executes, %d uploads; want 2 and 2", n, m)
		}
	})

	t.Run("bytes unknown", func(t *testing.T) {
		e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
		up, err := e.c.Upload(ctx, "input.txt", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		e.s.Files.Delete(up.FileID)
		_, err = e.c.Execute(ctx, cat("in.txt", up.FileID))
		wantCode(t, err, svc.CodeFileNotFound)
		if n, m := e.p.count("POST /execute"), e.p.count("POST /file"); n != 1 || m != 1 {
			t.Errorf("%d executes, %d uploads; want 1 and 1", n, m)
		}
	})

	t.Run("deleted by the client", func(t *testing.T) {
		e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
		up, err := e.c.UploadBytes(ctx, "input.txt", data)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.c.Delete(ctx, up.FileID); err != nil {
			t.Fatal(err)
		}
		_, err = e.c.Execute(ctx, cat("in.txt", up.FileID))
		wantCode(t, err, svc.CodeFileNotFound)
		if n := e.p.count("POST /execute"); n != 1 {
			t.Errorf("%d executes", n)
		}
	})

	t.Run("file changed", func(t *testing.T) {
		e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
		p := filepath.Join(t.TempDir(), "data")
		os.WriteFile(p, data, 0o644)
		up, err := e.c.UploadFile(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		e.s.Files.Delete(up.FileID)
		os.WriteFile(p, []byte("other content"), 0o644)
		_, err = e.c.Execute(ctx, cat("in.txt", up.FileID))
		wantCode(t, err, svc.CodeFileNotFound)
		if !strings.Contains(err.Error(), "content changed") {
			t.Errorf("error %v", err)
		}
		if n := e.p.count("POST /execute"); n != 1 {
			t.Errorf("%d executes", n)
		}
	})
}

// TestUploadStreams: Upload sends the reader's bytes as it yields them:
// the server has the first half before the reader gives the second.
func TestUploadStreams(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	half := bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
	pr, pw := io.Pipe()
	failed := make(chan string, 1)
	go func() {
		pw.Write(half)
		for deadline := time.Now().Add(10 * time.Second); e.p.bodyBytes.Load() < int64(len(half)); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				failed <- fmt.Sprintf("the server got %d bytes of the first %d", e.p.bodyBytes.Load(), len(half))
				pw.CloseWithError(errors.New("not streamed"))
				return
			}
		}
		pw.Write(half)
		pw.Close()
		failed <- ""
	}()
	up, err := e.c.Upload(context.Background(), "big.bin", pr)
	if msg := <-failed; msg != "" {
		t.Fatal(msg)
	}
	if err != nil {
		t.Fatal(err)
	}
	if up.Size != int64(2*len(half)) || up.FileID != sha(append(append([]byte(nil), half...), half...)) {
		t.Errorf("%+v", up)
	}
}

// TestUploadRetry: an upload is sent again when its reader can be
// rewound, and not when its bytes are gone.
func TestUploadRetry(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 1<<20)
	busy := fault{status: 503, code: "capacity_exhausted", drain: true}

	e.p.queue("POST /file", busy)
	if up, err := e.c.UploadBytes(ctx, "a", data); err != nil || up.Size != int64(len(data)) {
		t.Fatalf("%+v %v", up, err)
	}
	e.p.queue("POST /file", busy)
	r := io.MultiReader(bytes.NewReader(data)) // not a Seeker
	_, err := e.c.Upload(ctx, "b", r)
	if re := wantCode(t, err, svc.CodeCapacityExhausted); re.Attempts != 1 {
		t.Errorf("%+v", re)
	}
	if n := e.p.count("POST /file"); n != 3 {
		t.Errorf("%d uploads", n)
	}
	// A reader that was not read yet can be sent again.
	e.p.queue("POST /file", fault{status: 503, code: "capacity_exhausted"})
	if _, err := e.c.Upload(ctx, "c", io.MultiReader(strings.NewReader(""))); err != nil {
		// An empty reader yields no bytes: nothing was read.
		t.Errorf("empty upload: %v", err)
	}
}

// TestDownloadChecksContent: content that does not hash to its id is an
// error.
func TestDownloadChecksContent(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	up, err := e.c.UploadBytes(context.Background(), "a", []byte("right"))
	if err != nil {
		t.Fatal(err)
	}
	e.p.queue("GET /file/"+up.FileID, fault{status: 200, body: "wrong"})
	_, err = e.c.Download(context.Background(), up.FileID, io.Discard)
	wantCode(t, err, svc.CodeInternalError)
	if !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("error %v", err)
	}
	// Retried before the first byte.
	e.p.queue("GET /file/"+up.FileID, fault{hangup: true})
	var buf bytes.Buffer
	if _, err := e.c.Download(context.Background(), up.FileID, &buf); err != nil || buf.String() != "right" {
		t.Errorf("%v %q", err, buf.String())
	}
}

// TestHealth: a draining server is unhealthy, and Health does not retry.
func TestHealth(t *testing.T) {
	e := newEnv(t, svctest.Config{}, client.RetryPolicy{})
	if err := e.c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.s.Handler.Drain()
	err := e.c.Health(context.Background())
	if re := wantCode(t, err, svc.CodeShuttingDown); re.StatusCode != 503 {
		t.Errorf("%+v", re)
	}
	if n := e.p.count("GET /health"); n != 2 {
		t.Errorf("%d requests", n)
	}
}

// TestConcurrentUse shares one client between goroutines.
func TestConcurrentUse(t *testing.T) {
	s := newServer(t, svctest.Config{})
	c := s.NewClient(client.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := []byte(fmt.Sprintf("file %d\n", i))
			up, err := c.UploadBytes(context.Background(), "f", data)
			if err != nil {
				errs <- err
				return
			}
			resp, err := c.Execute(context.Background(), cat("f", up.FileID))
			if err != nil {
				errs <- err
				return
			}
			if got := resp.Results[0].Results[0].Stdout; got != string(data) {
				errs <- fmt.Errorf("got %q", got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"1": time.Second, " 30 ": 30 * time.Second, "0": 0, "-1": 0, "": 0, "soon": 0, "1.5": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := client.ParseRetryAfter(in, now); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

// holdSlot runs a task sleeping secs seconds on s, from a client of its
// own, and returns once it holds its slot; the channel gets its error.
func holdSlot(t *testing.T, s *svctest.Server, secs string) <-chan error {
	t.Helper()
	busy := make(chan error, 1)
	go func() {
		_, err := s.NewClient(client.Config{}).Run(context.Background(), svc.Single(svc.Task{Cmd: "sleep", Args: []string{secs}}))
		busy <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); s.Sandbox.SlotsInUse() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slot was never taken")
		}
	}
	return busy
}

// Package client is a Go client of the svc HTTP API (docs/http-api.md;
// docs/go-client.md is this package's guide). It speaks
// in the library's own types: an execute request is an [svc.Request], its
// answer an [svc.Response], a stored file an [svc.StoredFile], and every
// error the server answers is an [*svc.Error] whose Code is the code of
// the error body, so the same errors.Is checks work against the library
// and against a server:
//
//	c, err := client.New(client.Config{URL: "http://127.0.0.1:8080", Key: key})
//	if err != nil { ... }
//	up, err := c.UploadBytes(ctx, "hello.c", src)
//	resp, err := c.Execute(ctx, &svc.Request{Steps: []svc.Step{
//		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-o", "hello", "hello.c"},
//			Files: map[string]svc.File{"hello.c": {FileID: up.FileID}}}),
//		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
//	}})
//	if errors.Is(err, svc.ErrLimitsExceeded) { ... }
//
// # Errors
//
// An error body {"error": ..., "code": ...} becomes an *svc.Error with
// that Code (internal_error for a code this library does not know) and the
// server's message as Msg. Its cause (Err) is a [*ResponseError] with the
// HTTP status, the x-request-id to quote to the operator, any Retry-After
// and the number of attempts made. A connection that failed for good is an
// internal_error whose cause is the transport's error; a cancelled or
// expired context is cancelled or deadline_exceeded with the context's
// error as cause, so errors.Is(err, context.Canceled) holds too.
//
// # Retries
//
// Every method but [Client.Health] follows the client retry policy of the
// specification (section 7), configured by [RetryPolicy]:
//
//   - 503 answers (capacity_exhausted, shutting_down, cancelled) and
//     connection failures are retried up to MaxRetries times (3 by
//     default), after the Retry-After the server sent or, without one,
//     after an exponential backoff with jitter.
//   - 500 (internal_error, sandbox_setup_failed), 502 and 504
//     (deadline_exceeded) are retried at most once.
//   - file_not_found from [Client.Execute]: the stored files the request
//     refers to are uploaded again, from the bytes the client was given
//     ([Client.UploadBytes], [Client.UploadFile], [Client.Remember]), and
//     the request is sent once more. A file whose bytes the client does
//     not have cannot come back: the error is returned. The uploads and
//     the request sent again carry the same [AffinityHeader], so that a
//     load balancer can send them to the same instance.
//   - Any other 4xx, rate_limited included, is returned at once.
//
// A server with a queue timeout (QUEUE_TIMEOUT_MS, [Info].QueueTimeout)
// holds a request that finds no free execution slot until one comes free,
// in arrival order, so a burst is served without retries; it answers
// capacity_exhausted only when the request waited the whole queue timeout,
// and the retries above then send it to the back of the queue again.
// Against a server that answers at once (QUEUE_TIMEOUT_MS 0, the default)
// the retries are what spreads a burst out. Either way, a context that
// ends while the request waits on the server takes it out of the queue:
// it never runs.
//
// Cancelling the context stops at once, also in the middle of a wait; a
// wait that would outlast the context's deadline is not begun: the last
// error is returned instead. One call keeps the same x-request-id over its
// attempts, so the server's log lines of the attempts go together.
//
// An upload from a plain [io.Reader] streams the reader and can be sent
// again only if the reader is an [io.Seeker] or was not read yet.
//
// # Concurrency
//
// A Client is safe for concurrent use by multiple goroutines. Make one per
// server and keep it: it holds the connection pool and the bytes of the
// files it may have to upload again.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svc-sandbox/svc"
)

// AffinityHeader is the header by which a load balancer in front of
// several instances can keep related requests on one instance. Stored
// files are per instance: when [Client.Execute] meets file_not_found, the
// uploads again and the request sent again must reach the same instance,
// or the request may land where the files are not, again. They all
// carry this header with one fresh random value, unless the call's
// context has one of its own ([WithAffinity]): a request with collected
// outputs and the downloads of its outputs must reach one instance too,
// since the outputs are stored where the request ran. No other request
// carries it. A balancer that hashes on it sends them together and
// balances everything else as before: nginx's
//
//	hash $http_x_svc_affinity;
//
// does exactly that, since nginx balances requests whose hash key is
// empty round-robin (deploy/nginx-svc.conf). svc itself ignores the header.
const AffinityHeader = "X-Svc-Affinity"

// affinityKey is the context key of the AffinityHeader value of the
// requests made under that context.
type affinityKey struct{}

// withAffinity returns ctx under which every request carries the
// AffinityHeader value v.
func withAffinity(ctx context.Context, v string) context.Context {
	return context.WithValue(ctx, affinityKey{}, v)
}

// WithAffinity returns a context under which every call of a Client
// carries the [AffinityHeader] value v (any non-empty string; a fresh
// random one, such as a UUID, per group of calls). Send a request with
// collected outputs and the downloads of its outputs under one such
// context: behind a balancer that hashes on the header they reach the
// instance that ran the request and stored the outputs.
func WithAffinity(ctx context.Context, v string) context.Context { return withAffinity(ctx, v) }

// hasAffinity reports whether calls under ctx carry an AffinityHeader.
func hasAffinity(ctx context.Context) bool {
	v, _ := ctx.Value(affinityKey{}).(string)
	return v != ""
}

// Config configures a Client. URL is required; every other zero field
// takes the default documented on it.
type Config struct {
	// URL is the base URL of the server, such as "http://127.0.0.1:8080"
	// or "https://svc.example.com/api/v1"; the paths of API.md are
	// appended to it.
	URL string
	// Key is the API key, sent as "Authorization: Bearer <key>"; "" sends
	// none (a server started with NO_AUTH).
	Key string
	// HTTPClient sends the requests. nil is a client of its own with no
	// timeout: a request is bounded by its context and, on the server, by
	// OVERALL_TIMEOUT_MS. A Timeout set here bounds each attempt.
	HTTPClient *http.Client
	// Retry is the retry policy; the zero value is the specification's,
	// with the defaults documented on RetryPolicy.
	Retry RetryPolicy
	// UserAgent is sent as User-Agent; "" is "svc-client".
	UserAgent string
}

// RetryPolicy configures the retries of section 7 of the specification
// (see the package documentation). The zero value is the default policy.
type RetryPolicy struct {
	// Disabled sends every request once: no retries of any kind and no
	// uploads again on file_not_found.
	Disabled bool
	// MaxRetries is how many times a request that met a 503 or a
	// connection failure is sent again. 0 is 3; a negative value sends
	// such a request once (500s and file_not_found are still retried
	// once; Disabled stops those too).
	MaxRetries int
	// MinDelay is the backoff before the first retry when the server sent
	// no Retry-After; it doubles with each retry, and each wait is drawn
	// at random from its upper half (jitter). 0 is 200 ms.
	MinDelay time.Duration
	// MaxDelay caps the backoff. A Retry-After longer than MaxDelay ends
	// the retries: the error is returned, with the Retry-After in its
	// ResponseError. 0 is 10 s.
	MaxDelay time.Duration
}

// withDefaults fills the zero fields of p.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 3
	}
	if p.MinDelay == 0 {
		p.MinDelay = 200 * time.Millisecond
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = 10 * time.Second
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	return p
}

// Client is a client of one svc server. Create it with New; it is safe for
// concurrent use.
type Client struct {
	base  string // URL without a trailing slash
	key   string
	agent string
	hc    *http.Client
	retry RetryPolicy

	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	mu sync.Mutex // guards sources
	// sources are the files the client can upload again, by file id.
	sources map[string]source
}

// New returns a client for cfg. It checks the URL and makes no request.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("client: URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: URL %q: want http://host[:port][/prefix] or https://...", cfg.URL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: URL %q: a query or fragment has no place in the base URL", cfg.URL)
	}
	c := &Client{
		base:    strings.TrimRight(u.String(), "/"),
		key:     cfg.Key,
		agent:   cfg.UserAgent,
		hc:      cfg.HTTPClient,
		retry:   cfg.Retry.withDefaults(),
		sleep:   sleepCtx,
		sources: make(map[string]source),
	}
	if c.agent == "" {
		c.agent = "svc-client"
	}
	if c.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 32
		c.hc = &http.Client{Transport: t}
	}
	return c, nil
}

// URL returns the base URL the client sends to.
func (c *Client) URL() string { return c.base }

// ResponseError is the cause (the Err of the *svc.Error) of an error the
// server answered: what the HTTP exchange says beyond the Code.
type ResponseError struct {
	// StatusCode is the HTTP status of the last attempt.
	StatusCode int
	// Code is the code of the error body as sent, also when this library
	// does not know it (the *svc.Error then has internal_error); "" when
	// the body was not an error body (a proxy's page, say).
	Code string
	// RequestID is the x-request-id of the response: quote it to the
	// operator, whose logs carry it.
	RequestID string
	// RetryAfter is the Retry-After of the response; 0 when none.
	RetryAfter time.Duration
	// Attempts is how many times the request was sent.
	Attempts int
}

// Error describes the exchange, e.g. "HTTP 503 capacity_exhausted,
// request id 9f2c..., retry after 1s, 4 attempts".
func (e *ResponseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	switch {
	case e.Code == "":
	case knownCode(e.Code):
		fmt.Fprintf(&b, " %s", e.Code)
	default:
		fmt.Fprintf(&b, " (unknown code %q)", e.Code)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, ", request id %s", e.RequestID)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry after %v", e.RetryAfter)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, ", %d attempts", e.Attempts)
	}
	return b.String()
}

// knownCode reports whether c is a code of the library.
func knownCode(c string) bool {
	for _, k := range svc.Codes() {
		if string(k) == c {
			return true
		}
	}
	return false
}

// call is one logical API call: the same request sent once per attempt.
type call struct {
	method string
	path   string // below the base URL, with a leading slash
	body   body   // nil: none
	// noRetry sends the request once whatever the answer (Health).
	noRetry bool
	// handle reads a 2xx response. An error it wraps in retryable is a
	// connection failure (the body broke off) and may be retried.
	handle func(*http.Response) error
}

// body is the body of a call, opened anew for each attempt.
type body interface {
	// open returns the reader and content type of an attempt.
	open() (io.Reader, string, error)
	// again reports whether the body can be sent once more.
	again() bool
}

// bytesBody is a body held in memory.
type bytesBody struct {
	b           []byte
	contentType string
}

func (b bytesBody) open() (io.Reader, string, error) {
	return bytes.NewReader(b.b), b.contentType, nil
}
func (b bytesBody) again() bool { return true }

// retryable marks an error of reading a response as a connection failure.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// do sends c under the retry policy until handle accepts a response or
// the policy gives up, and returns handle's or the last error.
func (cl *Client) do(ctx context.Context, c call) error {
	id := uuid.NewString()
	var transient, serverErrors int
	var last error
	for attempt := 1; ; attempt++ {
		err := cl.attempt(ctx, c, id)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctxError(ctx, c)
		}
		if errors.Is(err, errNoReplay) && last != nil {
			// The body could not be sent again: the last answer stands.
			return finalError(last, c, attempt-1)
		}
		last = err
		var re *ResponseError
		if errors.As(err, &re) {
			re.Attempts = attempt
		}
		if c.noRetry || cl.retry.Disabled || (c.body != nil && !c.body.again()) {
			return finalError(err, c, attempt)
		}
		var wait time.Duration
		switch status := statusOf(err); {
		case status == http.StatusServiceUnavailable || status == 0: // 0: connection failure
			if transient >= cl.retry.MaxRetries {
				return finalError(err, c, attempt)
			}
			transient++
			wait = cl.backoff(transient)
			if re != nil && re.RetryAfter > 0 {
				if re.RetryAfter > cl.retry.MaxDelay {
					return finalError(err, c, attempt)
				}
				wait = re.RetryAfter
			}
		case status == http.StatusInternalServerError || status == http.StatusBadGateway ||
			status == http.StatusGatewayTimeout:
			if serverErrors >= 1 {
				return finalError(err, c, attempt)
			}
			serverErrors++
			wait = cl.backoff(1)
		default:
			return finalError(err, c, attempt)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return finalError(err, c, attempt)
		}
		if cl.sleep(ctx, wait) != nil {
			return ctxError(ctx, c)
		}
	}
}

// statusOf returns the HTTP status of an attempt's error, or 0 for a
// connection failure.
func statusOf(err error) int {
	var re *ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	var r retryable
	if errors.As(err, &r) {
		return 0
	}
	return -1 // neither: a local error, never retried
}

// backoff is the wait before the n-th retry (from 1): MinDelay doubled
// n-1 times, capped at MaxDelay, drawn from its upper half.
func (cl *Client) backoff(n int) time.Duration {
	d := cl.retry.MinDelay
	for i := 1; i < n && d < cl.retry.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, cl.retry.MaxDelay)
	return d/2 + jitter(d/2+1)
}

// finalError is the error a call returns after its last attempt: always
// an *svc.Error.
func finalError(err error, c call, attempts int) error {
	var r retryable
	var e *svc.Error
	switch {
	case errors.As(err, &r):
		msg := fmt.Sprintf("client: %s %s: connection failed", c.method, c.path)
		if attempts > 1 {
			msg += fmt.Sprintf(" (%d attempts)", attempts)
		}
		return &svc.Error{Code: svc.CodeInternalError, Msg: msg, Err: r.err}
	case errors.As(err, &e):
		return err
	}
	return &svc.Error{Code: svc.CodeInternalError, Msg: fmt.Sprintf("client: %s %s: %v", c.method, c.path, err), Err: err}
}

// ctxError is the error of a call whose context ended.
func ctxError(ctx context.Context, c call) error {
	return &svc.Error{Code: svc.CodeOf(ctx.Err()),
		Msg: fmt.Sprintf("client: %s %s: %v", c.method, c.path, ctx.Err()), Err: ctx.Err()}
}

// jitter returns a random duration in [0, n).
func jitter(n time.Duration) time.Duration { return rand.N(n) }

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempt sends c once. A non-2xx answer is an *svc.Error caused by a
// *ResponseError; a transport failure is retryable.
func (cl *Client) attempt(ctx context.Context, c call, id string) error {
	var rd io.Reader
	contentType := ""
	if c.body != nil {
		var err error
		if rd, contentType, err = c.body.open(); err != nil {
			return err
		}
		if rc, ok := rd.(io.Closer); ok {
			// A streamed body's writer stops when the answer came early.
			defer rc.Close()
		}
	}
	req, err := http.NewRequestWithContext(ctx, c.method, cl.base+c.path, rd)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if cl.key != "" {
		req.Header.Set("Authorization", "Bearer "+cl.key)
	}
	req.Header.Set("User-Agent", cl.agent)
	req.Header.Set("X-Request-Id", id)
	if v, _ := ctx.Value(affinityKey{}).(string); v != "" {
		req.Header.Set(AffinityHeader, v)
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		return retryable{err}
	}
	defer func() {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keep the connection
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return responseError(resp)
	}
	return c.handle(resp)
}

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// responseError turns a non-2xx response into an *svc.Error.
func responseError(resp *http.Response) error {
	re := &ResponseError{
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && resp.StatusCode != http.StatusServiceUnavailable {
		// The answer broke off: a connection failure, unless the status
		// alone decides (503 is retried either way).
		return retryable{fmt.Errorf("read error body (HTTP %d): %w", resp.StatusCode, err)}
	}
	var eb struct {
		Error *string `json:"error"`
		Code  *string `json:"code"`
	}
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Code != nil {
		re.Code = *eb.Code
		code := svc.Code(*eb.Code)
		if !knownCode(*eb.Code) {
			code = svc.CodeInternalError
		}
		return &svc.Error{Code: code, Msg: *eb.Error, Err: re}
	}
	// Not an svc error body: a proxy or load balancer answered.
	msg := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if s := strings.TrimSpace(string(b)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "..."
		}
		msg += ": " + strconv.Quote(s)
	}
	return &svc.Error{Code: svc.CodeInternalError, Msg: msg, Err: re}
}

// parseRetryAfter parses a Retry-After value: whole seconds or an HTTP
// date. It returns 0 for none or a value it cannot read.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > 1<<30 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// getJSON is a call that decodes a JSON answer into v.
func (cl *Client) getJSON(ctx context.Context, method, path string, b body, v any) error {
	return cl.do(ctx, call{method: method, path: path, body: b, handle: func(resp *http.Response) error {
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return retryable{err}
		}
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(data, v); err != nil {
			return &svc.Error{Code: svc.CodeInternalError,
				Msg: fmt.Sprintf("client: %s %s: the answer is not the JSON expected", method, path), Err: err}
		}
		return nil
	}})
}

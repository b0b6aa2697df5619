// Package apicheck checks HTTP traffic against the OpenAPI document of the
// API (openapi.yaml, [svc.OpenAPI]), so that the document cannot drift
// from the server: the tests of httpapi, client and the generated client
// send their requests through [Transport], which fails the test on every
// request and every response the document does not allow.
//
//	s := svctest.NewServer(t, cfg)
//	apicheck.Wrap(t, s.Client)
//
// A test that sends a malformed request on purpose (to see its 400) marks
// it with [Malformed]: the request goes out as it is and only its response
// is checked. A test's fault injector marks the responses it makes up with
// [InjectedHeader]; they are not the server's and are not checked.
//
// The validator is kin-openapi's openapi3filter (OpenAPI 3.1, JSON Schema
// 2020-12), with every status the server answers required to be in the
// document. On top of it: a response whose documented form has no body
// has an empty one, HEAD responses have a documented status and their
// required headers, and an answer to a path or method that the document
// does not have is a 404 or 405 error body (405 with an Allow header that
// lists the document's methods).
package apicheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/svc-sandbox/svc"
)

// InjectedHeader marks a response that a test made up instead of the
// server (a fault injected by a proxy): it is not checked.
const InjectedHeader = "X-Apicheck-Injected"

// checker is the loaded document and its router; both are read-only and
// safe for concurrent use.
type checker struct {
	doc    *openapi3.T
	router routers.Router
}

var load = sync.OnceValues(func() (*checker, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(svc.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: router: %w", err)
	}
	return &checker{doc: doc, router: router}, nil
})

// Document returns the loaded and validated document. It is shared: do
// not modify it.
func Document() (*openapi3.T, error) {
	c, err := load()
	if err != nil {
		return nil, err
	}
	return c.doc, nil
}

type malformedKey struct{}

// Malformed returns ctx marked so that a request sent with it is not
// checked, only its response: for tests that send a request the document
// does not allow on purpose.
func Malformed(ctx context.Context) context.Context {
	return context.WithValue(ctx, malformedKey{}, true)
}

// Wrap makes c check its traffic: c.Transport becomes Transport(t,
// c.Transport).
func Wrap(t testing.TB, c *http.Client) {
	c.Transport = Transport(t, c.Transport)
}

// Transport returns a RoundTripper that sends through base
// (http.DefaultTransport when nil) and calls t.Errorf for each request and
// each response that the document does not allow, naming the method, the
// path and the mismatch. It reads each response body whole before
// returning the response (with a body that reads the same bytes); a
// request body is read from a copy (Request.GetBody) or, when it is a
// stream, as it is sent.
func Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	c, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base, c: c}
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
	c    *checker
}

// RoundTrip sends req, then checks it and its response.
func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	out, sent, err := captureBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := tr.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	data, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = &replayBody{r: bytes.NewReader(data), err: rerr}
	if rerr != nil {
		return resp, nil // cut short: there is nothing whole to check
	}
	body, complete := sent()
	for _, problem := range tr.c.check(req, body, complete, resp, data) {
		tr.t.Errorf("openapi.yaml: %s %s: %s", req.Method, req.URL.Path, problem)
	}
	return resp, nil
}

// captureBody returns the request to send and a function that returns
// the body sent once the response is in, and whether it is whole.
func captureBody(req *http.Request) (*http.Request, func() ([]byte, bool), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, func() ([]byte, bool) { return nil, true }, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, nil, err
		}
		return req, func() ([]byte, bool) { return b, true }, nil
	}
	tee := &teeBody{rc: req.Body, closed: make(chan struct{})}
	out := req.Clone(req.Context())
	out.Body = tee
	return out, tee.wait, nil
}

// teeBody keeps what is read of a streamed request body. The transport
// closes it once it has sent the body or given up.
type teeBody struct {
	rc     io.ReadCloser
	once   sync.Once
	closed chan struct{}

	mu  sync.Mutex // guards buf and eof
	buf bytes.Buffer
	eof bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p[:n])
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *teeBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() { close(b.closed) })
	return err
}

// sendWait bounds how long a check waits for a streamed request body to
// be sent after the response came.
const sendWait = 10 * time.Second

// wait returns the body sent, once the transport is done with it, and
// whether it was read to its end.
func (b *teeBody) wait() ([]byte, bool) {
	select {
	case <-b.closed:
	case <-time.After(sendWait):
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes()), b.eof
}

// replayBody reads the bytes of a response body read ahead, then the
// error that ended the reading, if any.
type replayBody struct {
	r   *bytes.Reader
	err error
}

func (b *replayBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.err != nil {
		err = b.err
	}
	return n, err
}

func (b *replayBody) Close() error { return nil }

// check returns what the document does not allow in a request (body: the
// body sent; complete: whether it is whole) and its response (data: the
// response body).
func (c *checker) check(req *http.Request, body []byte, complete bool, resp *http.Response, data []byte) []string {
	var problems []string
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	vreq.GetBody = nil
	route, params, ferr := c.router.FindRoute(vreq)

	var in *openapi3filter.RequestValidationInput
	if ferr == nil {
		in = &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: options(!complete)}
	}
	if req.Context().Value(malformedKey{}) == nil {
		const hint = " (a test that means to send it marks it with apicheck.Malformed)"
		switch {
		case ferr != nil:
			problems = append(problems, "the request is not in the document: "+ferr.Error()+hint)
		default:
			if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
				problems = append(problems, "the request does not match the document"+hint+": "+err.Error())
			}
		}
	}
	if resp.Header.Get(InjectedHeader) != "" {
		return problems
	}
	if ferr != nil {
		return append(problems, c.checkUnrouted(vreq, ferr, resp, data)...)
	}

	prefix := fmt.Sprintf("response %d does not match the document: ", resp.StatusCode)
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                options(false),
	}
	rin.SetBodyBytes(data)
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err != nil {
		return append(problems, prefix+err.Error())
	}
	// What ValidateResponse leaves out: HEAD responses, and the body of a
	// response documented without one.
	ref := route.Operation.Responses.Status(resp.StatusCode)
	if ref == nil || ref.Value == nil {
		return append(problems, prefix+"the status is not documented")
	}
	if len(ref.Value.Content) == 0 && len(data) > 0 {
		problems = append(problems, prefix+fmt.Sprintf("documented without a body, has %d bytes", len(data)))
	}
	if req.Method == http.MethodHead {
		for _, name := range sortedKeys(ref.Value.Headers) {
			if h := ref.Value.Headers[name]; h.Value != nil && h.Value.Required && resp.Header.Get(name) == "" {
				problems = append(problems, prefix+"no header "+name)
			}
		}
	}
	return problems
}

// checkUnrouted checks the answer to a request for a path or a method
// that the document does not have: 404 not_found or 405 invalid_request,
// an error body, x-request-id, and for 405 an Allow header listing the
// path's methods in the document.
func (c *checker) checkUnrouted(req *http.Request, ferr error, resp *http.Response, data []byte) []string {
	var problems []string
	status, code := http.StatusNotFound, "not_found"
	if errors.Is(ferr, routers.ErrMethodNotAllowed) {
		status, code = http.StatusMethodNotAllowed, "invalid_request"
		if allow, want := resp.Header.Get("Allow"), strings.Join(c.methods(req), ", "); allow != want {
			problems = append(problems, fmt.Sprintf("405 with Allow %q; the document has %q", allow, want))
		}
	}
	if resp.StatusCode != status {
		problems = append(problems, fmt.Sprintf("status %d for a request the document does not have (%v); want %d", resp.StatusCode, ferr, status))
	}
	if resp.Header.Get("X-Request-Id") == "" {
		problems = append(problems, "no X-Request-Id")
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		problems = append(problems, fmt.Sprintf("error body of Content-Type %q", resp.Header.Get("Content-Type")))
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return append(problems, fmt.Sprintf("error body is not JSON: %v: %q", err, data))
	}
	schema := c.doc.Components.Schemas["Error"].Value
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.SetSchemaErrorMessageCustomizer(schemaError)); err != nil {
		problems = append(problems, "not an error body: "+err.Error())
	} else if got := v.(map[string]any)["code"]; got != code {
		problems = append(problems, fmt.Sprintf("code %v, want %s", got, code))
	}
	return problems
}

// methods returns the methods that the document has for the path of req,
// sorted.
func (c *checker) methods(req *http.Request) []string {
	var ms []string
	for _, m := range []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"} {
		r := req.Clone(context.Background())
		r.Method = m
		if _, _, err := c.router.FindRoute(r); err == nil {
			ms = append(ms, m)
		}
	}
	return ms
}

// options are the validation options: every status the server answers
// must be documented, and an API key is a bearer token of some text
// (whether it is right is the server's business).
func options(excludeRequestBody bool) *openapi3filter.Options {
	o := &openapi3filter.Options{
		IncludeResponseStatus: true,
		ExcludeRequestBody:    excludeRequestBody,
		AuthenticationFunc:    bearer,
	}
	o.WithCustomSchemaErrorFunc(schemaError)
	return o
}

// bearer accepts an Authorization header "Bearer <key>", as the server
// reads it.
func bearer(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	scheme, key, _ := strings.Cut(strings.TrimSpace(in.RequestValidationInput.Request.Header.Get("Authorization")), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
		return errors.New(`no "Authorization: Bearer <key>" header`)
	}
	return nil
}

// schemaError shortens a schema error to where and what, with its cause,
// leaving out the dumps of the schema and the value.
func schemaError(e *openapi3.SchemaError) string {
	msg := "at /" + strings.Join(e.JSONPointer(), "/") + ": "
	if tree, ok := strings.CutPrefix(e.Reason, "jsonschema validation failed with "); ok {
		// JSON Schema 2020-12's report: the whole tree of failures, after
		// the name of the schema; its causes repeat it.
		_, tree, _ = strings.Cut(tree, "\n")
		return msg + "\n" + tree
	}
	msg += e.Reason
	if e.Origin != nil {
		msg += " (" + e.Origin.Error() + ")"
	}
	return msg
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

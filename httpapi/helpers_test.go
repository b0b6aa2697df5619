package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/internal/apicheck"
	"github.com/svc-sandbox/svc/svctest"
)

// newServer starts a server for cfg (svctest.NewServer) whose client
// checks every request and every response against openapi.yaml: each
// test of this package makes its servers with it.
func newServer(t testing.TB, cfg svctest.Config) *svctest.Server {
	t.Helper()
	s := svctest.NewServer(t, cfg)
	apicheck.Wrap(t, s.Client)
	return s
}

// malformed marks req as breaking openapi.yaml on purpose: it is sent as
// it is, and only its response is checked.
func malformed(req *http.Request) *http.Request {
	return req.WithContext(apicheck.Malformed(req.Context()))
}

// doMalformed sends a request as s.Do does, marked as malformed.
func doMalformed(t testing.TB, s *svctest.Server, method, path, body string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := malformed(s.Request(method, path, rd))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// body reads and closes the body of resp.
func body(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

// decode reads the JSON body of resp into v, checking the status.
func decode(t testing.TB, resp *http.Response, status int, v any) {
	t.Helper()
	b := body(t, resp)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, b)
	}
	checkRequestID(t, resp)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s %s: %v: %s", resp.Request.Method, resp.Request.URL.Path, err, b)
	}
}

// checkRequestID checks that resp has an x-request-id: the one sent, or
// a UUID.
func checkRequestID(t testing.TB, resp *http.Response) {
	t.Helper()
	got := resp.Header.Get("X-Request-Id")
	sent := resp.Request.Header.Get("X-Request-Id")
	if got == "" || (got != sent && !uuidRE.MatchString(got)) {
		t.Errorf("x-request-id %q (sent %q)", got, sent)
	}
}

type errorBody struct {
	Error string   `json:"error"`
	Code  svc.Code `json:"code"`
}

// expectError checks an error response: status, code, the body's two
// fields and nothing else, x-request-id, and the headers its status needs.
func expectError(t testing.TB, resp *http.Response, status int, code svc.Code) errorBody {
	t.Helper()
	b := body(t, resp)
	var e errorBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("%s %s: %d, not an error body (%v): %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, err, b)
	}
	if resp.StatusCode != status || e.Code != code {
		t.Fatalf("%s %s: %d %s %q; want %d %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, e.Code, e.Error, status, code)
	}
	checkRequestID(t, resp)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	switch status {
	case 401:
		if h := resp.Header.Get("WWW-Authenticate"); h != "Bearer" {
			t.Errorf("401 with WWW-Authenticate %q", h)
		}
	case 429, 503:
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || n < 1 {
			t.Errorf("%d with Retry-After %q", status, resp.Header.Get("Retry-After"))
		}
	}
	return e
}

// execute posts an execute body.
func execute(s *svctest.Server, body string) *http.Response {
	return s.Do("POST", "/execute", body)
}

// upload posts content as the multipart part "file".
func upload(t testing.TB, s *svctest.Server, path, name, contentType string, content []byte) *http.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="file"; filename="` + name + `"`}
	if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	pw.Write(content)
	mw.Close()
	req := s.Request("POST", path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

type uploaded struct {
	FileID        string `json:"file_id"`
	Size          int64  `json:"size"`
	AlreadyExists bool   `json:"already_exists"`
}

// waitFor polls cond until it holds or d passes. The states waited for
// (slots taken, slots freed) are the sandbox's, seen from outside.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// metric returns the value of a metric line of /metrics, or -1.
func metric(t testing.TB, s *svctest.Server, name string) float64 {
	t.Helper()
	b := string(body(t, s.Do("GET", "/metrics", "")))
	for _, line := range strings.Split(b, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", name, line)
			}
			return f
		}
	}
	return -1
}

const hello = `{"steps": [
  {"cmd": "gcc", "args": ["-O2", "-o", "hello", "hello.c"],
   "files": {"hello.c": "#include <stdio.h>\nint main(void) { puts(\"hello from the sandbox\"); return 0; }\n"}},
  {"cmd": "./hello", "sandbox_profile": "native_v2"}
]}`

// executeResponse is the envelope response, enough of it for tests.
type executeResponse struct {
	Results []json.RawMessage `json:"results"`
	Cache   struct {
		Enabled       bool `json:"enabled"`
		ReplayedSteps int  `json:"replayed_steps"`
		StoredSteps   int  `json:"stored_steps"`
	} `json:"cache"`
}

type result struct {
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	Error    string `json:"error"`
}

// single decodes the result of a single-task step.
func single(t testing.TB, raw json.RawMessage) result {
	t.Helper()
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return r
}

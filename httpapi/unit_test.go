package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// TestEveryCodeHasAStatus walks every code the library defines against
// the status table, and the table against spec section 7 and API.md.
func TestEveryCodeHasAStatus(t *testing.T) {
	spec := map[svc.Code]int{
		"invalid_request": 400, "unauthorized": 401, "not_found": 404, "file_not_found": 404,
		"cache_disabled": 409, "payload_too_large": 413, "limits_exceeded": 422,
		"profile_not_allowed": 422, "rate_limited": 429, "sandbox_setup_failed": 500,
		"internal_error": 500, "capacity_exhausted": 503, "shutting_down": 503,
		"cancelled": 503, "deadline_exceeded": 504,
	}
	for _, c := range svc.Codes() {
		got, ok := Status(c)
		if !ok {
			t.Errorf("code %s has no HTTP status", c)
			continue
		}
		if want, ok := spec[c]; !ok {
			t.Errorf("code %s is not in spec section 7", c)
		} else if got != want {
			t.Errorf("code %s: status %d, spec says %d", c, got, want)
		}
	}
	if len(statuses) != len(svc.Codes()) {
		t.Errorf("the table has %d codes, the library %d", len(statuses), len(svc.Codes()))
	}
	if _, ok := Status("no_such_code"); ok {
		t.Error("an unknown code has a status")
	}
}

func TestRequestID(t *testing.T) {
	for in, keep := range map[string]bool{
		"abc-123":                  true,
		"x":                        true,
		strings.Repeat("a", 128):   true,
		strings.Repeat("a", 129):   false,
		"":                         false,
		"has space":                false,
		"tab\there":                false,
		"new\nline":                false,
		"caf\u00e9":                false,
		"{\"json\":[1,2]}~!@#$%^&": true,
	} {
		got := requestID(in)
		if keep && got != in {
			t.Errorf("requestID(%q) = %q; want it kept", in, got)
		}
		if !keep && (got == in || len(got) != 36) {
			t.Errorf("requestID(%q) = %q; want a new UUID", in, got)
		}
	}
	if a, b := requestID(""), requestID(""); a == b {
		t.Errorf("two new ids are equal: %s", a)
	}
}

func TestAuthenticator(t *testing.T) {
	a, err := newAuthenticator([]string{"old-key", " new-key ", ""}, false)
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]int{"Bearer old-key": 0, "Bearer new-key": 1, "bearer  new-key ": 1} {
		if got, err := a.check(header); err != nil || got != want {
			t.Errorf("check(%q) = %d, %v; want key %d", header, got, err, want)
		}
	}
	for header, word := range map[string]string{
		"": "missing", "Bearer": "missing", "Bearer ": "missing", "Basic b2xkLWtleQ==": "missing",
		"old-key": "missing", "Bearer other": "invalid", "Bearer old-key2": "invalid", "Bearer old-ke": "invalid",
	} {
		_, err := a.check(header)
		if svc.CodeOf(err) != svc.CodeUnauthorized || !strings.Contains(err.Error(), word) {
			t.Errorf("check(%q) = %v; want unauthorized saying %q", header, err, word)
		}
	}
	if _, err := newAuthenticator([]string{" ", ""}, false); err == nil {
		t.Error("no key and auth on: accepted")
	}
	open, err := newAuthenticator(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := open.check(""); err != nil || k != anonymous {
		t.Errorf("NoAuth: %d, %v", k, err)
	}
}

// TestRateLimiter drives the buckets with an injected clock.
func TestRateLimiter(t *testing.T) {
	l := newRateLimiter(3) // 3 a minute: one token every 20 s
	now := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		if _, ok := l.allow(0, now); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	wait, ok := l.allow(0, now)
	if ok || wait != 20*time.Second {
		t.Fatalf("4th request: %v %v; want refused for 20s", ok, wait)
	}
	if got := retryAfter(wait); got != "20" {
		t.Errorf("Retry-After %s", got)
	}
	if _, ok := l.allow(1, now); !ok {
		t.Error("another key is limited by the first one's use")
	}
	if wait, ok := l.allow(0, now.Add(19*time.Second)); ok || retryAfter(wait) != "1" {
		t.Errorf("after 19 s: %v %v; want refused for 1 s", ok, wait)
	}
	if _, ok := l.allow(0, now.Add(20*time.Second)); !ok {
		t.Error("after 20 s: refused")
	}
}

// TestRateLimiterMemory checks that the buckets of many keys do not pile
// up: full buckets are swept.
func TestRateLimiterMemory(t *testing.T) {
	l := newRateLimiter(60)
	now := time.Unix(1_700_000_000, 0)
	for k := range 100_000 {
		now = now.Add(10 * time.Millisecond)
		l.allow(k, now)
	}
	// One token a second: a bucket is full again a second after its
	// use, so about the keys of the last second (100) stay, plus what
	// arrived since the last sweep.
	if n := l.size(); n > 4*minSweep {
		t.Errorf("%d buckets held", n)
	}
}

func TestRetryAfter(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "1", time.Millisecond: "1", time.Second: "1", 1001 * time.Millisecond: "2", 59 * time.Second: "59",
	} {
		if got := retryAfter(d); got != want {
			t.Errorf("retryAfter(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestFailHidesInternalErrors checks that only an *svc.Error's Msg
// reaches the client, never a cause, and that the cause is logged with
// the request id.
func TestFailHidesInternalErrors(t *testing.T) {
	var logs strings.Builder
	h := &Handler{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	secret := errors.New("open /var/lib/svc/secret: permission denied")
	for _, tc := range []struct {
		err    error
		status int
		code   svc.Code
		msg    string
	}{
		{secret, 500, svc.CodeInternalError, "internal error"},
		{fmt.Errorf("wrapped: %w", secret), 500, svc.CodeInternalError, "internal error"},
		{&svc.Error{Code: svc.CodeInternalError, Msg: "store: " + secret.Error(), Err: secret}, 500, svc.CodeInternalError, "internal error"},
		{&svc.Error{Code: svc.CodeSandboxSetupFailed, Err: secret}, 500, svc.CodeSandboxSetupFailed, "the sandbox could not be set up"},
		{&svc.Error{Code: svc.CodeSandboxSetupFailed, Msg: "sandbox: setup failed", Err: secret}, 500, svc.CodeSandboxSetupFailed, "sandbox: setup failed"},
		{&svc.Error{Code: "made_up", Msg: "x", Err: secret}, 500, svc.CodeInternalError, "internal error"},
		{&svc.Error{Code: svc.CodeCapacityExhausted, Msg: "no slots", Err: secret}, 503, svc.CodeCapacityExhausted, "no slots"},
	} {
		logs.Reset()
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/execute", nil)
		r = r.WithContext(contextWithID(r, "req-42"))
		h.fail(w, r, tc.err)
		var body errorBody
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: body %q", tc.err, w.Body.String())
		}
		if w.Code != tc.status || body.Code != tc.code || !strings.HasPrefix(body.Error, tc.msg) {
			t.Errorf("%v: %d %+v; want %d %s %q", tc.err, w.Code, body, tc.status, tc.code, tc.msg)
		}
		if strings.Contains(w.Body.String(), "secret") {
			t.Errorf("%v: the cause reached the client: %s", tc.err, w.Body.String())
		}
		if !strings.Contains(logs.String(), "secret") || !strings.Contains(logs.String(), `"request_id":"req-42"`) {
			t.Errorf("%v: the cause is not logged with the request id: %s", tc.err, logs.String())
		}
		if tc.status == 503 && w.Header().Get("Retry-After") == "" {
			t.Errorf("%v: 503 without Retry-After", tc.err)
		}
	}
}

func TestMatch(t *testing.T) {
	h := &Handler{}
	h.routes = h.table()
	id := strings.Repeat("a", 64)
	for path, want := range map[string]string{
		"/execute": "/execute", "/api/v1/execute": "/execute", "/file": "/file",
		"/file/" + id: "/file/{id}", "/api/v1/file/x": "/file/{id}", "/cache": "/cache",
		"/api/v1/cache": "/cache", "/info": "/info", "/metrics": "/metrics", "/health": "/health",
		"/api/v1/health": "/health",
		"/":              "", "/execute/": "", "/file/": "", "/file/a/b": "", "/api/v1": "", "/api/v1/": "",
		"/api/v1execute": "", "/api/v2/execute": "", "//execute": "", "/EXECUTE": "",
		"/api/v1/api/v1/execute": "",
	} {
		rt, _ := h.match(path)
		got := ""
		if rt != nil {
			got = rt.pattern
		}
		if got != want {
			t.Errorf("match(%q) = %q, want %q", path, got, want)
		}
	}
}

func contextWithID(r *http.Request, id string) context.Context {
	return context.WithValue(r.Context(), requestIDKey{}, id)
}

package apicheck_test

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/svc-sandbox/svc/internal/apicheck"
)

// recorder is a testing.TB that keeps what Errorf says.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.msgs
	r.msgs = nil
	return m
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answer is what the fake server says to the next request.
type answer struct {
	status int
	header map[string]string
	body   string
}

// TestChecks: the transport lets what the document allows through and
// reports what it does not, on both sides, against a fake server.
func TestChecks(t *testing.T) {
	var next answer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Request-Id", "req-1")
		for k, v := range next.header {
			w.Header().Set(k, v)
		}
		if next.body != "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(next.status)
		io.WriteString(w, next.body)
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	c := &http.Client{Transport: apicheck.Transport(rec, nil)}
	id := strings.Repeat("ab", 32)

	send := func(ctx context.Context, method, path, ct string, body io.Reader, a answer) {
		t.Helper()
		next = a
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer k")
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != a.body {
			t.Errorf("%s %s: the body read is %q, the server sent %q", method, path, got, a.body)
		}
	}
	bg := context.Background()
	errBody := func(code string) string { return `{"error": "x", "code": "` + code + `"}` }
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		method, path string
		ct, body     string
		answer       answer
		want         string // in the one message expected; "" for none
	}{
		{"fine", bg, "GET", "/health", "", "", answer{status: 200, body: `{"status": "ok"}`}, ""},
		{"under /api/v1", bg, "GET", "/api/v1/health", "", "", answer{status: 200, body: `{"status": "ok"}`}, ""},
		{"wrong field", bg, "GET", "/health", "", "", answer{status: 200, body: `{"status": "fine"}`}, "response 200 does not match"},
		{"undocumented status", bg, "GET", "/health", "", "", answer{status: 418, body: errBody("internal_error")}, "status is not supported"},
		{"code of another status", bg, "GET", "/file/" + id, "", "", answer{status: 404, body: errBody("file_not_found")}, "response 404"},
		{"required header missing", bg, "POST", "/execute", "application/json", `{"steps": [{"cmd": "true"}]}`,
			answer{status: 503, body: errBody("capacity_exhausted")}, `"Retry-After" missing`},
		{"no body", bg, "DELETE", "/file/" + id, "", "", answer{status: 204}, ""},
		{"bad request", bg, "POST", "/execute", "application/json", `{"steps": [{"cmd": "true", "cmdd": 1}]}`,
			answer{status: 400, body: errBody("invalid_request")}, "the request does not match"},
		{"bad request, marked", apicheck.Malformed(bg), "POST", "/execute", "application/json", `{"steps": [{"cmd": "true", "cmdd": 1}]}`,
			answer{status: 400, body: errBody("invalid_request")}, ""},
		{"marked, but the answer is wrong", apicheck.Malformed(bg), "POST", "/execute", "application/json", `{"steps": []}`,
			answer{status: 400, body: `{"error": "x"}`}, "response 400"},
		{"no content type", bg, "POST", "/execute", "", `{"steps": [{"cmd": "true"}]}`,
			answer{status: 200, body: `[]`}, "Content-Type"},
		{"unknown path", bg, "GET", "/nope", "", "", answer{status: 404, body: errBody("not_found")}, "not in the document"},
		{"unknown path, marked", apicheck.Malformed(bg), "GET", "/nope", "", "", answer{status: 404, body: errBody("not_found")}, ""},
		{"unknown path answered 200", apicheck.Malformed(bg), "GET", "/nope", "", "", answer{status: 200, body: `{}`}, "want 404"},
		{"405", apicheck.Malformed(bg), "GET", "/execute", "", "",
			answer{status: 405, header: map[string]string{"Allow": "POST"}, body: errBody("invalid_request")}, ""},
		{"405 with another Allow", apicheck.Malformed(bg), "GET", "/execute", "", "",
			answer{status: 405, header: map[string]string{"Allow": "GET, POST"}, body: errBody("invalid_request")}, `the document has "POST"`},
		{"made up by a proxy", bg, "GET", "/health", "", "",
			answer{status: 502, header: map[string]string{apicheck.InjectedHeader: "1"}, body: "<html>"}, ""},
		{"HEAD without its header", bg, "HEAD", "/health", "", "", answer{status: 503}, "no header Retry-After"},
	} {
		send(tc.ctx, tc.method, tc.path, tc.ct, strings.NewReader(tc.body), tc.answer)
		msgs := rec.take()
		switch {
		case tc.want == "" && len(msgs) > 0:
			t.Errorf("%s: reported %q", tc.name, msgs)
		case tc.want != "" && (len(msgs) == 0 || !strings.Contains(msgs[0], tc.want)):
			t.Errorf("%s: reported %q, want a message with %q first", tc.name, msgs, tc.want)
		}
	}

	// A response documented without a body has none (a net/http server
	// cannot send one with 204: a made-up response can).
	with204 := &http.Client{Transport: apicheck.Transport(rec, roundTrip(func(r *http.Request) (*http.Response, error) {
		h := http.Header{"X-Request-Id": {"req-2"}}
		return &http.Response{StatusCode: 204, Header: h, Body: io.NopCloser(strings.NewReader("x")), Request: r}, nil
	}))}
	req, _ := http.NewRequest("DELETE", srv.URL+"/file/"+id, nil)
	req.Header.Set("Authorization", "Bearer k")
	if resp, err := with204.Do(req); err == nil {
		resp.Body.Close()
	}
	if msgs := rec.take(); len(msgs) != 1 || !strings.Contains(msgs[0], "documented without a body") {
		t.Errorf("204 with a body: reported %q", msgs)
	}

	// A streamed upload is checked as it was sent.
	for _, part := range []string{"file", "other"} {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			fw, _ := mw.CreateFormFile(part, "a.txt")
			io.WriteString(fw, "some bytes")
			mw.Close()
			pw.Close()
		}()
		send(bg, "POST", "/file", mw.FormDataContentType(), pr,
			answer{status: 201, body: `{"file_id": "` + id + `", "size": 10, "already_exists": false}`})
		msgs := rec.take()
		if ok := part == "file"; ok != (len(msgs) == 0) {
			t.Errorf("streamed upload of a part %q: reported %q", part, msgs)
		}
	}
}

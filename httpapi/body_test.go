package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/httpapi"
	"github.com/svc-sandbox/svc/svctest"
)

// Request bodies read under BODY_IDLE_TIMEOUT_MS, bodies declared too
// large, and bodies cut by the drain, with clients on raw connections
// that pause where a real client would not.

const boundary = "stalledboundary"

// multipartHead is the start of an upload body: the part "file" and its
// first bytes.
var multipartHead = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nabc"

// rawPost sends the headers of a POST to path declaring length bytes of
// body, and then first, and returns the connection.
func rawPost(t testing.TB, s *svctest.Server, path, contentType string, length int64, first string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		path, s.Key, contentType, length, first)
	return conn
}

// stalledUpload starts an upload of 1000 bytes that sends its first
// bytes and then nothing.
func stalledUpload(t testing.TB, s *svctest.Server) net.Conn {
	return rawPost(t, s, "/file", "multipart/form-data; boundary="+boundary, 1000, multipartHead)
}

// stalledExecute starts an /execute body of 1000 bytes that sends its
// first bytes and then nothing.
func stalledExecute(t testing.TB, s *svctest.Server) net.Conn {
	return rawPost(t, s, "/execute", "application/json", 1000, `{"steps": [`)
}

// answer reads the response on conn, waiting at most a minute.
func answer(t testing.TB, conn net.Conn) (*http.Response, string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// wantAnswer checks a response's status and code.
func wantAnswer(t testing.TB, what string, resp *http.Response, b string, status int, code svc.Code) {
	t.Helper()
	if resp.StatusCode != status || !strings.Contains(b, fmt.Sprintf(`"code":%q`, code)) {
		t.Errorf("%s: %d %s, want %d %s", what, resp.StatusCode, b, status, code)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s: no x-request-id", what)
	}
}

// TestBodyIdleTimeout: uploads that stall hold every upload slot only
// until BODY_IDLE_TIMEOUT_MS; then each is answered 408 cancelled and
// its slot serves another upload. An /execute body that stalls is
// answered the same.
func TestBodyIdleTimeout(t *testing.T) {
	s := newServer(t, svctest.Config{
		FileStore: svc.FileStoreConfig{MaxConcurrentUploads: 2},
		API:       httpapi.Config{BodyIdleTimeout: 500 * time.Millisecond},
	})
	stalled := []net.Conn{stalledUpload(t, s), stalledUpload(t, s)}
	waitFor(t, 10*time.Second, "two uploads in flight", func() bool { return metric(t, s, "svc_uploads_in_flight") == 2 })
	for i, conn := range stalled {
		resp, b := answer(t, conn)
		wantAnswer(t, fmt.Sprintf("stalled upload %d", i), resp, b, http.StatusRequestTimeout, svc.CodeCancelled)
		if !strings.Contains(b, "BODY_IDLE_TIMEOUT_MS") {
			t.Errorf("the message does not name the setting: %s", b)
		}
	}
	waitFor(t, 10*time.Second, "the slots given back", func() bool { return metric(t, s, "svc_uploads_in_flight") == 0 })
	resp := upload(t, s, "/file", "after.txt", "", []byte("after the stall"))
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("an upload after the stalled ones: %d %s", resp.StatusCode, body(t, resp))
	}

	resp408, b := answer(t, stalledExecute(t, s))
	wantAnswer(t, "stalled execute", resp408, b, http.StatusRequestTimeout, svc.CodeCancelled)
	if got := metric(t, s, `svc_http_responses_total{status="408",code="cancelled"}`); got != 3 {
		t.Errorf("408s counted: %v", got)
	}
}

// TestBodySlowButSteady: a body that arrives a few bytes at a time, each
// well within the idle timeout but the whole far beyond it, is served.
func TestBodySlowButSteady(t *testing.T) {
	idle := time.Second
	s := newServer(t, svctest.Config{API: httpapi.Config{BodyIdleTimeout: idle}})
	body := `[{"cmd": "echo", "args": ["steady"]}]`
	conn := rawPost(t, s, "/execute", "application/json", int64(len(body)), "")
	start := time.Now()
	for i := 0; i < len(body); i += 4 {
		time.Sleep(idle / 4) // the client's pace
		io.WriteString(conn, body[i:min(i+4, len(body))])
	}
	resp, b := answer(t, conn)
	if resp.StatusCode != http.StatusOK || !strings.Contains(b, `"stdout":"steady\n"`) {
		t.Errorf("after %v: %d %s", time.Since(start), resp.StatusCode, b)
	}
	if d := time.Since(start); d < 2*idle {
		t.Errorf("the body took only %v: not slower than the idle timeout", d)
	}
}

// TestBodyDeclaredTooLarge: a Content-Length over the limit is answered
// 413 from the header: the client has sent no byte of its body, and the
// idle timeout is far away.
func TestBodyDeclaredTooLarge(t *testing.T) {
	s := newServer(t, svctest.Config{API: httpapi.Config{BodyIdleTimeout: 10 * time.Minute}})
	for _, c := range []struct{ path, contentType string }{
		{"/execute", "application/json"},
		{"/file", "multipart/form-data; boundary=" + boundary},
	} {
		resp, b := answer(t, rawPost(t, s, c.path, c.contentType, 2<<30, ""))
		wantAnswer(t, c.path, resp, b, http.StatusRequestEntityTooLarge, svc.CodePayloadTooLarge)
		if !strings.Contains(b, "2147483648") {
			t.Errorf("%s: the message does not name the declared length: %s", c.path, b)
		}
		if !resp.Close {
			t.Errorf("%s: the connection is kept open after a body that was not read", c.path)
		}
	}
}

// TestDrainCutsBodies: Drain answers the requests whose bodies are still
// arriving 503 shutting_down at once, and gives their upload slots back.
func TestDrainCutsBodies(t *testing.T) {
	s := newServer(t, svctest.Config{API: httpapi.Config{BodyIdleTimeout: 10 * time.Minute}})
	up, ex := stalledUpload(t, s), stalledExecute(t, s)
	waitFor(t, 10*time.Second, "the upload in flight", func() bool { return metric(t, s, "svc_uploads_in_flight") == 1 })
	s.Handler.Drain()
	resp, b := answer(t, up)
	wantAnswer(t, "stalled upload", resp, b, http.StatusServiceUnavailable, svc.CodeShuttingDown)
	resp, b = answer(t, ex)
	wantAnswer(t, "stalled execute", resp, b, http.StatusServiceUnavailable, svc.CodeShuttingDown)
	if resp.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After on the 503")
	}
	resp = s.Do("GET", "/health", "")
	expectError(t, resp, http.StatusServiceUnavailable, svc.CodeShuttingDown)
}

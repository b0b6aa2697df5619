package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawPost sends the headers of a POST declaring length bytes of body,
// and first, to p, and returns the connection.
func (p *process) rawPost(t *testing.T, path, contentType string, length int, first string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
		path, p.key, contentType, length, first)
	return conn
}

// rawAnswer reads the status line and body of the response on conn,
// waiting at most d.
func rawAnswer(conn net.Conn, d time.Duration) string {
	conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "no response: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
}

// upload stores content on p and returns its id.
func (p *process) upload(t *testing.T, content []byte) string {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "big.bin")
	w.Write(content)
	mw.Close()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/file", &buf)
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var up struct {
		FileID string `json:"file_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&up); err != nil || up.FileID == "" {
		t.Fatalf("upload: %d %v", resp.StatusCode, err)
	}
	return up.FileID
}

// TestServeDrainStalledClients: SIGTERM with an upload and an /execute
// body stalled half way, and a download its client never reads. The
// stalled requests answer 503 shutting_down at once; /health answers 503
// on a connection kept alive from before the signal and on new ones for
// as long as the process drains; and the process exits 0, with its
// "stopped" line, within SHUTDOWN_TIMEOUT_MS, though the downloader
// still reads nothing.
func TestServeDrainStalledClients(t *testing.T) {
	const shutdownTimeout = 4 * time.Second
	p := startProcess(t, "STATE_DIR="+stateDir(t), fmt.Sprintf("SHUTDOWN_TIMEOUT_MS=%d", shutdownTimeout.Milliseconds()),
		"BODY_IDLE_TIMEOUT_MS=600000")
	// More than loopback's socket buffers hold: the download's handler
	// blocks in its writes.
	big := make([]byte, 48<<20)
	rand.Read(big)
	id := p.upload(t, big)
	dl, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	fmt.Fprintf(dl, "GET /file/%s HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer %s\r\n\r\n", id, p.key)

	const boundary = "drainboundary"
	upload := p.rawPost(t, "/file", "multipart/form-data; boundary="+boundary, 1000,
		"--"+boundary+"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\nabc")
	execute := p.rawPost(t, "/execute", "application/json", 1000, `{"steps": [`)
	waitForLog(t, p.stderr, "the upload, the execute and the download in flight", func() bool {
		_, m := p.do(t, "GET", "/metrics", "")
		// The three, and this /metrics.
		return strings.Contains(m, "svc_uploads_in_flight 1") && strings.Contains(m, "svc_http_requests_in_flight 4")
	})

	// A client that keeps its connection alive.
	keep := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	health := func() (int, bool, error) {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }}
		req, _ := http.NewRequest("GET", "http://"+p.addr+"/health", nil)
		resp, err := keep.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
		if err != nil {
			return 0, reused, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, reused, nil
	}
	if code, _, err := health(); code != 200 || err != nil {
		t.Fatalf("/health before the signal: %d %v", code, err)
	}

	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	for name, conn := range map[string]net.Conn{"the stalled upload": upload, "the stalled execute": execute} {
		if b := rawAnswer(conn, shutdownTimeout); !strings.HasPrefix(b, "503 ") || !strings.Contains(b, `"code":"shutting_down"`) {
			t.Errorf("%s: %s", name, b)
		}
	}
	if code, reused, err := health(); code != 503 || !reused || err != nil {
		t.Errorf("/health on the kept-alive connection while draining: %d, reused %v, %v", code, reused, err)
	}
	if code, b, err := p.try("GET", "/health", ""); code != 503 || !strings.Contains(b, `"code":"shutting_down"`) || err != nil {
		t.Errorf("/health on a new connection while draining: %d %s %v", code, b, err)
	}
	if code, b, err := p.try("POST", "/execute", `{"steps": [{"cmd": "true"}]}`); code != 503 || !strings.Contains(b, `"code":"shutting_down"`) || err != nil {
		t.Errorf("an execute while draining: %d %s %v", code, b, err)
	}

	<-p.stderrDone
	err = p.cmd.Wait()
	// Seen from outside, with the signal's delivery and the process's
	// exit on a loaded machine: a little slack.
	if d := time.Since(start); d > shutdownTimeout+500*time.Millisecond {
		t.Errorf("exit %v after the signal, SHUTDOWN_TIMEOUT_MS is %v", d, shutdownTimeout)
	}
	if err != nil {
		t.Errorf("exit: %v\n%s", err, p.stderr)
	}
	logs := p.stderr.String()
	if !strings.Contains(logs, `"msg":"stopped"`) {
		t.Errorf("no stopped line:\n%s", logs)
	}
	if !strings.Contains(logs, `"requests_not_answered":1`) {
		t.Errorf("the download left open is not logged:\n%s", logs)
	}
}

// TestServeStateDirInUse: a second instance on a state dir in use stops
// at start naming the state dir, not the file store under it.
func TestServeStateDirInUse(t *testing.T) {
	dir := stateDir(t)
	startProcess(t, "STATE_DIR="+dir)
	cmd := execServe(t, "STATE_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a second instance started on %s:\n%s", dir, out)
	}
	if !strings.Contains(string(out), "STATE_DIR") || !strings.Contains(string(out), "in use by another svc instance") ||
		strings.Contains(string(out), "file store") {
		t.Errorf("the second instance says:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".lock")); err != nil {
		t.Error(err)
	}
}

// execServe is svc serve as its own process, not started, killed if it
// runs for a minute.
func execServe(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	requireRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "serve")
	cmd.Env = append(os.Environ(), append([]string{"SVC_TEST_MAIN=1", "LISTEN_ADDR=127.0.0.1:0",
		"SANDBOX_UID_BASE=" + testUIDBase(), "GO_BUILD_CACHE_DIR=off"}, env...)...)
	return cmd
}

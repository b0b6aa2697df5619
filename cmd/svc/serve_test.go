package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// TestMain runs the command itself when the test binary is started as
// the svc binary by the process tests (SVC_TEST_MAIN=1).
func TestMain(m *testing.M) {
	if os.Getenv("SVC_TEST_MAIN") == "1" {
		os.Args = append([]string{"svc"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: sandboxes use namespaces, cgroups and mounts (euid %d)", os.Geteuid())
	}
}

// testUIDBase returns a host id range for one server of these tests, away
// from the library's default range that other packages' tests use at the
// same time (they look for leftover processes by uid).
func testUIDBase() string {
	return strconv.Itoa(300_000_000 + (os.Getpid()%4096)*64*1024 + int(uidBlocks.Add(1)%64)*1024)
}

var uidBlocks atomic.Int64

// stateDir returns a fresh state directory that sandbox identities can
// traverse (t.TempDir's parent is 0700).
func stateDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "svc-serve-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// logBuffer collects log lines written concurrently.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var apiKeyRE = regexp.MustCompile(`"api_key":"([^"]+)"`)

// inProcess runs serve with the default settings but for the state dir
// and a free port, until the returned stop is called.
type inProcess struct {
	addr, key string
	logs      *logBuffer
	done      chan error
	stop      context.CancelFunc
}

func startInProcess(t *testing.T, env map[string]string) *inProcess {
	t.Helper()
	requireRoot(t)
	t.Setenv("STATE_DIR", stateDir(t))
	t.Setenv("LISTEN_ADDR", "127.0.0.1:0")
	t.Setenv("SANDBOX_UID_BASE", testUIDBase())
	// Not a minute of CPU in every test: the Go build cache has tests of
	// its own.
	t.Setenv("GO_BUILD_CACHE_DIR", "off")
	for k, v := range env {
		t.Setenv(k, v)
	}
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	p := &inProcess{logs: new(logBuffer), done: make(chan error, 1)}
	ctx, stop := context.WithCancel(context.Background())
	p.stop = stop
	ready := make(chan string, 1)
	go func() {
		p.done <- serve(ctx, &o, slog.New(slog.NewJSONHandler(p.logs, nil)), func(a string) { ready <- a })
	}()
	select {
	case p.addr = <-ready:
	case err := <-p.done:
		t.Fatalf("serve: %v\n%s", err, p.logs)
	}
	t.Cleanup(func() {
		stop()
		<-p.done
	})
	if m := apiKeyRE.FindStringSubmatch(p.logs.String()); m != nil {
		p.key = m[1]
	}
	return p
}

func (p *inProcess) post(t *testing.T, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+p.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeDefaults: with no configuration but the state dir and port, the
// server generates a key and logs it exactly once, serves the README's
// request, reports the cache enabled (dir backend by default), and on shutdown kills the
// running request, which answers shutting_down, within the timeout.
func TestServeDefaults(t *testing.T) {
	p := startInProcess(t, map[string]string{"SHUTDOWN_TIMEOUT_MS": "5000"})
	logs := p.logs.String()
	if n := len(apiKeyRE.FindAllString(logs, -1)); n != 1 || p.key == "" {
		t.Fatalf("the generated key is logged %d times:\n%s", n, logs)
	}

	hello, err := os.ReadFile("../../examples/hello.json")
	if err != nil {
		t.Fatal(err)
	}
	resp := p.post(t, "/execute", string(hello))
	b := readAll(t, resp)
	var r svc.Response
	if err := json.Unmarshal([]byte(b), &r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v: %s", resp.StatusCode, err, b)
	}
	if out := r.Results[1].Results[0].Stdout; out != "hello from the sandbox\n" || !r.Cache.Enabled {
		t.Errorf("stdout %q, cache %+v", out, r.Cache)
	}
	unauth, err := http.Post("http://"+p.addr+"/execute", "application/json", strings.NewReader(string(hello)))
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, unauth); unauth.StatusCode != 401 {
		t.Errorf("without the key: %d", unauth.StatusCode)
	}

	got := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+p.addr+"/execute", strings.NewReader(`{"steps": [{"cmd": "sleep", "args": ["60"]}]}`))
		req.Header.Set("Authorization", "Bearer "+p.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	waitForLog(t, p.logs, "the request runs", func() bool { return strings.Contains(metrics(t, p), "svc_execution_slots_in_use 1") })
	start := time.Now()
	p.stop()
	if err := <-p.done; err != nil {
		t.Errorf("serve: %v", err)
	}
	p.done <- nil // for the cleanup
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v, more than SHUTDOWN_TIMEOUT_MS", d)
	}
	resp = <-got
	if b := readAll(t, resp); resp.StatusCode != 503 || !strings.Contains(b, `"shutting_down"`) {
		t.Errorf("the running request: %d %s", resp.StatusCode, b)
	}
}

func metrics(t *testing.T, p *inProcess) string {
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+p.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, resp)
}

func waitForLog(t *testing.T, logs *logBuffer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s\n%s", what, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeSettings: SVC_IMAGE_ID and SVC_TOOLCHAINS replace detection in
// /info, CACHE_* are reported there, NO_AUTH serves without a key and warns.
func TestServeSettings(t *testing.T) {
	p := startInProcess(t, map[string]string{
		"SVC_IMAGE_ID": "image-7", "SVC_TOOLCHAINS": "gcc-99,python-9.9", "NO_AUTH": "true",
		"CACHE_NAMESPACE": "judge", "CACHE_TTL_SECS": "60", "CACHE_URL": "redis://127.0.0.1:1/0",
		"MAX_CONCURRENCY": "3", "MAX_PARALLEL_TASKS": "3", "QUEUE_TIMEOUT_MS": "2500",
	})
	if p.key != "" || !strings.Contains(p.logs.String(), "authentication is off") {
		t.Errorf("key %q, logs:\n%s", p.key, p.logs)
	}
	resp, err := http.Get("http://" + p.addr + "/info")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		ImageID    string   `json:"image_id"`
		Toolchains []string `json:"toolchains"`
		Cache      struct {
			Enabled   bool   `json:"enabled"`
			Namespace string `json:"namespace"`
			TTLSecs   int    `json:"ttl_secs"`
			Backend   string `json:"backend"`
		} `json:"cache"`
		Limits struct {
			MaxConcurrency int `json:"max_concurrency"`
		} `json:"limits"`
		QueueTimeoutMs int64 `json:"queue_timeout_ms"`
	}
	if b := readAll(t, resp); resp.StatusCode != 200 || json.Unmarshal([]byte(b), &info) != nil {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if info.ImageID != "image-7" || strings.Join(info.Toolchains, ",") != "gcc-99,python-9.9" ||
		!info.Cache.Enabled || info.Cache.Namespace != "judge" || info.Cache.TTLSecs != 60 ||
		info.Cache.Backend != "redis" || info.Limits.MaxConcurrency != 3 || info.QueueTimeoutMs != 2500 {
		t.Errorf("info %+v", info)
	}
}

// TestReadmeQuickStart runs the README's curl command, as written there,
// against a server started with no configuration but the state dir and
// port (the README's 127.0.0.1:8080 is replaced by the test's address).
func TestReadmeQuickStart(t *testing.T) {
	requireRoot(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skipf("no curl: %v", err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(readme), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "curl ") {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) != 1 || !strings.Contains(cmds[0], "http://127.0.0.1:8080/execute") {
		t.Fatalf("want one curl command against the default address in README.md, got %q", cmds)
	}
	p := startInProcess(t, nil)
	cmd := exec.Command("sh", "-c", strings.Replace(cmds[0], "127.0.0.1:8080", p.addr, 1))
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "SVC_KEY="+p.key, "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmds[0], err)
	}
	var r svc.Response
	if err := json.Unmarshal(out, &r); err != nil || len(r.Results) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	if res := r.Results[1].Results[0]; res.Outcome != svc.OutcomeExited || res.Stdout != "hello from the sandbox\n" {
		t.Errorf("%+v", res)
	}
	if !strings.Contains(string(readme), `"stdout":"hello from the sandbox\n"`) {
		t.Error("the README does not show the output")
	}
}

// process is svc serve running as its own process (this test binary).
type process struct {
	cmd       *exec.Cmd
	addr, key string
	stderr    *logBuffer
	// stderrDone is closed once stderr has been read to its end: Wait
	// closes the pipe, so a line not read by then would be lost.
	stderrDone chan struct{}
}

func startProcess(t *testing.T, env ...string) *process {
	t.Helper()
	requireRoot(t)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), append([]string{"SVC_TEST_MAIN=1", "LISTEN_ADDR=127.0.0.1:0", "SANDBOX_UID_BASE=" + testUIDBase(), "GO_BUILD_CACHE_DIR=off"}, env...)...)
	p := &process{cmd: cmd, stderr: new(logBuffer), stderrDone: make(chan struct{})}
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Stop it as an operator would, so that it removes its cgroups.
		cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	serving := make(chan struct{})
	go func() {
		defer close(p.stderrDone)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.Write([]byte(line + "\n"))
			var m map[string]any
			json.Unmarshal([]byte(line), &m)
			if k, ok := m["api_key"].(string); ok {
				p.key = k
			}
			if m["msg"] == "serving" {
				p.addr = m["addr"].(string)
				close(serving)
			}
		}
	}()
	select {
	case <-serving:
	case <-time.After(30 * time.Second):
		t.Fatalf("svc serve did not start:\n%s", p.stderr)
	}
	return p
}

func (p *process) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	code, b, err := p.try(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, p.stderr)
	}
	return code, b
}

// try is do for other goroutines than the test's.
func (p *process) try(method, path, body string) (int, string, error) {
	req, _ := http.NewRequest(method, "http://"+p.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestServeSignals: SIGTERM drains the process, which exits 0 within
// SHUTDOWN_TIMEOUT_MS; the running request answers shutting_down.
func TestServeSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startProcess(t, "STATE_DIR="+stateDir(t), "SHUTDOWN_TIMEOUT_MS=4000", "WALL_TIMEOUT_MS=60000")
			got := make(chan string, 1)
			go func() {
				code, b, err := p.try("POST", "/execute", `{"steps": [{"cmd": "sleep", "args": ["60"]}]}`)
				got <- fmt.Sprintf("%d %s %v", code, strings.TrimSpace(b), err)
			}()
			waitForLog(t, p.stderr, "the request runs", func() bool {
				_, m := p.do(t, "GET", "/metrics", "")
				return strings.Contains(m, "svc_execution_slots_in_use 1")
			})
			start := time.Now()
			p.cmd.Process.Signal(sig)
			<-p.stderrDone // the process has exited and its last line is in
			err := p.cmd.Wait()
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("exit %v after the signal", d)
			}
			if err != nil {
				t.Errorf("exit: %v\n%s", err, p.stderr)
			}
			if b := <-got; !strings.HasPrefix(b, "503 ") || !strings.Contains(b, `"code":"shutting_down"`) {
				t.Errorf("the running request: %s", b)
			}
			if !strings.Contains(p.stderr.String(), `"msg":"stopped"`) {
				t.Errorf("no stopped line:\n%s", p.stderr)
			}
		})
	}
}

// TestServeSignalQueued: SIGTERM answers the requests waiting for a slot
// shutting_down at once, not after QUEUE_TIMEOUT_MS, and the process
// exits within SHUTDOWN_TIMEOUT_MS.
func TestServeSignalQueued(t *testing.T) {
	p := startProcess(t, "STATE_DIR="+stateDir(t), "SHUTDOWN_TIMEOUT_MS=4000", "WALL_TIMEOUT_MS=60000",
		"MAX_CONCURRENCY=1", "MAX_PARALLEL_TASKS=1", "QUEUE_TIMEOUT_MS=600000")
	got := make(chan string, 3)
	send := func(body string) {
		go func() {
			code, b, err := p.try("POST", "/execute", body)
			got <- fmt.Sprintf("%d %s %v", code, strings.TrimSpace(b), err)
		}()
	}
	send(`{"steps": [{"cmd": "sleep", "args": ["60"]}]}`)
	waitForLog(t, p.stderr, "the request runs", func() bool {
		_, m := p.do(t, "GET", "/metrics", "")
		return strings.Contains(m, "svc_execution_slots_in_use 1")
	})
	send(`{"steps": [{"cmd": "true"}]}`)
	send(`{"steps": [{"cmd": "true"}]}`)
	waitForLog(t, p.stderr, "two requests wait", func() bool {
		_, m := p.do(t, "GET", "/metrics", "")
		return strings.Contains(m, "svc_execution_queue_length 2")
	})
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.stderrDone
	err := p.cmd.Wait()
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("exit %v after the signal", d)
	}
	if err != nil {
		t.Errorf("exit: %v\n%s", err, p.stderr)
	}
	for range 3 {
		if b := <-got; !strings.HasPrefix(b, "503 ") || !strings.Contains(b, `"code":"shutting_down"`) {
			t.Errorf("a request: %s", b)
		}
	}
}

// TestServeAfterCrash: a server killed with SIGKILL in the middle of a
// request leaves its sandbox behind; the next start on the same state dir
// removes it and serves.
func TestServeAfterCrash(t *testing.T) {
	dir := stateDir(t)
	p := startProcess(t, "STATE_DIR="+dir, "API_KEYS=crash-key", "WALL_TIMEOUT_MS=60000")
	p.key = "crash-key"
	go p.try("POST", "/execute", `{"steps": [{"cmd": "sleep", "args": ["60"]}]}`)
	waitForLog(t, p.stderr, "the request runs", func() bool {
		entries, _ := os.ReadDir(filepath.Join(dir, "run"))
		return len(entries) > 1
	})
	p.cmd.Process.Kill()
	p.cmd.Wait()
	crashed, _ := os.ReadDir(filepath.Join(dir, "run"))
	if len(crashed) < 2 {
		t.Fatalf("the crash left nothing to clean up: %v", crashed)
	}

	// The new instance prepares sandboxes of its own under new names.
	p = startProcess(t, "STATE_DIR="+dir, "API_KEYS=crash-key")
	p.key = "crash-key"
	for _, e := range crashed {
		// .root, the skeleton of sandbox roots, and .localbin and
		// .toolbin, their /usr/local/bin, each instance makes anew.
		if _, err := os.Stat(filepath.Join(dir, "run", e.Name())); !slices.Contains([]string{".lock", ".root", ".localbin", ".toolbin"}, e.Name()) && err == nil {
			t.Errorf("left after restart: %s", e.Name())
		}
	}
	if code, b := p.do(t, "POST", "/execute", `{"steps": [{"cmd": "echo", "args": ["again"]}]}`); code != 200 || !strings.Contains(b, `"stdout":"again\n"`) {
		t.Errorf("after restart: %d %s", code, b)
	}
}

package scaleout

// The processes of the test: redis-server, svc serve instances and nginx,
// each started in its own process group and stopped by t.Cleanup.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/svc-sandbox/svc/client"
)

// requirements skips the test, or fails it in CI, when the machine cannot
// run it.
func requirements(t *testing.T) (nginx, redisServer string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: svc serve makes namespaces, cgroups and mounts for its sandboxes (euid %d)", os.Geteuid())
	}
	var missing []string
	find := func(name, pkg string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			// Debian puts nginx in /usr/sbin, which a user's PATH may lack.
			for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
				if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
					return filepath.Join(dir, name)
				}
			}
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", name, pkg))
		}
		return p
	}
	nginx, redisServer = find("nginx", "nginx"), find("redis-server", "redis-server")
	if len(missing) > 0 {
		msg := "the scale-out test needs " + strings.Join(missing, " and ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + ": .ci/run installs them")
		}
		t.Skip(msg)
	}
	return nginx, redisServer
}

// logBuffer collects the output of a process and hands each complete line
// to a callback.
type logBuffer struct {
	mu     sync.Mutex // guards b and line
	b      bytes.Buffer
	line   []byte
	onLine func(string)
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	var lines []string
	if l.onLine != nil {
		l.line = append(l.line, p...)
		for {
			i := bytes.IndexByte(l.line, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(l.line[:i]))
			l.line = l.line[i+1:]
		}
	}
	l.mu.Unlock()
	for _, s := range lines {
		l.onLine(s)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proc is a process the test started, in a process group of its own.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *logBuffer // standard output and error
	done chan struct{}
	err  error // how it exited; set before done is closed
}

// startProc starts a process and stops it in the test's cleanup: signal
// first (what an operator sends), SIGKILL to its whole group if it is
// still there after grace.
func startProc(t testing.TB, name string, env []string, onLine func(string), grace time.Duration, argv ...string) *proc {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	out := &logBuffer{onLine: onLine}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child that keeps the output pipe open must not hold up Wait.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.stop(syscall.SIGTERM, grace) {
			t.Errorf("%s did not exit within %v of SIGTERM: killed", name, grace)
		}
		// Whatever it left in its group (nginx workers, say).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	return p
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process and waits up to grace for it to exit;
// then it kills its process group. It reports whether it exited in time.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) bool {
	if p.exited() {
		return true
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return false
	}
}

// waitFor polls cond every 50 ms until it is true, the process p exits
// (p may be nil), or timeout passes. It returns cond's last error.
func waitFor(timeout time.Duration, p *proc, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited (%v): %w", p.name, p.err, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago. The
// callers retry when another process takes it first.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tempDir makes a directory that the sandbox identities and nginx's
// workers can traverse (t.TempDir's parent is 0700), removed at cleanup
// after the processes using it are stopped (cleanups run last first).
func tempDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// moduleRoot returns the directory of this module's go.mod.
func moduleRoot(t testing.TB) string {
	t.Helper()
	gomod, err := exec.Command(goBin(), "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(gomod)))
}

// goBin returns the go command.
func goBin() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// buildSvc builds ./cmd/svc of the module at root.
func buildSvc(t testing.TB, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "svc")
	cmd := exec.Command(goBin(), "build", "-o", bin, "./cmd/svc")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/svc: %v\n%s", err, out)
	}
	return bin
}

// redisProc is a redis-server on a loopback port.
type redisProc struct {
	*proc
	addr string
	rc   *redis.Client
}

func startRedis(t *testing.T, bin string) *redisProc {
	t.Helper()
	dir := tempDir(t, "svc-scaleout-redis-")
	var last error
	for range 3 { // the port may be taken between freePort and the bind
		port := freePort(t)
		p := startProc(t, "redis-server", os.Environ(), nil, 10*time.Second, bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--dir", dir)
		r := &redisProc{proc: p, addr: fmt.Sprintf("127.0.0.1:%d", port)}
		r.rc = redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { r.rc.Close() })
		last = waitFor(20*time.Second, p, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return r.rc.Ping(ctx).Err()
		})
		if last == nil {
			return r
		}
		p.stop(syscall.SIGKILL, 5*time.Second)
	}
	t.Fatalf("redis-server did not start: %v", last)
	return nil
}

// keys returns the keys matching pattern, found with SCAN.
func (r *redisProc) keys(t *testing.T, pattern string) []string {
	t.Helper()
	var keys []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := r.rc.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("redis SCAN %s: %v", pattern, err)
	}
	return keys
}

// instance is one svc serve process.
type instance struct {
	*proc
	addr string         // where it listens, 127.0.0.1:port
	c    *client.Client // straight to it, past nginx
}

// shutdownTimeout is the instances' SHUTDOWN_TIMEOUT_MS; instanceGrace
// bounds their exit after SIGTERM, with slack for a loaded machine.
const (
	shutdownTimeout = 5 * time.Second
	instanceGrace   = shutdownTimeout + 5*time.Second
)

// startInstance starts svc serve with env added to its own settings and
// waits until it answers GET /health.
func startInstance(t testing.TB, bin, name string, env []string, key string) *instance {
	t.Helper()
	addr := make(chan string, 1)
	onLine := func(line string) {
		var m struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "serving" {
			select {
			case addr <- m.Addr:
			default:
			}
		}
	}
	// No Go build cache: no test here runs go, and preparing it would
	// take a CPU for a minute from every instance.
	full := append(os.Environ(), "STATE_DIR="+tempDir(t, "svc-scaleout-state-"), "LISTEN_ADDR=127.0.0.1:0", "GO_BUILD_CACHE_DIR=off")
	p := startProc(t, name, append(full, env...), onLine, instanceGrace, bin, "serve")
	in := &instance{proc: p}
	select {
	case in.addr = <-addr:
	case <-p.done:
		t.Fatalf("%s exited at start (%v):\n%s", name, p.err, p.out)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start serving within 60 s:\n%s", name, p.out)
	}
	var err error
	in.c, err = client.New(client.Config{URL: "http://" + in.addr, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(30*time.Second, p, func() error { return in.c.Health(context.Background()) }); err != nil {
		t.Fatalf("%s: GET /health: %v\n%s", name, err, p.out)
	}
	return in
}

// metrics returns the instance's metrics by name with labels, e.g.
// `svc_http_responses_total{status="200",code=""}`.
func (in *instance) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	text, err := in.c.Metrics(ctx)
	if err != nil {
		t.Fatalf("%s: GET /metrics: %v", in.name, err)
	}
	m := make(map[string]float64)
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("%s: GET /metrics: line %q", in.name, line)
		}
		m[line[:i]] = v
	}
	return m
}

// nginxProc is nginx balancing the instances.
type nginxProc struct {
	*proc
	url string
	dir string // its prefix: configuration, logs, temporary files
}

// nginxMain is the main configuration the test runs nginx with: its
// pid, logs and temporary files in its own directory, and in the http
// context deploy/nginx-svc.conf as it is but for the instances' and the
// listen addresses and the response header X-Upstream-Addr.
const nginxMain = `# Generated by the scale-out test.
worker_processes 2;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log info;

events {
    worker_connections 1024;
}

http {
    log_format svc '$time_iso8601 $request_method $request_uri $status '
                   'upstream=$upstream_addr upstream_status=$upstream_status '
                   'request_id=$http_x_request_id affinity=$http_x_svc_affinity '
                   'time=$request_time';
    access_log {{dir}}/access.log svc;

    client_body_temp_path {{dir}}/client_body;
    proxy_temp_path       {{dir}}/proxy;
    fastcgi_temp_path     {{dir}}/fastcgi;
    uwsgi_temp_path       {{dir}}/uwsgi;
    scgi_temp_path        {{dir}}/scgi;

    include {{dir}}/svc.conf;
}
`

// siteConf returns deploy/nginx-svc.conf with the server lines of its
// upstream replaced by upstreams, its listen address by listen, and a
// header naming the instance that answered added to every response.
func siteConf(t *testing.T, root string, upstreams []string, listen string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "nginx-svc.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	replace := func(re, with string) {
		t.Helper()
		rx := regexp.MustCompile(re)
		n := len(rx.FindAllStringIndex(conf, -1))
		if n == 0 {
			t.Fatalf("deploy/nginx-svc.conf has no line matching %s: the test must follow its changes", re)
		}
		first := true
		conf = rx.ReplaceAllStringFunc(conf, func(string) string {
			if first {
				first = false
				return with
			}
			return ""
		})
	}
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s;\n", u)
	}
	replace(`(?m)^[ \t]*server[ \t]+[^ \t;{]+:[0-9]+[^;{]*;[ \t]*\n`, servers.String())
	replace(`(?m)^([ \t]*)listen[ \t]+8080;`, "    listen "+listen+";")
	replace(`(?m)^[ \t]*location / \{\n`, "    location / {\n        # Added by the test: which instance answered.\n"+
		"        add_header X-Upstream-Addr $upstream_addr always;\n")
	return conf
}

func startNginx(t *testing.T, bin, root string, upstreams []string) *nginxProc {
	t.Helper()
	dir := tempDir(t, "svc-scaleout-nginx-")
	main := strings.ReplaceAll(nginxMain, "{{dir}}", dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	var last error
	for range 3 { // the port may be taken between freePort and the bind
		listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		if err := os.WriteFile(filepath.Join(dir, "svc.conf"), []byte(siteConf(t, root, upstreams, listen)), 0o644); err != nil {
			t.Fatal(err)
		}
		p := startProc(t, "nginx", os.Environ(), nil, 10*time.Second, bin,
			"-p", dir+"/", "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"),
			"-g", "daemon off;")
		n := &nginxProc{proc: p, url: "http://" + listen, dir: dir}
		last = waitFor(20*time.Second, p, func() error {
			resp, err := http.Get(n.url + "/health")
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET /health through nginx: HTTP %d", resp.StatusCode)
			}
			return nil
		})
		if last == nil {
			return n
		}
		p.stop(syscall.SIGKILL, 5*time.Second)
		last = fmt.Errorf("%w\n%s\n%s", last, p.out, n.log("error.log"))
	}
	t.Fatalf("nginx did not start: %v", last)
	return nil
}

// log returns one of nginx's log files.
func (n *nginxProc) log(name string) string {
	b, err := os.ReadFile(filepath.Join(n.dir, name))
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(b)
}

// attempt is one HTTP exchange of a client, as its transport saw it.
type attempt struct {
	Method, Path string
	RequestID    string // the X-Request-Id sent
	Affinity     string // the X-Svc-Affinity sent
	Status       int    // 0 when no answer came
	Code         string // the code of an error body
	Upstream     string // the instance that answered (nginx's X-Upstream-Addr, last one)
	Tried        string // every instance nginx tried, as nginx wrote them
	Body         []byte
	Err          error
}

func (a attempt) String() string {
	s := fmt.Sprintf("%s %s id=%s affinity=%q -> %d %s via %q", a.Method, a.Path, a.RequestID, a.Affinity, a.Status, a.Code, a.Tried)
	if a.Err != nil {
		s += " err=" + a.Err.Error()
	}
	return s
}

// recorder is an http.RoundTripper that records every attempt.
type recorder struct {
	rt http.RoundTripper

	mu       sync.Mutex // guards attempts
	attempts []attempt
}

func newRecorder() *recorder {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &recorder{rt: t}
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	a := attempt{Method: req.Method, Path: req.URL.Path, RequestID: req.Header.Get("X-Request-Id"),
		Affinity: req.Header.Get(client.AffinityHeader)}
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		a.Status = resp.StatusCode
		a.Tried = resp.Header.Get("X-Upstream-Addr")
		tried := strings.Split(a.Tried, ", ")
		a.Upstream = strings.TrimSpace(tried[len(tried)-1])
		var rerr error
		a.Body, rerr = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(a.Body), errReader{rerr}))
		if rerr != nil {
			a.Err = rerr
		}
		var eb struct {
			Code string `json:"code"`
		}
		if resp.StatusCode > 299 && json.Unmarshal(a.Body, &eb) == nil {
			a.Code = eb.Code
		}
	} else {
		a.Err = err
	}
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	return resp, err
}

// errReader yields err, or EOF when err is nil.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// mark returns where the next attempt will be recorded.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.attempts)
}

// since returns the attempts from mark m on.
func (r *recorder) since(m int) []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts[m:]...)
}

// dump is attempts as lines, for failure messages.
func dump(as []attempt) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString("  " + a.String() + "\n")
	}
	return b.String()
}

// Package seaweedtest runs a real S3-compatible object store, SeaweedFS,
// on loopback for tests: the file store's s3:// backend is tested
// against it, never against a mock of the S3 API.
//
// [Start] starts `weed server -s3` with every port (HTTP and gRPC, of the
// master, volume, filer and S3 servers) on 127.0.0.1, a data directory of
// the test's, and an identity with an access and a secret key, and
// returns once S3 answers with the test's bucket created. Stop it with
// [Server.Kill] (SIGKILL) or freeze it with [Server.Freeze] (SIGSTOP) to
// see what a client does when the store is down or hangs, and bring it
// back with [Server.Restart] or [Server.Thaw].
//
// # The weed binary
//
// SeaweedFS is a Go module whose go.mod has replace directives, so it
// cannot be installed with `go install pkg@version`. [Binary] builds its
// weed command once from the module's source, which the Go module proxy
// serves, into /var/tmp/seaweedfs-<Version>/weed (about 10 minutes on a
// 2-CPU machine), and reuses that build afterwards; a lock file keeps two
// test processes from building at once. SEAWEEDFS_WEED names another
// binary. When it cannot be had, the test is skipped with the reason, or
// fails where CI=true.
package seaweedtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Version is the SeaweedFS module version Binary builds.
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

// Module is SeaweedFS's module path.
const Module = "github.com/seaweedfs/seaweedfs"

// Dir is where Binary keeps its build: Dir/weed.
func Dir() string { return "/var/tmp/seaweedfs-" + Version }

// unavailable skips t, or fails it in CI, with why.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("SeaweedFS (the tests' S3 server): %s", why)
	}
	t.Skipf("SeaweedFS (the tests' S3 server): %s; the test is skipped (in CI it fails)", why)
}

var binaryMu sync.Mutex

// Binary returns the path of a weed binary: SEAWEEDFS_WEED, else the
// build in Dir(), built first if missing.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SEAWEEDFS_WEED"); p != "" {
		return p
	}
	binaryMu.Lock()
	defer binaryMu.Unlock()
	bin := filepath.Join(Dir(), "weed")
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		unavailable(t, "no weed binary in "+Dir()+" and no go command to build one")
	}
	if err := os.MkdirAll(Dir(), 0o755); err != nil {
		unavailable(t, err.Error())
	}
	lock, err := os.OpenFile(filepath.Join(Dir(), ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		unavailable(t, err.Error())
	}
	defer lock.Close()
	// Another test process may be building it: wait for it.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		unavailable(t, err.Error())
	}
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	t.Logf("building SeaweedFS %s into %s (once; about 10 minutes)", Version, bin)
	start := time.Now()
	if err := build(goBin, bin); err != nil {
		unavailable(t, "building the weed binary: "+err.Error())
	}
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Second))
	return bin
}

// build downloads the module's source, copies it where it can be built
// (the module cache is read-only) and builds ./weed into bin.
func build(goBin, bin string) error {
	dl := exec.Command(goBin, "mod", "download", "-json", Module+"@"+Version)
	dl.Dir = Dir()
	dl.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := dl.Output()
	if err != nil {
		return fmt.Errorf("go mod download: %w: %s", err, stderrOf(err))
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download: no module directory (%v, %s)", err, mod.Error)
	}
	src := filepath.Join(Dir(), "src")
	os.RemoveAll(src)
	if out, err := exec.Command("cp", "-r", mod.Dir, src).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the source: %w: %s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", src).CombinedOutput(); err != nil {
		return fmt.Errorf("chmod the source: %w: %s", err, out)
	}
	tmp := bin + ".tmp"
	b := exec.Command(goBin, "build", "-o", tmp, "./weed")
	b.Dir = src
	b.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := b.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, lastLines(string(out), 20))
	}
	return os.Rename(tmp, bin)
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return lastLines(string(ee.Stderr), 10)
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Server is a running SeaweedFS with its S3 gateway, on loopback.
type Server struct {
	// Endpoint is the S3 gateway's host:port (plain HTTP).
	Endpoint string
	// Bucket exists; AccessKey and SecretKey may use it.
	Bucket, AccessKey, SecretKey string

	t    testing.TB
	bin  string
	dir  string
	args []string

	mu   sync.Mutex // guards cmd, out and done
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{} // closed when cmd has exited
}

// Start starts a SeaweedFS server for t and stops it at t's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	s := &Server{Bucket: "svc-test", AccessKey: "svctestaccess", SecretKey: "svctestsecret0123456789", t: t, bin: bin, dir: dir}
	conf := map[string]any{"identities": []any{map[string]any{
		"name":        "svc",
		"credentials": []any{map[string]string{"accessKey": s.AccessKey, "secretKey": s.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}}
	b, _ := json.Marshal(conf)
	cfgPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 8)
	s.Endpoint = "127.0.0.1:" + strconv.Itoa(ports[6])
	s.args = []string{"server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + data,
		"-master.port=" + strconv.Itoa(ports[0]), "-master.port.grpc=" + strconv.Itoa(ports[1]),
		"-volume.port=" + strconv.Itoa(ports[2]), "-volume.port.grpc=" + strconv.Itoa(ports[3]),
		"-filer.port=" + strconv.Itoa(ports[4]), "-filer.port.grpc=" + strconv.Itoa(ports[5]),
		"-s3", "-s3.port=" + strconv.Itoa(ports[6]), "-s3.port.grpc=" + strconv.Itoa(ports[7]),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + cfgPath,
		"-filer.localSocket=" + filepath.Join(dir, "filer.sock"), "-s3.localSocket=" + filepath.Join(dir, "s3.sock"),
		"-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=0",
		"-master.dir=" + filepath.Join(dir, "master"),
	}
	if err := os.MkdirAll(filepath.Join(dir, "master"), 0o700); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.kill)
	if err := s.waitReady(2 * time.Minute); err != nil {
		t.Fatalf("SeaweedFS did not serve S3 at %s: %v\n%s", s.Endpoint, err, s.Log())
	}
	return s
}

// freePorts returns n loopback ports that were free a moment ago, held
// together so that they differ.
func freePorts(t testing.TB, n int) []int {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func (s *Server) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := os.OpenFile(filepath.Join(s.dir, "weed.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "HOME="+s.dir)
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		s.t.Fatalf("start weed: %v", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.cmd, s.out, s.done = cmd, out, done
}

// kill ends the server and waits for it.
func (s *Server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
	<-s.done
	s.out.Close()
	s.cmd, s.out = nil, nil
}

// Kill stops the server at once (SIGKILL): connections are refused.
func (s *Server) Kill() { s.kill() }

// Restart starts a killed server again, with the same ports and data,
// and waits until it serves S3.
func (s *Server) Restart() {
	s.t.Helper()
	s.kill()
	s.start()
	if err := s.waitReady(2 * time.Minute); err != nil {
		s.t.Fatalf("SeaweedFS did not serve S3 again: %v\n%s", err, s.Log())
	}
}

// Freeze stops the server's processes (SIGSTOP): connections are accepted
// by the kernel and then nothing is answered.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		syscall.Kill(-s.cmd.Process.Pid, sig)
	}
}

// Pid is the process id of the running weed (its process group's too),
// or 0: benchmarks read its CPU time in /proc.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Log returns the server's output so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "weed.log"))
	return lastLines(string(b), 40)
}

// URL is the FILESTORE_URL of a file store under prefix in the bucket;
// the keys come from Env.
func (s *Server) URL(prefix string) string {
	return "s3://" + s.Bucket + "/" + prefix + "?endpoint=http://" + s.Endpoint + "&region=us-east-1"
}

// Env is the environment that gives the keys to a process.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey}
}

// SetEnv sets the keys in this process's environment for t (t.Setenv).
func (s *Server) SetEnv(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
}

// Client returns an S3 client of the server, for a test to look at the
// objects directly.
func (s *Server) Client() *minio.Client {
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// waitReady waits until the bucket exists (making it) and an object can
// be written and read back.
func (s *Server) waitReady(timeout time.Duration) error {
	c := s.Client()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		select {
		case <-done:
			return errors.New("weed exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last = s.probe(ctx, c)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

func (s *Server) probe(ctx context.Context, c *minio.Client) error {
	ok, err := c.BucketExists(ctx, s.Bucket)
	if err != nil {
		return err
	}
	if !ok {
		if err := c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
			return err
		}
	}
	body := strings.NewReader("ready")
	if _, err := c.PutObject(ctx, s.Bucket, ".probe", body, body.Size(), minio.PutObjectOptions{}); err != nil {
		return err
	}
	o, err := c.GetObject(ctx, s.Bucket, ".probe", minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer o.Close()
	buf := make([]byte, 16)
	n, _ := o.Read(buf)
	if string(buf[:n]) != "ready" {
		return fmt.Errorf("probe object read back as %q", buf[:n])
	}
	return nil
}

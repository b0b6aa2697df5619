// Package svctest starts real sandboxes and real svc servers for tests, in
// the shape of net/http/httptest, and holds the helpers of a judge's test
// harness.
//
// [New] returns a ready [svc.Sandbox] with its own [svc.FileStore];
// [NewServer] serves the HTTP API on a loopback port with a real sandbox
// and file store, and [Server.NewClient] gives a [client.Client] of it.
// Both clean up through t.Cleanup and skip the test, saying why, when the
// machine cannot run sandboxes ([Check]: not root, no cgroups, no seccomp,
// an old kernel). Each gets a fresh state directory and a range of host
// ids of its own ([UIDBase]), so parallel tests and test processes do not
// collide.
//
//	func TestSum(t *testing.T) {
//		sb := svctest.New(t, svc.Config{})
//		rep, err := svctest.Judge(context.Background(), sb, svctest.CPP(src), cases, svctest.Tokens)
//		if err != nil {
//			t.Fatal(err)
//		}
//		t.Log("\n" + rep.String())
//		if !rep.Accepted() {
//			t.Errorf("verdicts %v", rep.Verdicts())
//		}
//	}
//
// # Judging
//
// A [Program] is a source, the command that builds it, the command that
// runs it and the limits both need ([C], [CPP], [Python], [PyPy], [Java],
// [Rust], [JS]; [Program.Limits] raises a sandbox's limits to them), and
// the limits each run is held to, a problem's time and memory limits
// ([Program].RunLimits: lower than the sandbox's, which the build keeps).
// [RunInputs] builds it once and runs it on many inputs in parallel
// steps; [Judge] does that for test cases ([Case]) and compares each
// output with the expected one ([Exact], [Tokens]), giving a [Report]: a
// [Verdict] per case and a table with the time and memory of each.
// [JudgeInteractive] judges an interactive problem: for each case the
// solution and an interactor run as two tasks that feed each other
// (svc.Task.StdinFrom), and the interactor's exit status and output
// decide, as testlib's do ([VerdictOfInteraction]).
package svctest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/httpapi"
)

// Config configures NewServer. The zero value serves with the library's
// defaults, a fresh state directory and one generated API key.
type Config struct {
	// Sandbox configures the sandbox. A zero StateDir is a fresh
	// directory under os.TempDir, removed at cleanup; a given one is
	// left as it is (pass the same one to a second server to restart).
	// Files is ignored: the server opens its own store from FileStore.
	// A zero UIDBase takes a range of host ids private to the server,
	// so servers of parallel tests and test processes never share one.
	Sandbox svc.Config
	// FileStore configures the file store. A zero Dir is "files" in the
	// state directory; Logger defaults to the API's.
	FileStore svc.FileStoreConfig
	// API configures the handler. Sandbox is set by NewServer; with no
	// Keys and NoAuth unset, one key is generated (Server.Key); with no
	// ImageID and Toolchains, they are detected (svc.DetectImage).
	API httpapi.Config
}

// Server is a running svc server on 127.0.0.1.
type Server struct {
	// URL is the base URL, "http://127.0.0.1:<port>", without a slash.
	URL string
	// Key is the first API key ("" with NoAuth).
	Key string
	// Client talks to the server; it has no timeout of its own.
	Client *http.Client

	// Sandbox, Files and Handler are the server's parts, for a test to
	// look at or act on (Handler.Drain, Files.Delete).
	Sandbox *svc.Sandbox
	Files   *svc.FileStore
	Handler *httpapi.Handler
	// StateDir is the state directory of the sandbox.
	StateDir string

	t        testing.TB
	srv      *http.Server
	served   chan struct{}
	shutOnce sync.Once
	shutErr  error
}

// NewServer starts a server for cfg on a free loopback port. It is shut
// down at cleanup, after the requests in flight have ended.
func NewServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Sandbox.Logger == nil {
		cfg.Sandbox.Logger = cfg.API.Logger
	}
	cfg.Sandbox.Files = nil
	sb := newSandbox(t, &cfg.Sandbox, cfg.FileStore)
	s := &Server{
		Client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
		Sandbox:  sb,
		Files:    sb.Config().Files,
		StateDir: cfg.Sandbox.StateDir,
		t:        t,
		served:   make(chan struct{}),
	}
	t.Cleanup(s.Close)
	fail := func(err error) {
		close(s.served) // nothing serves
		t.Fatalf("svctest: %v", err)
	}

	api := cfg.API
	api.Sandbox = sb
	if len(api.Keys) == 0 && !api.NoAuth {
		api.Keys = []string{NewKey()}
	}
	if api.ImageID == "" && api.Toolchains == nil {
		id, tc, err := svc.DetectImage(sb.Config().RootFS)
		if err != nil {
			fail(err)
		}
		api.ImageID, api.Toolchains = id, tc
	}
	h, err := httpapi.New(api)
	if err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.Handler = h
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if !api.NoAuth {
		s.Key = api.Keys[0]
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("svctest: serve: %v", err)
		}
	}()
	return s
}

// NewClient returns a client of the server (package client) for cfg,
// with the server's URL, its key and its HTTP client unless cfg sets
// them. Each call returns a new client, which remembers its own uploads.
func (s *Server) NewClient(cfg client.Config) *client.Client {
	s.t.Helper()
	if cfg.URL == "" {
		cfg.URL = s.URL
	}
	if cfg.Key == "" {
		cfg.Key = s.Key
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = s.Client
	}
	c, err := client.New(cfg)
	if err != nil {
		s.t.Fatalf("svctest: %v", err)
	}
	return c
}

// Request returns a request for the server's path with the API key set.
func (s *Server) Request(method, path string, body io.Reader) *http.Request {
	s.t.Helper()
	r, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		s.t.Fatalf("svctest: %v", err)
	}
	if s.Key != "" {
		r.Header.Set("Authorization", "Bearer "+s.Key)
	}
	return r
}

// Do sends a request made by Request, with body a JSON text sent as
// application/json ("" for no body).
func (s *Server) Do(method, path, body string) *http.Response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := s.Request(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		s.t.Fatalf("svctest: %s %s: %v", method, path, err)
	}
	return resp
}

// Shutdown stops the server as svc serve does on SIGTERM
// (httpapi.Handler.Shutdown: drain, kill the running requests, stop
// serving), then closes the file store. Calls after the first, and Close,
// return at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutOnce.Do(func() {
		s.shutErr = s.Handler.Shutdown(ctx, s.srv)
		s.closeRest()
	})
	return s.shutErr
}

// Close stops accepting, waits for the requests in flight to end (at most
// the queue and overall timeouts and a little more), then closes the
// sandbox and the file store. It is called at cleanup.
func (s *Server) Close() {
	s.shutOnce.Do(func() {
		if s.srv != nil { // nil: NewServer failed
			wait := s.Sandbox.Config().QueueTimeout + s.Sandbox.Limits().OverallTimeout + 10*time.Second
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := s.srv.Shutdown(ctx); err != nil {
				s.t.Errorf("svctest: requests still in flight after %v: %v", wait, err)
				s.srv.Close()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Sandbox.Close(ctx); err != nil {
			s.t.Errorf("svctest: close sandbox: %v", err)
		}
		s.closeRest()
	})
}

// closeRest waits for Serve to return and closes the file store.
func (s *Server) closeRest() {
	<-s.served
	if err := s.Files.Close(); err != nil {
		s.t.Errorf("svctest: close file store: %v", err)
	}
	s.Client.CloseIdleConnections()
}

// New returns a Sandbox for cfg, with a file store in its state directory
// unless cfg.Files is set; both are closed at cleanup. A zero StateDir is
// a fresh temporary directory, a zero UIDBase a private range of host ids.
func New(t testing.TB, cfg svc.Config) *svc.Sandbox {
	t.Helper()
	own := cfg.Files == nil
	sb := newSandbox(t, &cfg, svc.FileStoreConfig{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Close(ctx); err != nil {
			t.Errorf("svctest: close sandbox: %v", err)
		}
		if own {
			sb.Config().Files.Close()
		}
	})
	return sb
}

// newSandbox fills in cfg (state dir, id range, file store from fcfg
// unless cfg.Files is set) and returns a new Sandbox. A temporary state
// dir is removed at cleanup; closing the Sandbox and the store is the
// caller's.
func newSandbox(t testing.TB, cfg *svc.Config, fcfg svc.FileStoreConfig) *svc.Sandbox {
	t.Helper()
	RequireSandbox(t)
	if cfg.StateDir == "" {
		// Not t.TempDir: sandbox identities must traverse the path, and
		// t.TempDir's parent is 0700.
		dir, err := os.MkdirTemp("", "svctest-")
		if err != nil {
			t.Fatalf("svctest: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		cfg.StateDir = dir
	}
	pick := cfg.UIDBase == 0
	if pick {
		cfg.UIDBase = UIDBase()
	}
	own := cfg.Files == nil
	if own {
		if fcfg.Dir == "" {
			fcfg.Dir = filepath.Join(cfg.StateDir, "files")
		}
		if fcfg.MaxUploadBytes == 0 {
			fcfg.MaxUploadBytes = cmp.Or(cfg.Limits.UploadFileLimit, svc.DefaultLimits().UploadFileLimit)
		}
		if fcfg.Logger == nil {
			fcfg.Logger = cfg.Logger
		}
		fs, err := svc.OpenFileStore(fcfg)
		if err != nil {
			t.Fatalf("svctest: open file store: %v", err)
		}
		cfg.Files = fs
	}
	sb, err := svc.New(*cfg)
	// A range UIDBase picked may be held by another test process whose
	// pid picked the same region: the next one may be free.
	for try := 1; pick && errors.Is(err, svc.ErrHostIDsInUse) && try < 64; try++ {
		cfg.UIDBase = UIDBase()
		sb, err = svc.New(*cfg)
	}
	if err != nil {
		if own {
			cfg.Files.Close()
		}
		t.Fatalf("svctest: %v", err)
	}
	return sb
}

// RequireRoot skips the test, saying why, unless the process is root.
// [RequireSandbox] checks everything a sandbox needs.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: sandboxes use namespaces, cgroups and mounts (euid %d)", os.Geteuid())
	}
}

// NewKey returns a random API key.
func NewKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "test-" + hex.EncodeToString(b)
}

// uidBlock is the size of the host id range of one sandbox: two ids per
// task slot, for up to 512 slots.
const uidBlock = 1024

var uidBlocks atomic.Int64

// UIDBase returns the first of a range of 1024 host ids (enough for
// svc.Config.UIDBase of a sandbox with up to 512 task slots) that no other
// sandbox of this process uses, and none of another test process in all
// likelihood: the process id picks a region of 64 ranges in 4M..272M,
// above the library's default range (whose tests look for leftover
// processes by uid) and below the 300M.. of cmd/svc's tests. Pass it to a
// program a test starts that makes sandboxes of its own. svc.New refuses
// a range another instance on the host holds (svc.ErrHostIDsInUse); New
// and NewServer, when they pick the range, then try the next ones.
func UIDBase() int {
	region := os.Getpid() % 4096
	n := uidBlocks.Add(1) % 64
	return 4_000_000 + (region*64+int(n))*uidBlock
}

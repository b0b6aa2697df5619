package svc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// helloModule is a hello world module in /svc/hello.
var helloModule = map[string]svc.File{
	"hello/go.mod":  {Content: "module hello\n\ngo 1.26\n"},
	"hello/main.go": {Content: "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n"},
}

// requireGo skips a test when the root filesystem has no Go toolchain in
// /usr/local/go, or fails it under CI, which must have one.
func requireGo(t testing.TB) {
	t.Helper()
	requireRoot(t)
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must have Go in /usr/local/go: %v", err)
		}
		t.Skipf("no Go toolchain in /usr/local/go: %v", err)
	}
}

// sharedGoBuildCache is the Config.GoBuildCache of the tests that need
// the real one (go build std, a minute of CPU): prepared by the first of
// them, and kept for later runs on this machine, one directory per image
// as the service keeps them.
func sharedGoBuildCache(t testing.TB) string {
	t.Helper()
	requireGo(t)
	dir := svctest.GoBuildCache()
	if fi, err := os.Lstat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.IsDir() || st.Uid != 0 || fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s is not a directory of root's alone (%v): remove it", dir, fi.Mode())
		}
	}
	return dir
}

// goCacheSandbox returns a Sandbox with the shared Go build cache, once it
// is ready.
func goCacheSandbox(t testing.TB, cfg svc.Config) *svc.Sandbox {
	t.Helper()
	cfg.GoBuildCache = sharedGoBuildCache(t)
	sb := newSandbox(t, cfg)
	waitGoCache(t, sb)
	return sb
}

// waitGoCache waits until sb's Go build cache is ready.
func waitGoCache(t testing.TB, sb *svc.Sandbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	if err := sb.WaitGoBuildCache(ctx); err != nil {
		t.Fatalf("WaitGoBuildCache: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("the Go build cache was prepared in %v", d)
	}
}

// goTask is a task of the go command by name under compile_v2.
func goTask(dir string, args ...string) svc.Task {
	return svc.Task{Cmd: "go", Args: args, WorkingDir: dir, SandboxProfile: svc.ProfileCompileV2}
}

// goSh is a shell script under compile_v2 in dir, with hello world in
// /svc/hello.
func goSh(dir, script string) svc.Task {
	return svc.Task{Cmd: "sh", Args: []string{"-c", script}, WorkingDir: dir, SandboxProfile: svc.ProfileCompileV2, Files: helloModule}
}

// checkWarmBuild checks the result of go build -x of hello world: it
// succeeded within 2 s of CPU and compiled the main package alone.
func checkWarmBuild(t testing.TB, r svc.Result) {
	t.Helper()
	expect(t, r, svc.OutcomeExited, 0)
	cpu := time.Duration(deref(r.Stats.CPUUsageUsec)) * time.Microsecond
	t.Logf("warm go build of hello world: %v of CPU, %d ms wall, %d MiB peak", cpu, r.Stats.WallTimeMs, deref(r.Stats.MemoryPeakBytes)>>20)
	if cpu > 2*time.Second {
		t.Errorf("warm go build took %v of CPU, want at most 2s", cpu)
	}
	compiles := 0
	for line := range strings.Lines(r.Stderr) {
		if !strings.Contains(line, "/compile ") {
			continue
		}
		compiles++
		if !strings.Contains(line, " -p main ") {
			t.Errorf("compiled a package of the standard library: %s", line)
		}
	}
	if compiles != 1 {
		t.Errorf("%d compiles, want the main package's alone\n%s", compiles, clip(r.Stderr))
	}
}

// TestGoBuildCacheWarm: with the prepared cache, go by name finds its
// cache in /tmp/.gocache (unless the task sets GOCACHE), an overlay
// mounted nosuid and nodev like the /tmp it came with, a go build of
// hello world under compile_v2 and the default limits compiles the main
// package alone within 2 s of CPU, and the binary runs under native_v2.
func TestGoBuildCacheWarm(t *testing.T) {
	sb := goCacheSandbox(t, svc.Config{})
	build := goTask("/svc/hello", "build", "-x", "-o", "hello", ".")
	build.Files = helloModule
	resp := run(t, sb,
		svc.Single(goTask("", "env", "GOCACHE")),
		svc.Single(svc.Task{Cmd: "go", Args: []string{"env", "GOCACHE"}, Env: map[string]string{"GOCACHE": "/tmp/own"}}),
		svc.Single(build),
		svc.Single(svc.Task{Cmd: "./hello/hello", SandboxProfile: svc.ProfileNativeV2}),
		svc.Single(sh("grep ' /tmp/.gocache ' /proc/self/mountinfo")))
	r := resp.Results[4].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	if f := strings.Fields(r.Stdout); len(f) < 9 || !strings.Contains(f[5], "nosuid,nodev") || f[len(f)-3] != "overlay" {
		t.Errorf("/tmp/.gocache: %q, want an overlay, nosuid and nodev", r.Stdout)
	}
	for i, want := range []string{"/tmp/.gocache\n", "/tmp/own\n"} {
		r := resp.Results[i].Results[0]
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != want {
			t.Errorf("step %d: go env GOCACHE %q, want %q", i, r.Stdout, want)
		}
	}
	checkWarmBuild(t, resp.Results[2].Results[0])
	r = resp.Results[3].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	if r.Stdout != "hello, world\n" {
		t.Errorf("hello wrote %q", r.Stdout)
	}
	assertClean(t, sb)
}

// cacheView is a task that prints what it sees of the Go build cache:
// a digest of every file's name, size and mode, and a digest of the
// contents of the compiled packages hello world imports.
var cacheView = goSh("/svc/hello", `set -e
(cd /tmp/.gocache && find . -type f ! -name trim.txt -printf '%P %s %m\n' | LC_ALL=C sort | sha256sum)
go list -export -deps -f '{{.Export}}' fmt | xargs sha256sum | sha256sum`)

// TestGoBuildCacheHostile: a task that overwrites the compiled packages
// hello world links with zeros of the same size (which go would take as
// they are), truncates, deletes, renames and adds entries changes its own
// request's copy alone: the next request sees the cache as it was,
// builds hello world warm, and the prepared cache on the host is
// unchanged.
func TestGoBuildCacheHostile(t *testing.T) {
	sb := goCacheSandbox(t, svc.Config{})
	lower := filepath.Join(sharedGoBuildCache(t), svc.GoCacheNameForTest(sb.Config().ImageID))
	before := treeDigest(t, lower)

	view := func() string {
		r := one(t, sb, cacheView)
		expect(t, r, svc.OutcomeExited, 0)
		return r.Stdout
	}
	pristine := view()

	hostile := goSh("/svc/hello", `
cd /tmp/.gocache
n=0
for f in $(cd /svc/hello && go list -export -deps -f '{{.Export}}' fmt); do
	head -c "$(stat -c %s "$f")" /dev/zero > "$f" && n=$((n+1))
done
echo "zeroed $n"
cd /svc/hello && go build -o bad . >/dev/null 2>&1 || echo "the poisoned build failed"
cd /tmp/.gocache
for f in $(ls -d 1*/*-d | head -200); do : > "$f"; done
for f in $(ls -d 2*/*-a | head -200); do echo "v1 junk" > "$f"; done
rm -rf 3* 4*
mv 5a 5a-moved
echo junk > 6b/0000000000000000000000000000000000000000000000000000000000000000-a
chmod 000 7c 2>/dev/null || echo "chmod refused"
ls 3* 2>/dev/null | wc -l
exit 0`)
	r := one(t, sb, hostile)
	expect(t, r, svc.OutcomeExited, 0)
	t.Logf("the hostile task: %q %q", r.Stdout, clip(r.Stderr))
	for _, want := range []string{"the poisoned build failed\n", "chmod refused\n", "\n0\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the hostile task's own view: stdout %q lacks %q", r.Stdout, want)
		}
	}
	if !strings.HasPrefix(r.Stdout, "zeroed ") || strings.HasPrefix(r.Stdout, "zeroed 0\n") {
		t.Errorf("the hostile task zeroed no package: %q", r.Stdout)
	}

	if got := view(); got != pristine {
		t.Errorf("the next request sees the cache changed:\n%s\nwant\n%s", got, pristine)
	}
	build := goTask("/svc/hello", "build", "-x", "-o", "hello", ".")
	build.Files = helloModule
	resp := run(t, sb, svc.Single(build), svc.Single(svc.Task{Cmd: "./hello/hello", SandboxProfile: svc.ProfileNativeV2}))
	checkWarmBuild(t, resp.Results[0].Results[0])
	if r := resp.Results[1].Results[0]; r.Stdout != "hello, world\n" {
		t.Errorf("hello wrote %q (%s)", r.Stdout, r.Outcome)
	}
	if after := treeDigest(t, lower); after != before {
		t.Errorf("the prepared cache %s changed", lower)
	}
	assertClean(t, sb)
}

// treeDigest is a digest of every entry under dir: its path, type, mode,
// size, modification time and contents.
func treeDigest(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestGoBuildCacheReset: a request that starts over after a failed
// replay (its workspace and /tmp emptied) has the Go build cache's
// overlay again, fresh, and leaves nothing behind.
func TestGoBuildCacheReset(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := goCacheSandbox(t, svc.Config{Cache: c})
	req := cached(
		svc.Single(sh("echo good > f; echo junk > /tmp/.gocache/junk; echo good")),
		svc.Single(noCache(sh("ls /tmp/.gocache/junk; ls /tmp/.gocache | wc -l; cat /tmp/.gocache/trim.txt"))))
	wantSummary(t, runReq(t, sb, req), 0, 1)
	key := svc.StepKeysForTest(sb, req)[0]
	// A layer that fails half-way: its second entry has no parent.
	layer := svc.EncodeLayerForTest(key, `[{"outcome":"exited","exit_code":0,"stdout":"good\n","stats":{"wall_time_ms":1}}]`,
		[]svc.LayerEntryForTest{{Kind: 'f', Path: "g", Mode: 0o644, Content: "x"}, {Kind: 'f', Path: "nodir/f", Mode: 0o644, Content: "x"}})
	if err := os.WriteFile(svc.LayerPathForTest(c, key), layer, 0o600); err != nil {
		t.Fatal(err)
	}
	resp := runReq(t, sb, req)
	wantSummary(t, resp, 0, 1)
	wantReplayed(t, resp, false, false)
	r := resp.Results[1].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	lines := strings.Fields(r.Stdout)
	if len(lines) != 3 || lines[0] != "/tmp/.gocache/junk" || atoi(lines[1]) < 257 || atoi(lines[2]) < time.Now().Add(-time.Hour).Unix() {
		t.Errorf("after the start-over, /tmp/.gocache: %q, want the junk the step wrote again, the prepared entries and trim.txt", r.Stdout)
	}
	assertClean(t, sb)
}

// standIn is a Sandbox whose Go build cache is prepared by a cheap
// stand-in for go build std (SetGoCacheCmdForTest), which waits until the
// test releases it.
type standIn struct {
	*svc.Sandbox
	state string        // its state directory
	logs  *lockedBuffer // its log
}

// standInCmd is the stand-in: a small cache, then a wait for the test.
var standInCmd = []string{"sh", "-c", "go build unicode/utf8 && until [ -e /tmp/.release ]; do sleep 0.01; done"}

// newStandIn opens a Sandbox with the state directory state (a fresh one
// if ""), the Go build cache in dir (state/gocache if "") for image, and
// host ids of its own. The test closes it.
func newStandIn(t *testing.T, state, dir, image string) *standIn {
	t.Helper()
	if state == "" {
		var err error
		if state, err = os.MkdirTemp("", "svc-test-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(state) })
		if err := os.Chmod(state, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if dir == "" {
		dir = filepath.Join(state, "gocache")
	}
	s := &standIn{state: state, logs: new(lockedBuffer)}
	var err error
	s.Sandbox, err = svc.New(svc.Config{StateDir: state, UIDBase: svctest.UIDBase(), GoBuildCache: dir, ImageID: image,
		Logger: slog.New(slog.NewTextHandler(s.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// running waits until the stand-in build runs, and returns its /tmp:
// its request's is the only one with a .gocache.
func (s *standIn) running(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		m, _ := filepath.Glob(filepath.Join(s.state, "run", "*", "tmp", ".gocache"))
		if len(m) == 1 {
			return filepath.Dir(m[0])
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in build did not start:\n%s", s.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// release lets the stand-in build end, once it runs.
func (s *standIn) release(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.running(t), ".release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *standIn) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// lsGoCache shows the first entries of /tmp/.gocache, and go's GOCACHE.
var lsGoCache = sh("ls -A /tmp/.gocache 2>&1 | head -3; go env GOCACHE")

// TestGoBuildCachePrepared: until the cache is ready, requests get an
// empty one of their own (go still works, slowly); once it is, the next
// request sees it, also when requests were prepared before. A later
// instance with the same directory and image uses it as it is; one with
// another image prepares its own beside it, and removes what an
// interrupted build left.
func TestGoBuildCachePrepared(t *testing.T) {
	requireGo(t)
	defer svc.SetGoCacheCmdForTest(standInCmd...)()
	sb := newStandIn(t, "", "", "image-a")
	state, dir := sb.state, filepath.Join(sb.state, "gocache")
	r := one(t, sb.Sandbox, lsGoCache)
	expect(t, r, svc.OutcomeExited, 0)
	if !strings.Contains(r.Stdout, "No such file") || !strings.HasSuffix(r.Stdout, "/tmp/.gocache\n") {
		t.Errorf("before the cache is ready: %q, want no /tmp/.gocache yet, and go's GOCACHE there", r.Stdout)
	}
	sb.release(t)
	waitGoCache(t, sb.Sandbox)
	r = one(t, sb.Sandbox, lsGoCache)
	expect(t, r, svc.OutcomeExited, 0)
	if !strings.HasPrefix(r.Stdout, "00\n01\n02\n") {
		t.Errorf("once the cache is ready: %q, want its entries", r.Stdout)
	}
	if !strings.Contains(sb.logs.String(), "go build cache: prepared") {
		t.Errorf("no log of the preparation:\n%s", sb.logs)
	}
	assertClean(t, sb.Sandbox)
	sb.close(t)
	a := filepath.Join(dir, "image-a")
	fi, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("%s: mode %v", a, fi.Mode())
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want a directory of root's alone", dir, fi.Mode(), err)
	}

	// What a crash in the middle of a build leaves.
	stale := filepath.Join(dir, ".tmp-stale")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	sb = newStandIn(t, state, "", "image-a")
	waitGoCache(t, sb.Sandbox)
	if strings.Contains(sb.logs.String(), "go build cache: prepared") {
		t.Errorf("prepared again for the same image:\n%s", sb.logs)
	}
	r = one(t, sb.Sandbox, lsGoCache)
	if !strings.HasPrefix(r.Stdout, "00\n01\n02\n") {
		t.Errorf("the cache of the earlier instance: %q, want its entries", r.Stdout)
	}
	sb.close(t)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("the same image's instance touched the directory: %v", err)
	}

	sb = newStandIn(t, state, "", "image-b")
	sb.release(t)
	waitGoCache(t, sb.Sandbox)
	if !strings.Contains(sb.logs.String(), "go build cache: prepared") {
		t.Errorf("no preparation for another image:\n%s", sb.logs)
	}
	sb.close(t)
	for _, d := range []string{a, filepath.Join(dir, "image-b")} {
		if _, err := os.Stat(d); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("%s left after a build", stale)
	}
}

// TestGoBuildCacheShared: two instances with state directories of their
// own that share the directory of prepared caches take turns: the second
// waits while the first builds, then uses what it built.
func TestGoBuildCacheShared(t *testing.T) {
	requireGo(t)
	defer svc.SetGoCacheCmdForTest(standInCmd...)()
	first := newStandIn(t, "", "", "image-c")
	defer first.close(t)
	dir := filepath.Join(first.state, "gocache")
	first.running(t) // and holds the lock
	second := newStandIn(t, "", dir, "image-c")
	defer second.close(t)
	first.release(t)
	waitGoCache(t, first.Sandbox)
	waitGoCache(t, second.Sandbox)
	if !strings.Contains(first.logs.String(), "go build cache: prepared") {
		t.Errorf("the first did not prepare it:\n%s", first.logs)
	}
	if !strings.Contains(second.logs.String(), "go build cache: prepared by another instance") {
		t.Errorf("the second did not find it prepared:\n%s", second.logs)
	}
	r := one(t, second.Sandbox, lsGoCache)
	if !strings.HasPrefix(r.Stdout, "00\n01\n02\n") {
		t.Errorf("the second's request: %q, want the cache's entries", r.Stdout)
	}
}

func atoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// lockedBuffer is a buffer a logger writes to from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

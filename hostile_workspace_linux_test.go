package svc_test

// Hostile workspaces against the service's own resources (issue 31,
// items 5 and 6): a task's tree of directories, however deep, costs the
// step cache's walk a bounded number of fds and bounded memory, and never
// a layer its reader refuses; and sparse outputs cost the file store at
// most the workspace size per request. The figures are the service's own:
// the test process is the service here. They need root: see newSandbox.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// procCounter reads a counter of /proc/self: a field of status in kB
// ("VmHWM"), or of io in bytes ("wchar").
func procCounter(t testing.TB, file, field string) int64 {
	t.Helper()
	f, err := os.Open(filepath.Join("/proc/self", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			rest = strings.TrimSpace(rest)
			unit := int64(1)
			if s, ok := strings.CutSuffix(rest, " kB"); ok {
				rest, unit = s, 1024
			}
			n, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n * unit
		}
	}
	t.Fatalf("no %s in /proc/self/%s", field, file)
	return 0
}

// openFDs returns how many fds the process has open.
func openFDs(t testing.TB) int {
	t.Helper()
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// usage is what one request cost the service process.
type usage struct {
	fds      int   // the most fds open above those open before it
	rssGrown int64 // the peak resident set's growth
	heapLeft int64 // the heap still in use after it, above before it
	written  int64 // bytes the process wrote (wchar)
}

// measure runs fn and reports what it cost the process: the peak of
// open fds (sampled every millisecond while fn runs) and of the
// resident set (VmHWM, reset before fn), the heap left after it and the
// bytes written.
func measure(t testing.TB, fn func()) usage {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0 := int64(ms.HeapInuse)
	fds0 := openFDs(t)
	// Writing 5 resets the peak resident set to the current one.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset VmHWM: %v", err)
	}
	rss0 := procCounter(t, "status", "VmRSS")
	w0 := procCounter(t, "io", "wchar")
	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
		peak int
	)
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := os.ReadDir("/proc/self/fd"); err == nil {
				peak = max(peak, len(n))
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(done)
	wg.Wait()
	u := usage{
		fds:      max(peak, openFDs(t)) - fds0,
		rssGrown: procCounter(t, "status", "VmHWM") - rss0,
		written:  procCounter(t, "io", "wchar") - w0,
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	u.heapLeft = int64(ms.HeapInuse) - heap0
	return u
}

func (u usage) String() string {
	return fmt.Sprintf("peak fds +%d, peak RSS +%.1f MiB, heap left +%.1f MiB, written %.1f MiB",
		u.fds, float64(u.rssGrown)/(1<<20), float64(u.heapLeft)/(1<<20), float64(u.written)/(1<<20))
}

// dirBytes returns the bytes of the files under dir.
func dirBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// chain is a task that makes a chain of depth directories named d, one in
// the other, in the workspace.
func chain(depth int) svc.Task {
	return svc.Task{Cmd: "python3", Args: []string{"-c", fmt.Sprintf(`
import os
for _ in range(%d):
    os.mkdir("d")
    os.chdir("d")
`, depth)}}
}

// The bounds of what a walk of a hostile tree may cost the service
// process beyond what a request with a tree of 10 directories costs it:
// 15,000 levels once took 15,269 fds and 466 MB.
const (
	maxWalkFDs = 64
	maxWalkRSS = 64 << 20
)

// baseline returns what the request req(11) costs sb, its step making
// a chain of 11 directories run and stored; req(10) runs before it, to
// build what a first request builds.
func baseline(t testing.TB, sb *svc.Sandbox, req func(depth int) *svc.Request) usage {
	t.Helper()
	runReq(t, sb, req(10))
	u := measure(t, func() { wantSummary(t, runReq(t, sb, req(11)), 0, 1) })
	t.Logf("baseline, 11 directories: %v", u)
	return u
}

// within checks that u costs at most the bounds beyond base.
func within(t testing.TB, what string, u, base usage) {
	t.Helper()
	if u.fds > base.fds+maxWalkFDs || u.rssGrown > base.rssGrown+maxWalkRSS {
		t.Errorf("%s: %v; want at most %d fds and %d MiB more than %v", what, u, maxWalkFDs, maxWalkRSS>>20, base)
	}
}

// TestCacheDeepTree: a cacheable step that leaves a chain of 15,000
// directories costs the service a bounded number of fds and bounded
// memory; its layer is not stored (no layer could hold paths that long),
// and a repeat writes nothing like it again.
func TestCacheDeepTree(t *testing.T) {
	dir := t.TempDir()
	c := newCache(t, svc.CacheConfig{URL: "dir://" + dir})
	sb := newCacheSandbox(t, c, svc.Config{})
	deep := func(depth int) *svc.Request { return cached(svc.Single(chain(depth))) }
	base := baseline(t, sb, deep)
	req := func() *svc.Request { return deep(15000) }
	baseLayers := dirBytes(t, dir)
	for i, what := range []string{"first", "repeat"} {
		var resp *svc.Response
		u := measure(t, func() { resp = runReq(t, sb, req()) })
		layers := dirBytes(t, dir) - baseLayers
		t.Logf("%s: %v; cache dir %d bytes; summary %+v", what, u, layers, resp.Cache)
		expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
		if want := (svc.CacheSummary{Enabled: true}); resp.Cache != want {
			t.Errorf("%s: cache summary %+v, want %+v", what, resp.Cache, want)
		}
		within(t, what, u, base)
		if u.heapLeft > 16<<20 {
			t.Errorf("%s: %.1f MiB of heap left in use", what, float64(u.heapLeft)/(1<<20))
		}
		if layers > 0 || u.written > 16<<20 {
			t.Errorf("%s: the cache holds %d bytes, the process wrote %d; want nothing stored", what, layers, u.written)
		}
		if s := c.Stats(); s.Stores != 2 || s.Errors != 0 || s.Misses != uint64(3+i) {
			t.Errorf("%s: cache stats %+v, want %d misses, the baseline's 2 stores and no error", what, s, 3+i)
		}
	}
}

// TestCacheDeepTreesAtOnce: three such requests at once (which once
// drove the service to its fd limit) cost what three small ones do.
func TestCacheDeepTreesAtOnce(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{MaxConcurrency: 3, MaxParallelTasks: 1}})
	at := func(depth int) func() {
		return func() {
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Go(func() {
					resp, err := sb.Run(t.Context(), cached(svc.Single(chain(depth+i))))
					if err != nil {
						t.Errorf("Run: %v", err)
						return
					}
					expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
				})
			}
			wg.Wait()
		}
	}
	at(10)()
	base := measure(t, at(20))
	deep := measure(t, at(15000))
	t.Logf("three at once, 20 directories: %v; 15,000: %v", base, deep)
	within(t, "three at once", deep, base)
}

// TestCacheDeepTreeStored: a chain as deep as a layer can hold is
// stored in a layer about as large as its names, replayed, and found
// whole by a later step.
func TestCacheDeepTreeStored(t *testing.T) {
	dir := t.TempDir()
	c := newCache(t, svc.CacheConfig{URL: "dir://" + dir})
	sb := newCacheSandbox(t, c, svc.Config{})
	deep := func(depth int) *svc.Request {
		return cached(svc.Single(chain(depth)), svc.Single(noCache(sh("find . -type d | wc -l"))))
	}
	base := baseline(t, sb, deep)
	const depth = 2000 // paths of up to 3,999 bytes
	req := func() *svc.Request { return deep(depth) }
	baseLayers := dirBytes(t, dir)
	ran := measure(t, func() {
		resp := runReq(t, sb, req())
		wantSummary(t, resp, 0, 1)
		if got := strings.TrimSpace(stdout(resp, 1)); got != strconv.Itoa(depth+1) {
			t.Errorf("the run left %s directories, want %d", got, depth+1)
		}
	})
	layer := dirBytes(t, dir) - baseLayers
	replayed := measure(t, func() {
		resp := runReq(t, sb, req())
		wantSummary(t, resp, 1, 0)
		wantReplayed(t, resp, true, false)
		if got := strings.TrimSpace(stdout(resp, 1)); got != strconv.Itoa(depth+1) {
			t.Errorf("the replay left %s directories, want %d", got, depth+1)
		}
	})
	t.Logf("run: %v; layer %d bytes; replay: %v", ran, layer, replayed)
	if layer > 64<<10 {
		t.Errorf("a layer of %d bytes for %d empty directories; want at most 64 KiB", layer, depth)
	}
	within(t, "run", ran, base)
	within(t, "replay", replayed, base)
	if s := c.Stats(); s.Errors != 0 {
		t.Errorf("cache stats %+v, want no error", s)
	}
}

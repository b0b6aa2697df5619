package svc_test

// The step cache through real sandboxes. They need root: see newSandbox.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// newCache opens a dir:// cache in a fresh directory (or cfg.URL), with a
// fixed image, closed at cleanup.
func newCache(t testing.TB, cfg svc.CacheConfig) *svc.StepCache {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = "dir://" + t.TempDir()
	}
	if cfg.ImageID == "" {
		cfg.ImageID = "test-image"
	}
	if cfg.Toolchains == nil {
		cfg.Toolchains = []string{"gcc-12"}
	}
	c, err := svc.OpenCache(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("cache Close: %v", err)
		}
	})
	return c
}

// newCacheSandbox is newSandbox with the cache c.
func newCacheSandbox(t testing.TB, c *svc.StepCache, cfg svc.Config) *svc.Sandbox {
	t.Helper()
	cfg.Cache = c
	return newSandbox(t, cfg)
}

// cached is a request whose tasks are cacheable unless they say otherwise.
func cached(steps ...svc.Step) *svc.Request {
	return &svc.Request{Cache: true, Steps: steps}
}

func runReq(t testing.TB, sb *svc.Sandbox, req *svc.Request) *svc.Response {
	t.Helper()
	resp, err := sb.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return resp
}

func noCache(task svc.Task) svc.Task {
	f := false
	task.Cache = &f
	return task
}

// wantSummary checks a response's cache summary.
func wantSummary(t testing.TB, resp *svc.Response, replayed, stored int) {
	t.Helper()
	want := svc.CacheSummary{Enabled: true, ReplayedSteps: replayed, StoredSteps: stored}
	if resp.Cache != want {
		t.Fatalf("cache summary %+v, want %+v", resp.Cache, want)
	}
}

// wantReplayed checks the replay flag of every result, step by step.
func wantReplayed(t testing.TB, resp *svc.Response, flags ...bool) {
	t.Helper()
	for i, sr := range resp.Results {
		for j, r := range sr.Results {
			if r.Replayed != flags[i] {
				t.Errorf("steps[%d][%d].replayed = %v, want %v", i, j, r.Replayed, flags[i])
			}
		}
	}
}

// sameResults checks that b's results are a's, replay flags aside.
func sameResults(t testing.TB, a, b *svc.Response) {
	t.Helper()
	strip := func(r *svc.Response) string {
		var rs [][]svc.Result
		for _, sr := range r.Results {
			var x []svc.Result
			for _, res := range sr.Results {
				res.Replayed = false
				x = append(x, res)
			}
			rs = append(rs, x)
		}
		b, err := json.Marshal(rs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if sa, sb := strip(a), strip(b); sa != sb {
		t.Errorf("results differ:\n%s\n%s", sa, sb)
	}
}

func stdout(resp *svc.Response, step int) string { return resp.Results[step].Results[0].Stdout }

func TestCacheSummaryAndReplayFlag(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(
		svc.Single(sh("echo one > a; echo out; echo err >&2; exit 3")),
		svc.Single(sh("cat a; echo two > b")),
	)
	first := runReq(t, sb, req)
	wantSummary(t, first, 0, 2)
	wantReplayed(t, first, false, false)
	expect(t, first.Results[0].Results[0], svc.OutcomeExited, 3)

	second := runReq(t, sb, req)
	wantSummary(t, second, 2, 0)
	wantReplayed(t, second, true, true)
	// The original run's results, statistics included.
	sameResults(t, first, second)
	if s := c.Stats(); s != (svc.CacheStats{Hits: 2, Misses: 2, Stores: 2}) {
		t.Errorf("stats %+v", s)
	}

	// The envelope on the wire.
	b, err := json.Marshal(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"replayed":true`)) || !bytes.Contains(b, []byte(`"cache":{"enabled":true,"replayed_steps":2,"stored_steps":0}`)) {
		t.Errorf("JSON %s", b)
	}
	assertClean(t, sb)
}

// treeScript prints every entry of the workspace with its kind, mode,
// owner, size, modification time and target.
const treeScript = `find . | LC_ALL=C sort | while read -r p; do stat -c '%n %F %a %u %s %Y %N' "$p"; done; find . -type f | LC_ALL=C sort | xargs -r sha256sum; cat placed/in.txt 2>/dev/null; true`

func TestCacheReplayedFilesSeenByLaterStep(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", `
			mkdir -p d/e x && echo two > d/e/f && chmod 0750 d && chmod 0700 x
			printf '#!/bin/sh\necho script ran\n' > run.sh && chmod 0755 run.sh
			ln -s d/e/f link && ln -s /etc/hostname abs && ln -s missing dangling
			head -c 70000 /dev/urandom > big && chmod 0600 big
			: > empty && touch -d @1000000000 old && touch -h -d @1200000000 link
			mkdir -p x/y && touch -d @1100000000 x/y`},
			Files: map[string]svc.File{"placed/in.txt": {Content: "placed by the request\n"}}}),
		svc.Single(noCache(sh(treeScript+"; ./run.sh"))),
	)
	first := runReq(t, sb, req)
	wantSummary(t, first, 0, 1)
	expect(t, first.Results[1].Results[0], svc.OutcomeExited, 0)
	second := runReq(t, sb, req)
	wantSummary(t, second, 1, 0)
	wantReplayed(t, second, true, false)
	expect(t, second.Results[1].Results[0], svc.OutcomeExited, 0)
	if a, b := stdout(first, 1), stdout(second, 1); a != b {
		t.Errorf("the workspace after a replay differs from the one after the run:\n%s\n---\n%s", a, b)
	}
	for _, want := range []string{"./d directory 750", "./run.sh regular file 755", "'./link' -> 'd/e/f'", "./old regular empty file 644 1000 0 1000000000", "script ran", "placed by the request"} {
		if !strings.Contains(stdout(second, 1), want) {
			t.Errorf("missing %q in\n%s", want, stdout(second, 1))
		}
	}
}

func TestCacheDeletedFilesStayDeleted(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(
		svc.Single(sh("echo a > a; echo b > b; mkdir -p d/x g/h; echo x > d/x/f; echo e > e; ln -s b s; echo k > keep")),
		svc.Single(sh("rm a; rm -r d; rm e; mkdir e; echo n > e/n; rm -r g; echo g > g; rm s; mkdir s; chmod 0700 keep")),
		svc.Single(noCache(sh(treeScript))),
	)
	first := runReq(t, sb, req)
	wantSummary(t, first, 0, 2)
	second := runReq(t, sb, req)
	wantSummary(t, second, 2, 0)
	if a, b := stdout(first, 2), stdout(second, 2); a != b {
		t.Errorf("the workspace after a replay differs:\n%s\n---\n%s", a, b)
	}
	out := stdout(second, 2)
	for _, gone := range []string{"./a ", "./d ", "./d/x", "./g/h"} {
		if strings.Contains(out, gone) {
			t.Errorf("%q is back after the replay:\n%s", gone, out)
		}
	}
	for _, want := range []string{"./e directory", "./e/n regular file", "./g regular file", "./s directory", "./keep regular file 700"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q:\n%s", want, out)
		}
	}
}

func TestCacheNonCacheableStepStopsCaching(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	// A first step that is not cacheable: nothing is cached.
	req := cached(svc.Single(noCache(sh("echo 1 > f"))), svc.Single(sh("cat f")))
	for range 2 {
		resp := runReq(t, sb, req)
		wantSummary(t, resp, 0, 0)
		wantReplayed(t, resp, false, false)
	}
	// Only the leading run is cached; a parallel step with one
	// non-cacheable task is not cacheable.
	req = cached(
		svc.Single(sh("echo 1 > f")),
		svc.Parallel(sh("echo 2 > g"), noCache(sh("true"))),
		svc.Single(sh("cat f g")),
	)
	wantSummary(t, runReq(t, sb, req), 0, 1)
	resp := runReq(t, sb, req)
	wantSummary(t, resp, 1, 0)
	wantReplayed(t, resp, true, false, false)
	if got := stdout(resp, 2); got != "1\n2\n" {
		t.Errorf("stdout %q", got)
	}
	// Without the envelope's cache, nothing is cacheable.
	plain := &svc.Request{Steps: []svc.Step{svc.Single(sh("echo 1"))}}
	wantSummary(t, runReq(t, sb, plain), 0, 0)
	wantSummary(t, runReq(t, sb, plain), 0, 0)
}

func TestCacheLegacyRequest(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := &svc.Request{Legacy: true, Steps: []svc.Step{svc.Single(sh("echo hi > f")), svc.Single(sh("cat f"))}}
	wantSummary(t, runReq(t, sb, req), 0, 2)
	resp := runReq(t, sb, req)
	wantSummary(t, resp, 2, 0)
	if got := stdout(resp, 1); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	// The legacy response is the bare array, replay flags in it.
	b, _ := json.Marshal(resp)
	if !bytes.HasPrefix(b, []byte(`[{"outcome":"exited","exit_code":0,"signal":null,"replayed":true`)) {
		t.Errorf("JSON %s", b)
	}
	// A legacy task may still opt out.
	req = &svc.Request{Legacy: true, Steps: []svc.Step{svc.Single(noCache(sh("echo x")))}}
	wantSummary(t, runReq(t, sb, req), 0, 0)
}

func TestCacheDisabled(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	req := cached(svc.Single(sh("echo hi")))
	for range 2 {
		resp := runReq(t, sb, req)
		if resp.Cache != (svc.CacheSummary{}) {
			t.Errorf("summary %+v", resp.Cache)
		}
		wantReplayed(t, resp, false)
	}
	b, _ := json.Marshal(runReq(t, sb, req))
	if !bytes.Contains(b, []byte(`"cache":{"enabled":false,"replayed_steps":0,"stored_steps":0}`)) {
		t.Errorf("JSON %s", b)
	}
}

func TestCacheChangesMiss(t *testing.T) {
	dir := t.TempDir()
	fs, _ := newStore(t)
	c := newCache(t, svc.CacheConfig{URL: "dir://" + dir})
	sb := newCacheSandbox(t, c, svc.Config{Files: fs})
	task := func() svc.Task {
		return svc.Task{Cmd: "sh", Args: []string{"-c", "cat in; echo $X"}, Env: map[string]string{"X": "1"},
			Files: map[string]svc.File{"in": {Content: "content\n"}}}
	}
	req := func(mod func(*svc.Task)) *svc.Request {
		t := task()
		if mod != nil {
			mod(&t)
		}
		return cached(svc.Single(t))
	}
	wantSummary(t, runReq(t, sb, req(nil)), 0, 1)
	wantSummary(t, runReq(t, sb, req(nil)), 1, 0)

	info, _, err := fs.Put(context.Background(), strings.NewReader("content\n"), "in", "")
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes from the file store: the same step.
	wantSummary(t, runReq(t, sb, req(func(t *svc.Task) { t.Files["in"] = svc.File{FileID: info.ID} })), 1, 0)

	for name, mod := range map[string]func(*svc.Task){
		"arg":          func(t *svc.Task) { t.Args[1] = "cat in; echo $X " },
		"env":          func(t *svc.Task) { t.Env["X"] = "2" },
		"stdin":        func(t *svc.Task) { t.Stdin = "x" },
		"file content": func(t *svc.Task) { t.Files["in"] = svc.File{Content: "content 2\n"} },
		"working_dir":  func(t *svc.Task) { t.WorkingDir = "/tmp"; t.Args[1] = "cat /svc/in; echo $X" },
	} {
		resp := runReq(t, sb, req(mod))
		if resp.Cache.ReplayedSteps != 0 {
			t.Errorf("%s: replayed", name)
		}
	}

	// Another limit, workspace size, image, toolchains or namespace:
	// another Sandbox or cache on the same store misses.
	for name, mk := range map[string]func(t *testing.T) *svc.Sandbox{
		"same everything": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, newCache(t, svc.CacheConfig{URL: "dir://" + dir}), svc.Config{})
		},
		"wall timeout": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{WallTimeout: 9 * time.Second}})
		},
		"memory": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{MemoryMax: 200 * svc.MiB}})
		},
		"workspace size": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, c, svc.Config{WorkspaceSize: 128 * svc.MiB})
		},
		"image id": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, newCache(t, svc.CacheConfig{URL: "dir://" + dir, ImageID: "other-image"}), svc.Config{})
		},
		"toolchains": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, newCache(t, svc.CacheConfig{URL: "dir://" + dir, Toolchains: []string{"gcc-13"}}), svc.Config{})
		},
		"namespace": func(t *testing.T) *svc.Sandbox {
			return newCacheSandbox(t, newCache(t, svc.CacheConfig{URL: "dir://" + dir, Namespace: "other"}), svc.Config{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			want := 0
			if name == "same everything" {
				want = 1 // another instance on the same store
			}
			if got := runReq(t, mk(t), req(nil)).Cache.ReplayedSteps; got != want {
				t.Errorf("replayed %d, want %d", got, want)
			}
		})
	}
}

func TestCacheTTL(t *testing.T) {
	clock := newTestClock()
	c := newCache(t, svc.CacheConfig{TTL: time.Hour, Now: clock.Now})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(svc.Single(sh("echo hi")))
	wantSummary(t, runReq(t, sb, req), 0, 1)
	clock.Add(59 * time.Minute)
	wantSummary(t, runReq(t, sb, req), 1, 0)
	// A replay renews the layer.
	clock.Add(59 * time.Minute)
	wantSummary(t, runReq(t, sb, req), 1, 0)
	clock.Add(time.Hour)
	wantSummary(t, runReq(t, sb, req), 0, 1)
	wantSummary(t, runReq(t, sb, req), 1, 0)
}

// testClock is a clock the tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestCacheDrop(t *testing.T) {
	dir := t.TempDir()
	a := newCache(t, svc.CacheConfig{URL: "dir://" + dir})
	b := newCache(t, svc.CacheConfig{URL: "dir://" + dir}) // another instance
	other := newCache(t, svc.CacheConfig{URL: "dir://" + dir, Namespace: "other"})
	sbA := newCacheSandbox(t, a, svc.Config{})
	sbOther := newCacheSandbox(t, other, svc.Config{})
	req := cached(svc.Single(sh("echo 1 > f")), svc.Single(sh("cat f")))
	wantSummary(t, runReq(t, sbA, req), 0, 2)
	wantSummary(t, runReq(t, sbOther, req), 0, 1+1)

	n, err := b.Drop(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Drop: %d, %v; want 2 layers", n, err)
	}
	// Gone for every instance of the namespace...
	wantSummary(t, runReq(t, sbA, req), 0, 2)
	// ...and only for it.
	wantSummary(t, runReq(t, sbOther, req), 2, 0)
	if n, err := b.Drop(context.Background()); err != nil || n != 2 {
		t.Errorf("second Drop: %d, %v", n, err)
	}
	if n, err := b.Drop(context.Background()); err != nil || n != 0 {
		t.Errorf("Drop of nothing: %d, %v", n, err)
	}
}

func TestCacheOutcomesNotStored(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{WallTimeout: 500 * time.Millisecond, OutputLimit: 4 * svc.KiB}})
	for _, tc := range []struct {
		name    string
		script  string
		outcome svc.Outcome
	}{
		{"timeout", "sleep 5", svc.OutcomeTimedOut},
		{"output limit", "head -c 100000 /dev/zero", svc.OutcomeOutputLimit},
		{"signal", "kill -TERM $$", svc.OutcomeSignaled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := cached(svc.Single(sh(tc.script)), svc.Single(sh("echo after")))
			for range 2 {
				resp := runReq(t, sb, req)
				if o := resp.Results[0].Results[0].Outcome; o != tc.outcome {
					t.Fatalf("outcome %s", o)
				}
				// Not stored, and neither is what follows.
				wantSummary(t, resp, 0, 0)
			}
		})
	}
	// A socket in the workspace (FIFOs and devices cannot be made under
	// compile_v2): no layer holds one.
	req := cached(svc.Single(sh(`python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'`)), svc.Single(sh("echo after")))
	wantSummary(t, runReq(t, sb, req), 0, 0)
	wantSummary(t, runReq(t, sb, req), 0, 0)

	// A failing exit (a compile error) is deterministic: stored, and
	// replayed with stop_on_failure's effect.
	req = cached(svc.Single(sh("echo 'error: no' >&2; exit 1")), svc.Single(sh("echo after")))
	req.StopOnFailure = true
	wantSummary(t, runReq(t, sb, req), 0, 1)
	resp := runReq(t, sb, req)
	wantSummary(t, resp, 1, 0)
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 1)
	if r := resp.Results[1].Results[0]; r.Outcome != svc.OutcomeNotStarted {
		t.Errorf("after a replayed failure: %+v", r)
	}
}

func TestCacheParallelStep(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(
		svc.Parallel(sh("echo a > a; echo A"), sh("echo b > b; echo B")),
		svc.Single(noCache(sh("cat a b"))),
	)
	first := runReq(t, sb, req)
	wantSummary(t, first, 0, 1)
	second := runReq(t, sb, req)
	wantSummary(t, second, 1, 0)
	sameResults(t, &svc.Response{Results: first.Results[:1]}, &svc.Response{Results: second.Results[:1]})
	if !second.Results[0].Parallel || len(second.Results[0].Results) != 2 || second.Results[0].Results[1].Stdout != "B\n" {
		t.Errorf("parallel results %+v", second.Results[0])
	}
	if got := stdout(second, 1); got != "a\nb\n" {
		t.Errorf("stdout %q", got)
	}
}

// TestCacheSingleFlight sends identical requests at once: each step runs
// once, and every request gets the same results.
func TestCacheSingleFlight(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := func() *svc.Request {
		return cached(
			svc.Single(sh("sleep 0.3; date +%s%N > stamp; cat stamp")),
			svc.Single(sh("cat stamp; date +%s%N")),
		)
	}
	const n = 4
	resps := make([]*svc.Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { resps[i] = runReq(t, sb, req()) })
	}
	wg.Wait()
	stored, replayed := 0, 0
	for i, r := range resps {
		stored += r.Cache.StoredSteps
		replayed += r.Cache.ReplayedSteps
		if i > 0 {
			sameResults(t, resps[0], r)
		}
	}
	if stored != 2 || replayed != 2*n-2 {
		t.Errorf("stored %d, replayed %d; want 2 and %d", stored, replayed, 2*n-2)
	}
	if s := c.Stats(); s.Stores != 2 || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
	assertClean(t, sb)
}

// TestCacheSingleFlightWaiterCancel: a request waiting for another's step
// gives up at its own deadline.
func TestCacheSingleFlightWaiterCancel(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := func() *svc.Request { return cached(svc.Single(sh("sleep 3"))) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		runReq(t, sb, req())
	}()
	// Wait for the first request to be executing its step: it counted
	// the miss.
	for c.Stats().Misses == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.Run(ctx, req())
	if svc.CodeOf(err) != svc.CodeDeadlineExceeded {
		t.Errorf("waiter: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the waiter returned after %v", d)
	}
	<-done
}

// hostile replaces the stored layer of req's first step by one with the
// given entries, and checks that a run replays none of it, leaves outside
// alone, and stores a good layer again.
func TestCacheHostileLayer(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(svc.Single(sh("echo good > f; echo good")), svc.Single(noCache(sh("ls -A; cat f"))))
	wantSummary(t, runReq(t, sb, req), 0, 1)
	key := svc.StepKeysForTest(sb, req)[0]
	path := svc.LayerPathForTest(c, key)
	const results = `[{"outcome":"exited","exit_code":0,"stdout":"HOSTILE\n","stats":{"wall_time_ms":1}}]`
	type E = svc.LayerEntryForTest
	for _, tc := range []struct {
		name    string
		entries []E
	}{
		{"symlink out, then a file through it", []E{
			{Kind: 'l', Path: "esc", Target: outside},
			{Kind: 'f', Path: "esc/pwned", Mode: 0o644, Content: "x"},
		}},
		{"relative symlink out, then a directory through it", []E{
			{Kind: 'l', Path: "esc", Target: "../../../../../../../../../../" + outside},
			{Kind: 'd', Path: "esc/pwned", Mode: 0o777},
		}},
		{"symlink out, then a whiteout through it", []E{
			{Kind: 'l', Path: "esc", Target: outside},
			{Kind: 'w', Path: "esc/victim"},
		}},
		{"symlink out, then a symlink through it", []E{
			{Kind: 'l', Path: "esc", Target: outside},
			{Kind: 'l', Path: "esc/pwned", Target: "/"},
		}},
		{"dot-dot file", []E{{Kind: 'f', Path: "../../../../../../../.." + outside + "/pwned", Mode: 0o644, Content: "x"}}},
		{"dot-dot inside", []E{{Kind: 'f', Path: "a/../../pwned", Mode: 0o644, Content: "x"}}},
		{"dot-dot whiteout", []E{{Kind: 'w', Path: ".."}}},
		{"absolute path", []E{{Kind: 'f', Path: outside + "/pwned", Mode: 0o644, Content: "x"}}},
		{"missing parent", []E{{Kind: 'f', Path: "nodir/f", Mode: 0o644, Content: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, svc.EncodeLayerForTest(key, results, tc.entries), 0o600); err != nil {
				t.Fatal(err)
			}
			errs := c.Stats().Errors
			resp := runReq(t, sb, req)
			wantSummary(t, resp, 0, 1) // executed, and a good layer stored
			wantReplayed(t, resp, false, false)
			if got := stdout(resp, 0); got != "good\n" {
				t.Errorf("step 0 stdout %q", got)
			}
			if got := stdout(resp, 1); got != "f\ngood\n" {
				t.Errorf("the workspace holds more than the step made: %q", got)
			}
			if got := c.Stats().Errors - errs; got != 1 {
				t.Errorf("%d errors counted, want 1", got)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 || entries[0].Name() != "victim" {
				t.Errorf("outside the workspace: %v", entries)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
				t.Errorf("victim: %q %v", b, err)
			}
			wantSummary(t, runReq(t, sb, req), 1, 0)
		})
	}
	assertClean(t, sb)
}

func TestCacheCorruptLayerIsAMiss(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	req := cached(svc.Single(sh("head -c 5000 /dev/urandom > f; echo hi")))
	wantSummary(t, runReq(t, sb, req), 0, 1)
	path := svc.LayerPathForTest(c, svc.StepKeysForTest(sb, req)[0])
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		func(b []byte) []byte { return b[:len(b)-1] },
		func(b []byte) []byte { return nil },
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, damage(b), 0o600); err != nil {
			t.Fatal(err)
		}
		errs := c.Stats().Errors
		wantSummary(t, runReq(t, sb, req), 0, 1)
		if c.Stats().Errors != errs+1 {
			t.Errorf("errors %d, want %d", c.Stats().Errors, errs+1)
		}
		wantSummary(t, runReq(t, sb, req), 1, 0)
	}
}

// TestCacheStoreFailureIsAMiss: a store that cannot be written to is
// counted, and requests go on.
func TestCacheStoreFailureIsAMiss(t *testing.T) {
	dir := t.TempDir()
	c := newCache(t, svc.CacheConfig{URL: "dir://" + dir})
	sb := newCacheSandbox(t, c, svc.Config{})
	// The namespace directory replaced by a file: nothing can be stored.
	ns := filepath.Join(dir, "default")
	if err := os.RemoveAll(ns); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ns, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	req := cached(svc.Single(sh("echo hi")), svc.Single(sh("echo there")))
	for range 2 {
		resp := runReq(t, sb, req)
		wantSummary(t, resp, 0, 0)
		if stdout(resp, 1) != "there\n" {
			t.Errorf("results %+v", resp.Results)
		}
	}
	if s := c.Stats(); s.Errors == 0 || s.Stores != 0 || s.Misses != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestCacheReplayKeepsOutputBudget: a replayed step's output counts
// against the request's output limit as it did in its run.
func TestCacheReplayKeepsOutputBudget(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{Limits: svc.Limits{OutputLimit: 64 * svc.KiB, RequestOutputLimit: 80 * svc.KiB}})
	req := cached(
		svc.Single(sh("head -c 50000 /dev/zero | tr '\\0' a")),
		svc.Single(noCache(sh("head -c 50000 /dev/zero | tr '\\0' b"))),
	)
	first := runReq(t, sb, req)
	second := runReq(t, sb, req)
	wantSummary(t, second, 1, 0)
	a, b := first.Results[1].Results[0], second.Results[1].Results[0]
	if a.Outcome != svc.OutcomeOutputLimit || !reflect.DeepEqual([]any{a.Outcome, len(a.Stdout)}, []any{b.Outcome, len(b.Stdout)}) {
		t.Errorf("after the run: %s %d bytes; after the replay: %s %d bytes", a.Outcome, len(a.Stdout), b.Outcome, len(b.Stdout))
	}
}

func TestCacheConcurrentRequestsOfManyKinds(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for j := range 3 {
				req := cached(
					svc.Single(sh(fmt.Sprintf("echo %d > f", i%3))),
					svc.Single(sh(fmt.Sprintf("cat f; echo %d", j))),
				)
				resp := runReq(t, sb, req)
				if got, want := stdout(resp, 1), fmt.Sprintf("%d\n%d\n", i%3, j); got != want {
					t.Errorf("stdout %q, want %q", got, want)
				}
			}
		})
	}
	wg.Wait()
	// 3 first steps and 9 second steps, each made by two of the six
	// goroutines, each stored once: a request whose lookup before
	// admission missed a step, and which reaches that step after the
	// other request finished it, looks it up again (cacheRun.step).
	if s := c.Stats(); s.Errors != 0 || s.Stores != 3+9 {
		t.Errorf("stats %+v, want %d stores", s, 3+9)
	}
	assertClean(t, sb)
}

// TestCacheLayerTooLarge: a layer over the workspace size, or over what a
// dir store holds, is not stored, and that is no error.
func TestCacheLayerTooLarge(t *testing.T) {
	c := newCache(t, svc.CacheConfig{})
	sb := newCacheSandbox(t, c, svc.Config{WorkspaceSize: svc.MiB})
	req := cached(svc.Single(sh("head -c 1000000 /dev/zero > f; head -c 100000 /dev/zero | tr '\\0' x")), svc.Single(sh("echo after")))
	for range 2 {
		resp := runReq(t, sb, req)
		expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
		wantSummary(t, resp, 0, 0)
	}
	small := newCache(t, svc.CacheConfig{MaxBytes: 100 * svc.KiB})
	sb2 := newCacheSandbox(t, small, svc.Config{})
	req = cached(svc.Single(sh("head -c 200000 /dev/zero > f")))
	wantSummary(t, runReq(t, sb2, req), 0, 0)
	req = cached(svc.Single(sh("head -c 20000 /dev/zero > f")))
	wantSummary(t, runReq(t, sb2, req), 0, 1)
	for _, c := range []*svc.StepCache{c, small} {
		if s := c.Stats(); s.Errors != 0 {
			t.Errorf("stats %+v", s)
		}
	}
}

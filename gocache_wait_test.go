package svc_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestGoBuildWaitsForCache: while the Go build cache is being prepared
// (its stand-in held), GoBuildCacheState says preparing; a request without
// go runs at once with an empty cache; a go task whose wall limit passes
// while it waits ends timed_out, and its request goes on without the
// cache; a request with a go task waits, and once the cache is ready,
// runs with it.
func TestGoBuildWaitsForCache(t *testing.T) {
	requireGo(t)
	defer svc.SetGoCacheCmdForTest(standInCmd...)()
	state, err := os.MkdirTemp("", "svc-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(state)
	if err := os.Chmod(state, 0o711); err != nil {
		t.Fatal(err)
	}
	logs := new(lockedBuffer)
	sb := &standIn{state: state, logs: logs}
	// Generous wall limits: the waiting request must outlast the
	// stand-in's build on a loaded machine.
	sb.Sandbox, err = svc.New(svc.Config{StateDir: state, UIDBase: svctest.UIDBase(), GoBuildCache: state + "/gocache",
		ImageID: "image-wait", Limits: svc.Limits{WallTimeout: 10 * time.Minute, OverallTimeout: 20 * time.Minute},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.close(t)
	if s := sb.GoBuildCacheState(); s != svc.GoBuildCachePreparing {
		t.Fatalf("state %q at start, want preparing", s)
	}

	r := one(t, sb.Sandbox, lsGoCache)
	if !strings.Contains(r.Stdout, "No such file") {
		t.Errorf("a request without go, while the cache is prepared: %q, want no cache and no wait", r.Stdout)
	}
	short := goTask("", "env", "GOCACHE")
	short.Limits.WallTimeout = 50 * time.Millisecond
	resp := run(t, sb.Sandbox, svc.Single(short), svc.Single(lsGoCache))
	if r := resp.Results[0].Results[0]; r.Outcome != svc.OutcomeTimedOut {
		t.Errorf("a go task whose 50 ms wall limit passed waiting for the cache: %s, want timed_out", r.Outcome)
	}
	if out := resp.Results[1].Results[0].Stdout; !strings.Contains(out, "No such file") {
		t.Errorf("a go task with a 50 ms wall limit, while the cache is prepared: then %q, want no cache", out)
	}
	if s := sb.GoBuildCacheState(); s != svc.GoBuildCachePreparing {
		t.Fatalf("state %q while held, want preparing", s)
	}

	done := make(chan *svc.Response, 1)
	go func() {
		resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
			svc.Single(goTask("", "env", "GOCACHE")), svc.Single(lsGoCache)}})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- resp
	}()
	deadline := time.Now().Add(5 * time.Minute)
	for svc.GoCacheWaitersForTest(sb.Sandbox) == 0 {
		select {
		case resp := <-done:
			t.Fatalf("the go request did not wait for the cache: %+v", resp)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the go request did not start waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
	sb.release(t)
	resp = <-done
	if resp == nil {
		return
	}
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
	if out := resp.Results[1].Results[0].Stdout; !strings.HasPrefix(out, "00\n01\n02\n") {
		t.Errorf("the go request, once the cache was ready: %q, want the cache's entries", out)
	}
	if s := sb.GoBuildCacheState(); s != svc.GoBuildCacheReady {
		t.Errorf("state %q after the preparation, want ready", s)
	}
	if !strings.Contains(logs.String(), "a request with a go build waited for it") {
		t.Errorf("no log of the wait:\n%s", logs)
	}
	assertClean(t, sb.Sandbox)
}

// TestGoBuildCacheStates: a Sandbox without a Go build cache says off,
// and one whose preparation failed says failed; neither makes a go
// request wait.
func TestGoBuildCacheStates(t *testing.T) {
	requireGo(t)
	if s := newSandbox(t, svc.Config{}).GoBuildCacheState(); s != svc.GoBuildCacheOff {
		t.Errorf("without GoBuildCache: %q, want off", s)
	}
	restore := svc.SetGoCacheCmdForTest("false")
	sb := newStandIn(t, "", "", "image-fails")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := sb.WaitGoBuildCache(ctx); err == nil {
		t.Error("WaitGoBuildCache: nil, want the failure")
	}
	if s := sb.GoBuildCacheState(); s != svc.GoBuildCacheFailed {
		t.Errorf("after a failed preparation: %q, want failed", s)
	}
	expect(t, one(t, sb.Sandbox, goTask("", "env", "GOCACHE")), svc.OutcomeExited, 0)
	sb.close(t)
	restore()
}

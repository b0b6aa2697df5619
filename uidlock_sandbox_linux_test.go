package svc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// TestHostIDsTaken: a second Sandbox whose host ids overlap a running
// one's, with a state dir of its own, fails New, naming the range and the
// first; once the first is closed it starts.
func TestHostIDsTaken(t *testing.T) {
	requireRoot(t)
	stateDir := func() string {
		dir, err := os.MkdirTemp("", "svc-ids-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	lim := svc.Limits{MaxConcurrency: 2, MaxParallelTasks: 1}
	base := svctest.UIDBase()
	dirA := stateDir()
	a, err := svc.New(svc.Config{StateDir: dirA, UIDBase: base, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closeA := func() {
		if !closed {
			closed = true
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := a.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	}
	t.Cleanup(closeA)
	first, count := a.HostIDs()

	// Not the same base: the second range starts inside the first.
	cfgB := svc.Config{StateDir: stateDir(), UIDBase: base + count - 2, Limits: lim}
	b, err := svc.New(cfgB)
	if err == nil {
		b.Close(context.Background())
		t.Fatalf("New with ids %d.. while ids %d..%d run: no error", cfgB.UIDBase, first, first+count-1)
	}
	want := fmt.Sprintf("host ids %d to %d (UIDBase, SANDBOX_UID_BASE %d) overlap ids %d to %d, held by another svc instance (pid %d, state dir %s)",
		cfgB.UIDBase, cfgB.UIDBase+count-1, cfgB.UIDBase, first, first+count-1, os.Getpid(), dirA)
	if !strings.Contains(err.Error(), want) || !errors.Is(err, svc.ErrHostIDsInUse) || !errors.Is(err, svc.ErrSandboxSetupFailed) {
		t.Fatalf("New: %v\nwant sandbox_setup_failed, ErrHostIDsInUse and %q", err, want)
	}
	// The first is untouched by the refused one.
	if resp, err := a.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "true"})}}); err != nil || resp.Results[0].Results[0].Outcome != svc.OutcomeExited {
		t.Fatalf("the first after the refusal: %v", err)
	}

	closeA()
	b = newSandbox(t, cfgB)
	if resp, err := b.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "true"})}}); err != nil || resp.Results[0].Results[0].Outcome != svc.OutcomeExited {
		t.Fatalf("the second, once the first closed: %v", err)
	}
}

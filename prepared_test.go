package svc_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// TestPreparedMixedProfiles: requests whose first tasks alternate between
// native_v2 and the default compile_v2 still take workspaces prepared
// ahead of them (host.expected then prepares a cell for no profile in
// particular), and preparing them logs no error.
func TestPreparedMixedProfiles(t *testing.T) {
	logs := new(lockedBuffer)
	sb := newSandbox(t, svc.Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	// The pool holds at least one prepared workspace: each request
	// below finds one if preparing works.
	waitReady := func(i int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for sb.WorkspaceStats().Ready == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("before request %d: no workspace prepared ahead (%+v); log:\n%s", i, sb.WorkspaceStats(), logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	const n = 8
	for i := range n {
		waitReady(i)
		task := svc.Task{Cmd: "echo", Args: []string{"hi"}}
		if i%2 == 0 {
			task.SandboxProfile = svc.ProfileNativeV2
		}
		r := one(t, sb, task)
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != "hi\n" {
			t.Errorf("request %d: stdout %q", i, r.Stdout)
		}
	}
	waitReady(n) // prepared after a mix, for no profile in particular
	st := sb.WorkspaceStats()
	if st.Prepared != n || st.Built != 0 {
		t.Errorf("workspaces %+v, want all %d prepared ahead and none built on a request's path", st, n)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("errors logged:\n%s", logs)
	}
	assertClean(t, sb)
}

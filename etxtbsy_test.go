package svc_test

import (
	"context"
	"os/exec"
	"sync"
	"testing"

	"github.com/svc-sandbox/svc"
)

// TestNoTextFileBusy: a program the service writes into the workspace (a
// replayed compile's binary, a placed script) runs in the next step even
// while the process embedding svc forks and execs all along. A child
// forked while the service held such a file open for writing would hold
// it until its own execve, and the task's execve would fail with ETXTBSY
// meanwhile (Go issue 22315): the service writes workspace files under
// syscall.ForkLock, which every fork of this process waits for.
func TestNoTextFileBusy(t *testing.T) {
	sb := newCacheSandbox(t, newCache(t, svc.CacheConfig{}), svc.Config{})
	yes := true
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-o", "prog", "prog.c"}, Cache: &yes,
			Files: map[string]svc.File{"prog.c": {Content: "char big[4 << 20] = {1};\nint main(void) { return big[0] - 1; }\n"}}}),
		svc.Single(svc.Task{Cmd: "./prog", SandboxProfile: svc.ProfileNativeV2}),
		svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "chmod +x run.sh && ./run.sh"},
			Files: map[string]svc.File{"run.sh": {Content: "#!/bin/sh\nexit 0\n"}}}),
	}}
	ctx, stop := context.WithCancel(context.Background())
	var forks sync.WaitGroup
	for range 6 {
		forks.Go(func() {
			for ctx.Err() == nil {
				exec.Command("/bin/true").Run()
			}
		})
	}
	defer forks.Wait()
	defer stop()
	for i := range 150 {
		resp, err := sb.Run(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for j, sr := range resp.Results {
			if r := sr.Results[0]; r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
				t.Fatalf("request %d, step %d: %s, exit %d, stderr %q", i, j, r.Outcome, r.ExitCode, r.Stderr)
			}
		}
		if i > 0 && resp.Cache.ReplayedSteps != 1 {
			t.Fatalf("request %d: the compile was not replayed: %+v", i, resp.Cache)
		}
	}
}

package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/svctest"
)

// TestTaskLimits: the client carries a task's Limits to the server, in
// both request shapes, and a raised one comes back as the server's
// limits_exceeded.
func TestTaskLimits(t *testing.T) {
	s := newServer(t, svctest.Config{})
	c := s.NewClient(client.Config{})
	ctx := context.Background()
	task := svc.Task{Cmd: "sh", Args: []string{"-c", "ulimit -s; ulimit -t"},
		Limits: svc.TaskLimits{MemoryMax: 64 * svc.MiB, CPUTimeLimit: 300 * time.Millisecond}}
	for _, legacy := range []bool{false, true} {
		resp, err := c.Execute(ctx, &svc.Request{Steps: []svc.Step{svc.Single(task), svc.Single(svc.Task{Cmd: "sh", Args: task.Args})}, Legacy: legacy})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []string{"65536\n2\n", "262144\n6\n"} {
			if r := resp.Results[i].Results[0]; r.Outcome != svc.OutcomeExited || r.Stdout != want {
				t.Errorf("legacy %v, step %d: %s %q, want %q", legacy, i, r.Outcome, r.Stdout, want)
			}
		}
	}
	task.Limits = svc.TaskLimits{PidsMax: 65}
	_, err := c.Run(ctx, svc.Single(task))
	var e *svc.Error
	if !errors.As(err, &e) || e.Code != svc.CodeLimitsExceeded || e.Msg != "steps[0].limits.pids_max: 65 exceeds the service's 64" {
		t.Errorf("raised: %v", err)
	}
	// A duration the wire cannot carry is refused before anything is sent.
	task.Limits = svc.TaskLimits{WallTimeout: 1500 * time.Microsecond}
	if _, err := c.Run(ctx, svc.Single(task)); !errors.Is(err, svc.ErrInvalidRequest) {
		t.Errorf("1.5 ms: %v", err)
	}
}

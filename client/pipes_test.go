package client_test

import (
	"context"
	"testing"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
	"github.com/svc-sandbox/svc/svctest"
)

// TestStdinFrom: the client sends Task.StdinFrom as stdin_from: two tasks
// that feed each other run, and a task that feeds itself is refused by
// the server with invalid_request.
func TestStdinFrom(t *testing.T) {
	s := newServer(t, svctest.Config{})
	c := s.NewClient(client.Config{})
	ctx := context.Background()
	zero, one := 0, 1
	resp, err := c.Run(ctx, svc.Parallel(
		svc.Task{Cmd: "sh", Args: []string{"-c", "echo ping; read x; echo got $x >&2"}, StdinFrom: &one},
		svc.Task{Cmd: "sh", Args: []string{"-c", "read x; echo pong"}, StdinFrom: &zero},
	))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Results[0].Results
	if r[0].Stdout != "ping\n" || r[0].Stderr != "got pong\n" || r[1].Stdout != "pong\n" {
		t.Errorf("results %+v", r)
	}
	_, err = c.Run(ctx, svc.Parallel(svc.Task{Cmd: "cat", StdinFrom: &zero}, svc.Task{Cmd: "true"}))
	if re := wantCode(t, err, svc.CodeInvalidRequest); re == nil || re.StatusCode != 400 {
		t.Errorf("self: %v", err)
	}
}

package svctest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

func TestNewServer(t *testing.T) {
	s := svctest.NewServer(t, svctest.Config{})
	if s.Key == "" || s.URL == "" || s.Files == nil {
		t.Fatalf("server %+v", s)
	}
	resp := s.Do("POST", "/execute", `{"steps": [{"cmd": "echo", "args": ["hi"]}]}`)
	r, err := svc.DecodeResponse(resp.Body)
	resp.Body.Close()
	if err != nil || r.Results[0].Results[0].Stdout != "hi\n" {
		t.Fatalf("%v %+v", err, r)
	}
	// The state dir must be traversable by the sandbox identities.
	fi, err := os.Stat(s.StateDir)
	if err != nil || fi.Mode().Perm()&0o001 == 0 {
		t.Errorf("state dir %s: %v %v", s.StateDir, fi.Mode(), err)
	}
}

// TestCloseWaitsForInFlight: Close lets a running request finish, then
// shuts down.
func TestCloseWaitsForInFlight(t *testing.T) {
	s := svctest.NewServer(t, svctest.Config{})
	got := make(chan int, 1)
	go func() {
		req := s.Request("POST", "/execute", strings.NewReader(`{"steps": [{"cmd": "sleep", "args": ["1"]}]}`))
		resp, err := s.Client.Do(req)
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Sandbox.SlotsInUse() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	s.Close()
	if code := <-got; code != 200 {
		t.Errorf("the request in flight got %d", code)
	}
	if _, err := http.Get(s.URL + "/health"); err == nil {
		t.Error("still serving after Close")
	}
	s.Close() // idempotent
}

func TestNew(t *testing.T) {
	sb := svctest.New(t, svc.Config{})
	if sb.Config().Files == nil {
		t.Fatal("no file store")
	}
	resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "true"})}})
	if err != nil || resp.Results[0].Results[0].Outcome != svc.OutcomeExited {
		b, _ := json.Marshal(resp)
		t.Fatalf("%v %s", err, b)
	}
}

// TestPrivateIDRanges: servers get distinct host id ranges, away from the
// library's default.
func TestPrivateIDRanges(t *testing.T) {
	a, b := svctest.New(t, svc.Config{}), svctest.New(t, svc.Config{})
	ba, bb := a.Config().UIDBase, b.Config().UIDBase
	if ba == bb || ba == 1_000_000 || bb == 1_000_000 {
		t.Errorf("id bases %d and %d", ba, bb)
	}
}

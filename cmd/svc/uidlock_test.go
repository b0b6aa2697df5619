package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeHostIDsTaken: a second svc serve, with a state dir of its own,
// whose SANDBOX_UID_BASE range overlaps a running one's exits at start
// with a message naming both ranges and the running one (its pid and
// state dir). Once that one is killed with SIGKILL, the kernel gives its
// range back: the second starts, on the killed one's state dir, which it
// cleans up.
func TestServeHostIDsTaken(t *testing.T) {
	base, err := strconv.Atoi(testUIDBase())
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"MAX_CONCURRENCY=2", "MAX_PARALLEL_TASKS=1"}
	dirA := stateDir(t)
	a := startProcess(t, append([]string{"STATE_DIR=" + dirA, "SANDBOX_UID_BASE=" + strconv.Itoa(base)}, common...)...)

	// Not the same base: the second range starts inside the first.
	second := "SANDBOX_UID_BASE=" + strconv.Itoa(base+2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "serve")
	cmd.Env = append(os.Environ(), append([]string{"SVC_TEST_MAIN=1", "LISTEN_ADDR=127.0.0.1:0", "GO_BUILD_CACHE_DIR=off",
		"STATE_DIR=" + stateDir(t), second}, common...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second svc serve: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		fmt.Sprintf("svc: sandbox: host ids %d to ", base+2),
		fmt.Sprintf("overlap ids %d to ", base),
		fmt.Sprintf("held by another svc instance (pid %d, state dir %s)", a.cmd.Process.Pid, dirA),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("second svc serve says, without %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), `"msg":"serving"`) {
		t.Errorf("second svc serve served:\n%s", out)
	}

	a.cmd.Process.Kill()
	a.cmd.Wait()
	b := startProcess(t, append([]string{"STATE_DIR=" + dirA, second, "API_KEYS=ids-key"}, common...)...)
	b.key = "ids-key"
	if code, body := b.do(t, "POST", "/execute", `{"steps": [{"cmd": "echo", "args": ["mine now"]}]}`); code != 200 || !strings.Contains(body, `"stdout":"mine now\n"`) {
		t.Errorf("second svc serve, once the first was killed: %d %s", code, body)
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestVersion: svc version and svc --version print the module version
// /info reports, the Go version and the platform.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		cmd := exec.Command(os.Args[0], arg)
		cmd.Env = append(os.Environ(), "SVC_TEST_MAIN=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("svc %s: %v", arg, err)
		}
		want := "svc " + version() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
		if !strings.HasPrefix(string(out), want) || !strings.HasSuffix(string(out), ")\n") {
			t.Errorf("svc %s: %q, want %q...", arg, out, want)
		}
	}
	if err := versionCmd([]string{"extra"}, new(bytes.Buffer)); err == nil {
		t.Error("svc version extra: accepted")
	}
}

// TestRunBesideServer: svc run on a running server's state dir, or on
// its range of host ids, stops saying which flags give it its own.
func TestRunBesideServer(t *testing.T) {
	dir, base := stateDir(t), testUIDBase()
	startProcess(t, "STATE_DIR="+dir, "SANDBOX_UID_BASE="+base)
	err := runCmd([]string{"--state-dir", dir, "--sandbox-uid-base", testUIDBase(), "../../examples/hello.json"}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "in use by another svc instance") || !strings.Contains(err.Error(), "pass --state-dir") {
		t.Errorf("svc run on the server's state dir: %v, want it in use and --state-dir named", err)
	}
	err = runCmd([]string{"--state-dir", stateDir(t), "--sandbox-uid-base", base, "../../examples/hello.json"}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "--sandbox-uid-base") {
		t.Errorf("svc run on the server's host ids: %v, want --sandbox-uid-base named", err)
	}
}

// TestServeConcurrencyRaised: MAX_PARALLEL_TASKS above the CPUs, with
// MAX_CONCURRENCY not set, raises the task slots, and the log says so.
func TestServeConcurrencyRaised(t *testing.T) {
	n := runtime.NumCPU() + 9
	p := startInProcess(t, map[string]string{"MAX_PARALLEL_TASKS": strconv.Itoa(n)})
	logs := p.logs.String()
	if !strings.Contains(logs, `"level":"WARN","msg":"MAX_CONCURRENCY is not set`) ||
		!strings.Contains(logs, `"max_concurrency":`+strconv.Itoa(n)+`,"max_parallel_tasks":`+strconv.Itoa(n)) {
		t.Errorf("no warning of the raised task slots:\n%s", logs)
	}
}

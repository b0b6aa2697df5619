package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/svc-sandbox/svc"
)

// TestRunExample runs the README's first command's request through svc run.
func TestRunExample(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sandboxes use namespaces, cgroups and mounts")
	}
	dir, err := os.MkdirTemp("", "svc-run-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var out bytes.Buffer
	if err := runCmd([]string{"--state-dir", dir, "--sandbox-uid-base", testUIDBase(), "../../examples/hello.json"}, &out); err != nil {
		t.Fatal(err)
	}
	var resp svc.Response
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(resp.Results) != 2 {
		t.Fatalf("results: %s", out.String())
	}
	if r := resp.Results[1].Results[0]; r.Outcome != svc.OutcomeExited || r.Stdout != "hello from the sandbox\n" {
		t.Fatalf("run step: %+v", r)
	}
}

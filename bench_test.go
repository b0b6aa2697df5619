package svc_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/svc-sandbox/svc"
)

// BenchmarkRunTrue is a one-task request of /bin/true through the library.
func BenchmarkRunTrue(b *testing.B) {
	sb := newSandbox(b, svc.Config{})
	req := &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "/bin/true"})}}
	for b.Loop() {
		resp, err := sb.Run(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if r := resp.Results[0].Results[0]; r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
			b.Fatalf("%+v", r)
		}
	}
}

// BenchmarkExecTrue is the baseline: os/exec of /bin/true.
func BenchmarkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

package svc_test

import (
	"context"
	"os/exec"
	"syscall"
	"testing"

	"github.com/svc-sandbox/svc"
)

// BenchmarkRunTrue is a one-task request of /bin/true through the library.
func BenchmarkRunTrue(b *testing.B) { benchRunTrue(b, newSandbox(b, svc.Config{})) }

// BenchmarkRunTrueGoCache is BenchmarkRunTrue with the prepared Go build
// cache: each request mounts its overlay.
func BenchmarkRunTrueGoCache(b *testing.B) { benchRunTrue(b, goCacheSandbox(b, svc.Config{})) }

// benchRunTrue runs /bin/true requests in sb.
func benchRunTrue(b *testing.B, sb *svc.Sandbox) {
	benchRequest(b, sb, &svc.Request{Steps: []svc.Step{svc.Single(svc.Task{Cmd: "/bin/true"})}})
}

// benchRequest runs req, a one-task request whose task exits 0, in sb.
// It reports the CPU time of this process per request too: the service's
// own, with what it has the kernel do for it (its mounts, cgroups, the
// teardowns), without the task's.
func benchRequest(b *testing.B, sb *svc.Sandbox, req *svc.Request) {
	cpu := processCPU()
	for b.Loop() {
		resp, err := sb.Run(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if r := resp.Results[0].Results[0]; r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
			b.Fatalf("%+v", r)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time this process has used, in nanoseconds.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkExecTrue is the baseline: os/exec of /bin/true.
func BenchmarkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

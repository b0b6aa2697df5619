package svc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkRequestEnv makes and removes a request's environment as the
// preparers and the background teardown do for every request: its tmpfs
// with /svc and /tmp, a clone of its /tmp (with what is mounted in it) as
// a task's attach takes, and, with a prepared Go build cache (a stand-in
// of 256 directories here), the cache's overlay.
func BenchmarkRequestEnv(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: sandboxes use namespaces, cgroups and mounts")
	}
	for _, gocache := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "gocache"}[gocache], func(b *testing.B) {
			state, err := os.MkdirTemp("", "svc-test-")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(state)
			if err := os.Chmod(state, 0o711); err != nil {
				b.Fatal(err)
			}
			cfg := Config{StateDir: state, UIDBase: UIDBaseForTest()}
			if gocache {
				cfg.GoBuildCache, cfg.ImageID = filepath.Join(state, "gocache"), "bench"
				for i := range 256 {
					if err := os.MkdirAll(filepath.Join(cfg.GoBuildCache, "bench", fmt.Sprintf("%02x", i)), 0o777); err != nil {
						b.Fatal(err)
					}
				}
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				s.Close(ctx)
			}()
			if gocache != (hostOf(s).goCacheLower() != "") {
				b.Fatalf("Go build cache ready: %q", hostOf(s).goCacheLower())
			}
			slot := s.takeID()
			defer s.putID(slot)
			cpu := processCPU()
			for b.Loop() {
				rq, err := hostOf(s).newRequest(s.newRequestID(), slot)
				if err != nil {
					b.Fatal(err)
				}
				fd, err := unix.OpenTree(unix.AT_FDCWD, rq.tmp, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
				if err != nil {
					b.Fatal(err)
				}
				unix.Close(fd)
				if err := rq.close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time this process has used, in nanoseconds.
func processCPU() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

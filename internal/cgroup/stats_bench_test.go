package cgroup

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkStats is the cost of reading a task group's statistics, which
// a request pays after its task and before its answer.
func BenchmarkStats(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: makes cgroups")
	}
	h, err := Detect()
	if err != nil {
		b.Skip(err)
	}
	g, err := h.Service("", fmt.Sprintf("bench-stats-%d", os.Getpid()))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Destroy()
	c, err := g.Child("t")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsOpened is the same read through files opened ahead, as a
// task's are.
func BenchmarkStatsOpened(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: makes cgroups")
	}
	h, err := Detect()
	if err != nil {
		b.Skip(err)
	}
	g, err := h.Service("", fmt.Sprintf("bench-stats-%d", os.Getpid()))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Destroy()
	c, err := g.Child("t")
	if err != nil {
		b.Fatal(err)
	}
	r, err := c.OpenStats()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, err := r.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

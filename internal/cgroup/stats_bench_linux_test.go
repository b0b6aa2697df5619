package cgroup

import (
	"fmt"
	"os"
	"testing"
)

// benchService returns a service group of the benchmark's own, removed
// when it ends.
func benchService(b *testing.B) *Group {
	b.Helper()
	if os.Geteuid() != 0 {
		b.Skip("needs root: makes cgroups")
	}
	h, err := Detect()
	if err != nil {
		b.Skip(err)
	}
	g, err := h.Service("", fmt.Sprintf("bench-%d", os.Getpid()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Destroy() })
	return g
}

// benchTaskGroup returns a task group below a service group of its own,
// both removed when the benchmark ends.
func benchTaskGroup(b *testing.B) *Group {
	b.Helper()
	c, err := benchService(b).Child("t")
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkStats is the cost of reading a task group's statistics with
// every file opened for the read, as Group.Stats does.
func BenchmarkStats(b *testing.B) {
	c := benchTaskGroup(b)
	for b.Loop() {
		if _, err := c.Stats(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsOpened is the same read through files opened ahead, what
// a request pays after its task and before its answer.
func BenchmarkStatsOpened(b *testing.B) {
	r, err := benchTaskGroup(b).OpenStats()
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

// BenchmarkTaskGroup is a task group's life as a sandbox's request has it
// on this host's hierarchy: made below the service's group, its limits
// written, its statistics opened and read, removed. "held" reaches it
// through the service group's directories held open (Group.Hold), as the
// sandbox does; "path" walks every path from the root.
func BenchmarkTaskGroup(b *testing.B) {
	for _, held := range []bool{false, true} {
		b.Run(map[bool]string{false: "path", true: "held"}[held], func(b *testing.B) {
			g := benchService(b)
			if held {
				if err := g.Hold(); err != nil {
					b.Fatal(err)
				}
				defer g.Release()
			}
			for i := 0; b.Loop(); i++ {
				c, err := g.Child(fmt.Sprintf("t%d", i))
				if err != nil {
					b.Fatal(err)
				}
				if err := c.SetLimits(Limits{MemoryMax: 256 << 20, PidsMax: 64}); err != nil {
					b.Fatal(err)
				}
				r, err := c.OpenStats()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Stats(); err != nil {
					b.Fatal(err)
				}
				r.Close()
				if err := c.Remove(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

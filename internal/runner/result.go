package runner

import (
	"sync/atomic"
	"time"

	"github.com/svc-sandbox/svc/internal/initproc"
)

// Result is what happened to a task, before any interpretation.
type Result struct {
	Report          initproc.Report
	Stdout, Stderr  []byte
	StdoutTruncated bool
	StderrTruncated bool
	TimedOut        bool // the wall timeout killed it
	CPUExceeded     bool // the CPU limit killed it
	OutputExceeded  bool // an output limit killed it
	Cancelled       bool // ctx killed it
	WallTime        time.Duration
	// Watched: a listener saw every call the task's filter refused or
	// let through for it to know (Cell.Watched); Denied then counts the
	// refused calls by number, nil for none.
	Watched bool
	Denied  map[int32]int64
}

// Killed reports whether the runner killed the task.
func (r *Result) Killed() bool {
	return r.TimedOut || r.CPUExceeded || r.OutputExceeded || r.Cancelled
}

// Budget is a byte budget shared by several tasks' output streams. It is
// safe for concurrent use.
type Budget struct{ left atomic.Int64 }

// NewBudget returns a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{}
	b.left.Store(n)
	return b
}

// Spend takes n bytes (or what is left) without a stream: output that
// counts against the budget but was not read here, such as a step
// replayed from a cache.
func (b *Budget) Spend(n int64) { b.take(n) }

// take grants up to n bytes.
func (b *Budget) take(n int64) int64 {
	for {
		left := b.left.Load()
		g := min(n, left)
		if g <= 0 {
			return 0
		}
		if b.left.CompareAndSwap(left, left-g) {
			return g
		}
	}
}

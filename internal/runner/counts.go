package runner

import "sync/atomic"

// The counters tests and benchmarks read to tell what the runner made
// and reused: totals since the process started.

// netCounts count the network namespaces.
var netCounts struct {
	made, reused, kept, destroyed atomic.Int64
}

// NetnsCounts returns how many network namespaces were made, how many
// times one was handed to a cell again, and how many used ones were read
// unchanged and kept or changed and destroyed.
func NetnsCounts() (made, reused, kept, destroyed int64) {
	return netCounts.made.Load(), netCounts.reused.Load(), netCounts.kept.Load(), netCounts.destroyed.Load()
}

var shellCounts struct{ made, cells atomic.Int64 }

// ShellCounts returns how many shells were built and how many cells they
// gave out, so tests and benchmarks can tell a reused shell.
func ShellCounts() (made, cells int64) { return shellCounts.made.Load(), shellCounts.cells.Load() }

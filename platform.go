package svc

import "context"

// The platform seam: what the stages of a request need of the machine.
// On Linux, host implements platform (host_linux.go, shells_linux.go) and
// request implements workspace (request_linux.go, layer_linux.go); on
// other systems one unsupported type implements both and runs nothing
// (platform_other.go). Everything else in the package is pure logic over
// these two interfaces: the plan, the cache keys and walk, the outcomes.

// platform is the host side of a Sandbox: set up once by New (openHost),
// shared by its requests, closed by Close. It is safe for concurrent use.
type platform interface {
	// newWorkspace makes the workspace of a request that runs on identity
	// slot slot; prepareWorkspace makes one and builds the sandbox of its
	// first task, ahead of demand.
	newWorkspace(id string, slot int) (workspace, error)
	prepareWorkspace(ctx context.Context, id string, slot int) (workspace, error)
	// expectFirst records the profile of a request's first task: the
	// requests prepared later expect it.
	expectFirst(Profile)
	// background runs f off a request's critical path; close waits for
	// it.
	background(f func())
	// goCache is the Go build cache of Config.GoBuildCache, nil for none.
	// buildGoCache builds it in dir, in a sandbox of its own on identity
	// slot slot: a nil result is one another instance built.
	goCache() *goCache
	buildGoCache(ctx context.Context, id string, slot int, dir string) (*Result, error)
	// startCheck runs a task that does nothing, as New's last check that
	// the host gives a task its isolation, on identity slot 0.
	startCheck() error
	// cgroupVersion is the version of the cgroup hierarchy, 1 or 2; 0
	// where there are no cgroups.
	cgroupVersion() int
	// drain waits for the work in the background and closes the idle
	// shells, which the platform builds again as they are needed.
	drain() error
	// close waits for the work in the background and removes what the
	// platform holds: shells, cgroups, mounts, the state dir's lock.
	close() error
}

// workspace is a request's side of the platform: its workspace and /tmp,
// the identity its tasks run as, and the sandboxes of its tasks. The
// request's goroutine calls its methods one at a time.
type workspace interface {
	// identity is the identity slot the request runs as.
	identity() int
	// lacksGoCache reports whether the workspace has no Go build cache
	// while the platform has one ready: it was made before.
	lacksGoCache() bool
	// prepare builds the sandboxes of tasks, the next step's, in the
	// background.
	prepare(ctx context.Context, tasks []taskPlan)
	// runStep places the files of every task of step, then runs its
	// tasks concurrently. stored are the request's open stored files.
	runStep(ctx context.Context, step *stepPlan, stored storedFiles) (StepResult, error)
	// snapshot walks the workspace; writeLayer writes changes, the
	// difference between two snapshots, after the later one, with the
	// files' contents; applyLayer replays a layer. An error of applyLayer
	// leaves the workspace half changed.
	snapshot() (*tree, error)
	writeLayer(lw *layerWriter, changes []layerEntry, after *tree) error
	applyLayer(l *layer, key string) error
	// openOutput opens the file at p, a clean workspace-relative path,
	// to read a task's output (Task.Outputs), and returns its size: a
	// regular file reached without following a symlink at any
	// component, nor leaving the workspace's mount. Else it fails with
	// errOutputNotFound, errOutputNotRegular, or an error of the host.
	// Opening never waits (a FIFO, a lease).
	openOutput(p string) (outputReader, int64, error)
	// spendOutput takes a replayed step's output from the request's
	// output budget, as its run did.
	spendOutput(sr StepResult)
	// reset empties the workspace and /tmp and renews the output budget,
	// for a request that starts over.
	reset() error
	// discardCells ends the sandboxes built ahead that no task used;
	// close removes everything of the request.
	discardCells()
	close() error
}

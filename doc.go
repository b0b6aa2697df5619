// Package svc runs untrusted programs in Linux sandboxes and returns exact
// results: the library behind the svc server, for online judges, code
// runners and CI-like tools.
//
// A [Request] is an ordered list of steps; a [Step] is one [Task] or a set
// of tasks that run concurrently. All steps of a request share one
// workspace, mounted at /svc in the sandbox, and a scratch /tmp. Every task
// gets its own user, PID, mount, IPC, UTS and cgroup namespaces, a network
// namespace with only loopback that is as if no task had used it (new, or
// read unchanged since it was made), its own cgroup with memory, pids and
// CPU limits (on cgroup v1 the cpu and cpuacct groups are its sandbox's,
// which runs one task at a time and counts each task's CPU time from
// zero), and its own system-call filter. A task that fails (non-zero
// exit, timeout, out of memory, forbidden system call) does not fail the
// request: its [Result] carries the [Outcome]. An error from [Sandbox.Run] means the request was refused
// or could not be run; it is an [*Error] with a stable [Code]. Files go in
// inline or from a [FileStore] ([Task].Files), and come back out into it
// ([Task].Outputs). In a parallel step a task may read what another
// writes ([Task].StdinFrom): an interactor and a solution feed each
// other, and the service relays the bytes and returns each side's
// transcript.
//
//	sb, err := svc.New(svc.Config{})
//	if err != nil { ... }
//	defer sb.Close(context.Background())
//	resp, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{
//		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-o", "hello", "hello.c"},
//			Files: map[string]svc.File{"hello.c": {Content: src}}}),
//		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
//	}})
//
// # Lifecycle
//
// [New] checks the [Config], detects the cgroup hierarchy (v1 or v2),
// removes whatever a crashed instance with the same state directory left
// (processes, cgroups, mounts, workspaces), locks the state directory and
// starts preparing requests ahead of demand: a few (a quarter of
// Limits.MaxConcurrency, from 1 to 4) wait with their workspace (one
// size-limited tmpfs holding /svc and /tmp) and the sandbox of their
// first task built (its cgroup, a child of the service's, with the task's
// limits), its task process forked and waiting for its command. Each is
// used by one request and never reused.
//
// [Sandbox.Run] validates the request, takes as many task slots as its
// widest step has tasks (too few free: it waits for them up to
// Config.QueueTimeout, else capacity_exhausted), takes a prepared request
// (or prepares one), and runs the steps. A task's sandbox is built
// ahead; the sandboxes of the next step are built while a step runs. Once
// a task's processes are gone its result is returned, and its sandbox's
// mounts and cgroup are removed in the background, as is the request's
// workspace once Run returns. [Sandbox.Close] refuses new requests and
// those waiting for slots, kills running ones, removes prepared ones, waits for the background removals
// and removes the service cgroup.
//
// # Concurrency
//
// A Sandbox is safe for concurrent use; requests run in parallel up to
// Limits.MaxConcurrency task slots. A request that finds too few slots
// free is refused at once with capacity_exhausted, or, with
// [Config].QueueTimeout set, waits for them: requests are served strictly
// in arrival order, so a wide request is never starved by narrow ones
// behind it, and one still waiting after QueueTimeout is refused. Its
// overall timeout starts once it holds its slots. Cancelling the context
// of Run takes a waiting request out of the queue, and kills a running
// request's tasks; Run returns only once their processes are gone.
//
// # Step cache
//
// With a [StepCache] in [Config].Cache, steps declared deterministic are
// stored once and replayed on later requests instead of running again
// (spec 1.5, 4.1). A task is cacheable when its Cache says so, else its
// request's Cache, else always in a legacy request; a step is cacheable
// when all its tasks are. Only the leading run of cacheable steps goes
// through the cache: a step after a non-cacheable one depends on state
// that may differ between runs, and always runs.
//
// A step's layer is what it left behind: its results, statistics
// included, and its change to /svc (files, directories and symlinks made,
// changed or removed; modes and modification times). /tmp is not part
// of a layer. The layer is found by a key that chains: the hash of the
// previous step's key and this step's tasks (cmd, args, env, stdin,
// working_dir, the SHA-256 of each file, inline or stored, the resolved
// profile with a digest of its policy, the limits it lowers below the
// Sandbox's, [TaskLimits], its outputs and stdin_from), with the cache format,
// namespace, image id, toolchains, architecture, every [Limits] field and
// the workspace size at the root of the chain. A change of any of them
// misses.
//
// [Sandbox.Run] looks the steps of the leading run up in order. A hit is
// applied to the workspace and its results come back with Replayed set;
// the first miss runs, and so does everything after it. A step that runs
// in the leading run is stored when all its tasks ended exited (any exit
// status: a compile error is as deterministic as a success) without
// truncated output; a timeout, an OOM kill or a signal is not stored, and
// neither is any later step of the request. [Response].Cache counts the
// steps replayed and stored. Requests of one process that reach the same
// step at once run it once: the others wait for it, each under its own
// deadline, and replay it.
//
// The walks and writes are root's, in a workspace a request's tasks
// filled: every lookup resolves beneath the workspace without following
// a symlink or crossing a mount, a symlink is restored as a symlink, and
// a layer with an absolute path, a ".." or a path through a symlink is
// refused. A layer whose digest or key does not match is a miss and is
// removed; a replay that fails half-way is removed too, and the request
// starts over in an empty workspace without replays. A failing store
// (unreachable, full, damaged) never fails a request: the step runs, and
// the failure is logged and counted in [StepCache.Stats].
//
// The store is a directory (dir://, for the instances of one host or a
// shared volume) or a Redis server (redis://, for instances on several
// hosts). Layers expire a TTL after their last use; [StepCache.Drop]
// removes every layer of the namespace for every instance sharing it.
//
// # Go build cache
//
// With [Config].GoBuildCache set and Go's official distribution in the
// root filesystem's /usr/local/go, every sandbox sees a go.env of its own
// over /usr/local/go/go.env: the image's, with GOCACHE=/tmp/.gocache. go
// reads it for the defaults of its settings, so the task environment stays
// the fixed one, go keeps its build cache out of the workspace (and of the
// step cache's layers), and a task's own GOCACHE still wins. In the
// background after [New], the Sandbox prepares the cache once per image
// ([Config].ImageID): a task in a sandbox of its own, with the environment
// of every task (so that go computes the same keys) but larger limits (one
// CPU, 2 GiB, 10 minutes of CPU time), runs go build std; its cache, about
// 170 MiB for linux/amd64, is copied to GoBuildCache/<image> under a
// temporary name and renamed into place, so that a crash leaves no half
// cache. A later instance with the same directory and image uses it as it
// is; instances sharing the directory build one at a time (a lock in it),
// and one that waited uses what the other built. [Sandbox.WaitGoBuildCache]
// waits for it.
//
// Once it is ready, each request's /tmp/.gocache is an overlay: the
// prepared cache below, read-only and shared by every request, and an
// upper layer in the request's tmpfs, out of its tasks' reach. The tasks
// see the cache as their own: they add entries and change or remove any,
// what they write counts against the workspace size, and none of it
// reaches another request or the prepared cache. Every file of the
// prepared cache is dated 2100, so that go never rewrites one to mark it
// used (which would copy it up whole) and never trims it; each upper layer
// starts with a fresh trim.txt, so that go does not walk the cache to trim
// it. A warm go build of hello world compiles the program alone: about
// 0.2 s of CPU instead of 15. Until the cache is ready, or when preparing
// it failed (logged), each request's /tmp/.gocache starts empty.
//
// # Requirements
//
// Linux 5.12 or later (mount_setattr, openat2, close_range), root (or the
// capabilities to create namespaces, cgroups and mounts), cgroup v1 with
// the memory, pids, cpu and cpuacct controllers or cgroup v2 with memory,
// pids and cpu. The binary must be built with cgo: the child side of a
// sandbox is C that runs before the Go runtime starts, in a constructor
// of package internal/initproc. Importing svc is enough for any binary,
// test binaries and judges' harnesses included: the running binary starts
// a sealed copy of itself once, as the small process (the zygote) that
// clones the init of every sandbox.
package svc

// Package svc runs untrusted programs in Linux sandboxes and returns exact
// results: the library behind the svc server, for online judges, code
// runners and CI-like tools.
//
// A [Request] is an ordered list of steps; a [Step] is one [Task] or a set
// of tasks that run concurrently. All steps of a request share one
// workspace, mounted at /svc in the sandbox, and a scratch /tmp. Every task
// gets its own user, PID, mount, network, IPC, UTS and cgroup namespaces,
// its own cgroup with memory, pids and CPU limits, and its own system-call
// filter. A task that fails (non-zero exit, timeout, out of memory,
// forbidden system call) does not fail the request: its [Result] carries
// the [Outcome]. An error from [Sandbox.Run] means the request was refused
// or could not be run; it is an [*Error] with a stable [Code].
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
// (processes, cgroups, mounts, workspaces) and locks the state directory.
// [Sandbox.Run] validates the request, takes as many task slots as its
// widest step has tasks (none free: capacity_exhausted), makes the
// request's workspace (two size-limited tmpfs) and cgroup, runs the steps
// and removes everything before it returns. [Sandbox.Close] refuses new
// requests, kills running ones and removes the service cgroup.
//
// # Concurrency
//
// A Sandbox is safe for concurrent use; requests run in parallel up to
// Limits.MaxConcurrency task slots. Cancelling the context of Run kills the
// request's tasks; Run returns only once their processes, mounts and
// cgroups are gone.
//
// # Requirements
//
// Linux 5.12 or later (mount_setattr, openat2, close_range), root (or the
// capabilities to create namespaces, cgroups and mounts), cgroup v1 with
// the memory, pids, cpu and cpuacct controllers or cgroup v2 with memory,
// pids and cpu. The binary must be built with cgo: the child side of a
// sandbox is C that runs before the Go runtime starts, in a constructor
// of package internal/initproc. Importing svc is enough for any binary,
// test binaries and judges' harnesses included: the running binary
// re-executes a sealed copy of itself as the init of each sandbox.
package svc

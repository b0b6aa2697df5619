// Package cgroup creates, limits, measures, kills and removes the cgroups that
// hold sandboxed processes, on cgroup v1 and cgroup v2 hosts.
//
// # Layout
//
// [Detect] reads /proc/self/mountinfo and /proc/self/cgroup once and returns
// the [Hierarchy]. [Hierarchy.Service] makes the cgroup of one service
// instance; [Group.Child] makes the per-request and per-task groups below it:
//
//	<own cgroup>/<service>/<request>/<task>
//
// On v2 a group is one directory. On v1 it is one directory in each of the
// memory, pids, cpu and cpuacct hierarchies; those directories may sit at
// different paths when this process's own cgroup differs per controller (a
// hybrid host where only the memory cgroup is delegated, say).
//
// # Hybrid hosts
//
// A host whose /sys/fs/cgroup is a tmpfs with v1 controllers and an (almost
// empty) cgroup2 at /sys/fs/cgroup/unified is treated as v1.
//
// # Concurrency
//
// A [Hierarchy] and its [Group]s hold no mutable state besides the kernel's:
// all methods are safe for concurrent use. Two goroutines working on the same
// cgroup race only as far as the kernel files do. A [StatsReader] holds the
// statistics files of one group open, for reads after its processes end
// that open nothing; it is for one goroutine at a time.
//
// # Requirements
//
//   - root, or write access to the delegated cgroup subtree;
//   - v1: memory, pids, cpu and cpuacct mounted;
//   - v2: memory, pids and cpu available in this process's cgroup;
//     cgroup.kill (Linux 5.14) is used when present; memory.peak (5.19)
//     and pids.peak are reported when present;
//   - CLONE_INTO_CGROUP (Linux 5.7) for [Group.OpenFD] users.
//
// The parsers ([ParseFlatKeyed], [ParseProcCgroup]) work on any platform;
// the rest is Linux only.
package cgroup

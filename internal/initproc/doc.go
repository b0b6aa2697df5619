// Package initproc is the child side of a sandbox: the first process of
// every task's namespaces.
//
// The parent (internal/runner) starts a sealed copy of the running binary
// with argv[0] set to [Arg0] in new user, mount, PID, IPC and UTS
// namespaces and a fresh network namespace with lo up. A C constructor in
// this package (init.c) recognises the name and runs before the Go runtime
// starts, so importing this package (which the svc package does) is all a
// binary needs. The process then:
//
//  1. reads its config records from fd 3 until EOF (the parent sends them
//     only after putting the process in the task's cgroups);
//  2. enters a new cgroup namespace and applies the mount plan
//     (internal/mount), ending with pivot_root and a read-only root;
//  3. sets the host name, makes itself non-dumpable and forks the task;
//  4. reaps every process of the PID namespace until the task exits, writes
//     the task's wait status, and exits (the kernel then kills the rest).
//
// The task process sets its rlimits, drops the capability bounding set,
// switches to the unprivileged task identity, clears every capability set,
// keeps only fds 0-2, enters the working directory, sets no_new_privs,
// installs the seccomp filter and calls execve, searching PATH itself.
//
// # Protocol
//
// Config (fd 3, parent to init): a sequence of records, each a tag byte, a
// little-endian uint32 length and that many bytes of NUL-terminated fields.
//
//	tag  fields
//	'm'  mount op: kind, src, dst, fstype, data, flags, attr, mode, optional
//	'a'  one argv entry, argv[0] first
//	'e'  one environment entry NAME=value
//	'c'  the command as given
//	'd'  the working directory
//	'h'  the host name
//	'i'  uid, gid of the task inside the user namespace
//	'r'  rlimit: resource, soft, hard
//	'f'  the seccomp program, raw struct sock_filter[] (no NUL)
//
// Status (fd 4, init and task to parent): lines "<tag> <text>\n", each
// written with one write(2).
//
//	'F'  setup failed: what and why (the sandbox could not be built)
//	'W'  the working directory could not be entered
//	'S'  the task process was created: its pid inside
//	'X'  the task exited: its raw wait status
//
// The constants are shared with the C side through proto.h; a test checks
// that both agree.
package initproc

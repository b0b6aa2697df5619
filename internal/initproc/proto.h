// The protocol between internal/runner (parent) and init.c (zygote, init
// and task). The Go side (initproc.go) takes these constants through cgo,
// so both sides always agree; doc.go describes the protocol.
#ifndef SVC_PROTO_H
#define SVC_PROTO_H

#include <stdint.h>

// argv[0] of the zygote: the binary runs zygote_main instead of starting.
#define SVC_ZYGOTE_ARG0 "svc-zygote"

// The zygote's end of its socket to the parent.
#define SVC_FD_ZYGOTE 3

// File descriptors of a sandbox's init, a shell, and of its task process
// until execve.
#define SVC_FD_CONFIG 3 // init: the control socket; task: its records from the parent (a stream socket, with any fds they pass), then EOF
#define SVC_FD_STATUS 4 // init and task -> parent: status lines
#define SVC_FD_CGROUP 5 // task: the first of its cgroup join files (v1 tasks, v2 cgroup.procs)

// A spawn request: this struct, and in the same message (SCM_RIGHTS) the
// fds stdin, stdout and stderr of the init (/dev/null), its control socket
// (a stream socket to the parent), its status pipe and the network
// namespace to clone it into.
struct svc_spawn {
	uint32_t version;
	uint32_t flags; // none defined: 0
	uint32_t init_uid, task_uid; // host ids of the namespace's root and of the task
	uint32_t inner_uid, inner_gid; // the task's ids inside the user namespace
};

#define SVC_SPAWN_VERSION 4
#define SVC_SPAWN_MAX_FDS 16

// The init is a shell, which runs one task after another. On its control
// socket it reads first the cell frame, then for each task this struct
// with the task's fds in SCM_RIGHTS (stdin, stdout, stderr, config,
// status, then nprocs join files of the task's cgroup (v2's cgroup.procs,
// v1's tasks, one per hierarchy), then ntrees mount trees, the
// open_tree clones the task's attach operations take), then framelen
// bytes of mount records: the task's own mounts, undone after it. The task
// process moves itself into each cgroup, so the init stays outside them.
// The shell answers each task twice on the control socket:
// SVC_SHELL_GONE once every process of it is killed and reaped,
// SVC_SHELL_CLEAN once its mounts are undone and the shell is ready for
// another.
struct svc_task {
	uint32_t version;
	uint32_t nprocs, ntrees;
	uint32_t framelen;
};

#define SVC_TASK_VERSION 1
#define SVC_SHELL_GONE 'G'
#define SVC_SHELL_CLEAN 'C'

// The zygote's answer: the init's pid (host) and its pidfd in the same
// message, err 0. On failure err and msg say why, and pid is -1, or the
// pid of an init that was made and killed: its pidfd comes too, and the
// parent reaps it.
struct svc_spawn_reply {
	int32_t pid;
	int32_t err; // errno
	char msg[240];
};

// Config record tags.
#define SVC_REC_MOUNT 'm'    // op, src, dst, fstype, data, flags, attr, optional
#define SVC_REC_ARG 'a'      // one argv entry (argv[0] first)
#define SVC_REC_ENV 'e'      // one NAME=value
#define SVC_REC_CMD 'c'      // the command as given (PATH search unless it has '/')
#define SVC_REC_DIR 'd'      // working directory
#define SVC_REC_HOSTNAME 'h' // host and domain name
#define SVC_REC_IDS 'i'      // uid, gid of the task inside the user namespace
#define SVC_REC_RLIMIT 'r'   // resource, soft, hard
#define SVC_REC_FILTER 'f'   // seccomp program: struct sock_filter[]
#define SVC_REC_WATCHED 'n'  // seccomp program that notifies: installed with a listener
#define SVC_REC_BASE 'b'     // seccomp program a shell's init installs once built
#define SVC_REC_BASE_WATCHED 'B' // the same, notifying: installed with a listener, passed on
#define SVC_REC_USERNS_LIMIT 'u' // name of a /proc/sys/user file, the limit written to it
#define SVC_REC_STDIO 's'        // the task's fd (0-2), its source: "p" the next fd passed with the records, or another of 0-2
#define SVC_SHELL_LISTENER 'L'   // init -> parent on the control socket: the base's listener in SCM_RIGHTS

// Mount operations.
#define SVC_MNT_MOUNT "mount"
#define SVC_MNT_BIND "bind"
#define SVC_MNT_ATTACH "attach"
#define SVC_MNT_CHDIR "chdir"
#define SVC_MNT_PIVOT "pivot"

// Status record tags, one line each: "<tag> <text>\n".
#define SVC_REC_SETUP_FAILED 'F' // the sandbox could not be built: what failed
#define SVC_REC_READY 'R'        // the task process waits for its command
#define SVC_REC_WORKDIR 'W'      // the working directory could not be entered
#define SVC_REC_EXIT 'X'         // the task ended: its raw wait status

#define SVC_EXIT_SETUP_FAILED 125

#endif

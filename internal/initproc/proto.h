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

// File descriptors of a sandbox's init (and of its task until execve).
#define SVC_FD_CONFIG 3 // parent -> init: the cell frame, later the task's records, then EOF
#define SVC_FD_STATUS 4 // init and task -> parent: status lines

// A spawn request: this struct, and in the same message (SCM_RIGHTS) the
// fds stdin, stdout, stderr, config, status, netns, then nprocs open
// cgroup.procs files of the task's cgroup (one on cgroup v2, one per
// hierarchy on v1), then ntrees detached mount trees (open_tree clones)
// for the plan's attach operations. The init keeps the cgroup files from
// fd SVC_FD_CGROUP on and the trees after them; its task process moves
// itself into each cgroup, so the init stays outside the task's cgroup.
struct svc_spawn {
	uint32_t version;
	uint32_t flags; // none defined: 0
	uint32_t init_uid, task_uid; // host ids of the namespace's root and of the task
	uint32_t inner_uid, inner_gid; // the task's ids inside the user namespace
	uint32_t nprocs, ntrees;
};

#define SVC_SPAWN_VERSION 3
#define SVC_SPAWN_MAX_FDS 16

// flags: the init is a shell, which runs one task after another. Its fd 3
// is a stream socket to the parent (the control socket): first the cell
// frame, then per task a struct svc_task with the task's fds (SCM_RIGHTS)
// and its frame of mount records (see struct svc_task).
#define SVC_SPAWN_SHELL 1

// One task of a shell: this struct, with the fds stdin, stdout, stderr,
// config, status, nprocs cgroup.procs files and ntrees mount trees, then
// framelen bytes of mount records (the task's own mounts, undone after).
// The shell answers each task twice on the control socket: SVC_SHELL_GONE
// once every process of it is killed and reaped, SVC_SHELL_CLEAN once its
// mounts are undone and the shell is ready for another.
struct svc_task {
	uint32_t version;
	uint32_t nprocs, ntrees;
	uint32_t framelen;
};

#define SVC_TASK_VERSION 1
#define SVC_SHELL_GONE 'G'
#define SVC_SHELL_CLEAN 'C'

// The first cgroup.procs fd of an init and its task process.
#define SVC_FD_CGROUP 5

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

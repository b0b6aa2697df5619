// The protocol between internal/runner (parent) and init.c (child). The Go
// side (initproc.go) takes these constants through cgo, so both sides
// always agree; doc.go describes the protocol.
#ifndef SVC_PROTO_H
#define SVC_PROTO_H

#define SVC_INIT_ARG0 "svc-init"

// File descriptors of the init process.
#define SVC_FD_CONFIG 3 // parent -> init: the config records, then EOF
#define SVC_FD_STATUS 4 // init -> parent: status lines

// Config record tags.
#define SVC_REC_MOUNT 'm'    // op, src, dst, fstype, data, flags, attr, mode, optional
#define SVC_REC_ARG 'a'      // one argv entry (argv[0] first)
#define SVC_REC_ENV 'e'      // one NAME=value
#define SVC_REC_CMD 'c'      // the command as given (PATH search unless it has '/')
#define SVC_REC_DIR 'd'      // working directory
#define SVC_REC_HOSTNAME 'h' // host and domain name
#define SVC_REC_IDS 'i'      // uid, gid of the task inside the user namespace
#define SVC_REC_RLIMIT 'r'   // resource, soft, hard
#define SVC_REC_FILTER 'f'   // seccomp program: struct sock_filter[]

// Mount operations.
#define SVC_MNT_MKDIR "mkdir"
#define SVC_MNT_TOUCH "touch"
#define SVC_MNT_SYMLINK "symlink"
#define SVC_MNT_MOUNT "mount"
#define SVC_MNT_BIND "bind"
#define SVC_MNT_SETATTR "setattr"
#define SVC_MNT_PIVOT "pivot"

// Status record tags, one line each: "<tag> <text>\n".
#define SVC_REC_SETUP_FAILED 'F' // the sandbox could not be built: what failed
#define SVC_REC_WORKDIR 'W'      // the working directory could not be entered
#define SVC_REC_STARTED 'S'      // the task process exists: its pid inside
#define SVC_REC_EXIT 'X'         // the task ended: its raw wait status

#define SVC_EXIT_SETUP_FAILED 125

#endif

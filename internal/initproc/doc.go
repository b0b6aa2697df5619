// Package initproc is the child side of a sandbox: the zygote that clones
// every sandbox's first process, that process (the init), and the task
// process up to its execve.
//
// The parent (internal/runner) starts a sealed copy of the running binary
// once, with argv[0] set to [ZygoteArg0]. A C constructor in this package
// (init.c) recognises the name and runs before the Go runtime starts, so
// importing this package (which the svc package does) is all a binary
// needs. The zygote stays a small single-threaded root process in the
// host's namespaces and serves spawn requests on fd 3, one at a time:
//
//  1. it enters the network namespace it was given (lo up, as no task had
//     used it: internal/runner)
//     and clone3s the init with CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID,
//     CLONE_NEWIPC, CLONE_NEWUTS, CLONE_PIDFD and CLONE_PARENT (so the
//     parent reaps the init), as the init's host id (its effective uid
//     and gid for the clone, capabilities kept): the user namespace is
//     that id's, so what the kernel counts per user up the chain of
//     namespaces is charged to it, not to root; then it is root again
//     and returns to the host's network namespace;
//  2. it denies setgroups and writes the uid and gid maps (the namespace's
//     root to one host id, the task identity to another), releases the
//     init with one byte on a pipe and answers with the init's pid and
//     pidfd.
//
// The init (shell_main) never runs execve: it is the zygote's copy, and it
// stays in the zygote's cgroup. It takes fds 0-4 (fd 3 its control socket,
// a stream socket to the parent; fd 4 its status channel), becomes root of
// its user namespace, and then:
//
//  1. reads the cell frame from its control socket;
//  2. applies the mount plan (internal/mount): once the root is bound it
//     works in it by relative paths, and ends with pivot_root and a
//     read-only root whose /proc is mounted hidepid=invisible, so tasks see
//     their own processes, not the init; through that procfs, before
//     /proc/sys is made read-only, it writes the limits of its user
//     namespace ('u' records, UserNamespaceLimits);
//  3. sets the host name, makes itself non-dumpable, empties its capability
//     bounding set and says it is ready: it is a shell, which runs one task
//     after another.
//
// The init ends with its parent, by two ways either of which suffices:
// its parent-death signal (SIGKILL; set again after its last change of
// ids, which may clear it), and the hangup of its control socket. While
// a task's processes live, the kernel signals that to the init whatever
// it is doing (O_ASYNC: SIGIO, whose handler exits once the other end is
// closed); otherwise the socket's EOF, or a failed write to it, ends the
// init. The kernel then kills every process of its PID namespace. The
// zygote ends at its socket's EOF, or by its parent-death signal, set
// again after each spawn's change of ids.
//
// For each task it receives a struct svc_task with the task's fds and its
// frame of mount records (the workspace and /tmp trees, a fresh /dev/shm),
// makes those mounts and clones the task process into an IPC namespace of
// its own (CLONE_VM|CLONE_VFORK with a stack of its own: the task process
// shares the init's memory until its execve, and the init waits
// meanwhile; what it allocates comes from an arena the init clears after
// it, or is mapped apart and unmapped). It
// reaps processes of the PID namespace until the task exits and writes the
// task's wait status; then it kills every other process of the namespace
// (kill(-1)), reaps them all and answers 'G' (gone); then it undoes the
// task's mounts, resets ns_last_pid so the next task is pid 2 again, and
// answers 'C' (clean).
//
// The task process sets its rlimits, moves itself into the task's cgroups
// (writing "0" to each join file: tasks on v1, cgroup.procs on v2) and
// enters a new cgroup namespace rooted there, so that the task's statistics count the task
// alone, without the init and the sandbox's setup; then it switches to the
// unprivileged task identity, clears every capability set, keeps only fds
// 0-4, says it is ready and blocks reading its command from fd 3: the task
// process is made ahead of its task. Once released it sets the rlimits
// of the task's records (a task's own limits, lower than the cell's),
// enters the working directory, sets no_new_privs, installs the seccomp
// filter and calls execve, searching PATH itself. When the task's mount records carry its
// seccomp program ('f'), the task process sets no_new_privs and installs
// it before it says it is ready, off the task's critical path; the
// program then allows every call it makes until its execve
// (PreExecCalls), and the task's own records carry none. A watched
// program ('n', seccomp.WatchedProgram) is installed with a listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER), whose fd number the ready line
// gives ("R 5"): the parent copies it through the pidfd its status socket
// received with the line (SO_PASSPIDFD, pidfd_getfd) before the release,
// and the task process closes its own once released.
//
// A cell frame may carry a base seccomp program ('b'): the init installs
// it once the sandbox is built, before it says it is ready, and makes only
// the calls ShellCalls lists from then on; every task process inherits it
// and installs its profile's residual over it (seccomp.Layers), which
// decides the calls of ShellCalls as the profile does. A notifying base
// ('B', seccomp.Watched) is installed with a listener, which the init
// sends on its control socket (one ShellListener byte, the fd in
// SCM_RIGHTS) before its ready line, and closes: the parent answers the
// notifications of every task of the shell, and no task has the fd.
//
// # Protocol
//
// Spawn request (zygote socket, SOCK_SEQPACKET): struct svc_spawn, with
// the fds stdin, stdout, stderr (/dev/null), the control socket, the status
// pipe and the network namespace in SCM_RIGHTS. The answer is struct
// svc_spawn_reply, with the pidfd on success.
//
// Task (control socket, parent to init): struct svc_task, with the task's
// stdin, stdout, stderr (pipes), config and status (unix stream sockets) and then
// its cgroup join files and mount trees in SCM_RIGHTS, then the task's
// mount records and, optionally, its seccomp program ('f', or 'n' watched).
//
// Config: the cell frame on the init's control socket, a little-endian
// uint32 length and that many bytes of records; the task's records on its
// config socket (fd 3 of the task process, a unix stream socket), up to
// EOF, with the fds they pass in SCM_RIGHTS (at most 3, close-on-exec
// until an 's' record puts each in place; one not put in place, or a
// cut control message, fails the setup). A cell is built before its task
// is known, with pipes for its stdio: a task whose stdin is a workspace
// file (stdin_path) takes any such cell, and the file itself comes with
// its command ('s' "0" "p"), so that no cell is built on its critical
// path; a task whose stderr is its stdout gets 's' "2" "1". A record is a tag
// byte, a little-endian uint32 length and that many bytes of
// NUL-terminated fields. Mount records also make the mount frame of each
// task sent to the init.
//
//	tag  fields                                          in
//	'm'  mount op: kind (mount, bind, attach, chdir,     cell
//	     pivot), src, dst, fstype, data, flags, attr,
//	     optional
//	'h'  the host name                                   cell
//	'i'  uid, gid of the task inside the user namespace  cell
//	'r'  rlimit: resource, soft, hard                    cell, task
//	'b'  the base seccomp program, raw (no NUL)          cell
//	'B'  the same, notifying (installed with a listener) cell
//	'u'  a limit of the user namespace: the name of its  cell
//	     /proc/sys/user file, the value
//	'd'  the working directory                           task
//	'c'  the command as given                            task
//	'a'  one argv entry, argv[0] first                   task
//	'e'  one environment entry NAME=value                task
//	'f'  the seccomp program, raw struct sock_filter[]   task
//	     (no NUL)
//	's'  stdio: the task's fd (0-2) and its source: "p"   task
//	     the next fd passed with the records, "0"-"2"
//	     a copy of that fd of the task process
//
// Status (fd 4, init and task to parent): lines "<tag> <text>\n", each
// written with one write(2).
//
//	'F'  setup failed: what and why (the sandbox could not be built)
//	'R'  the task process is ready for its command
//	'W'  the working directory could not be entered
//	'X'  the task exited: its raw wait status
//
// The constants are shared with the C side through proto.h, which the Go
// side reads through cgo, so both always agree.
package initproc

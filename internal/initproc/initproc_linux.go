package initproc

// #cgo CFLAGS: -Wall -O2
// #include "proto.h"
import "C"

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/svc-sandbox/svc/internal/mount"
)

// ZygoteArg0 is the argv[0] that makes a binary importing this package run
// as the zygote instead of starting normally.
const ZygoteArg0 = C.SVC_ZYGOTE_ARG0

// File descriptors: the zygote's socket, and the config and status fds of
// a sandbox's init.
const (
	FDZygote = C.SVC_FD_ZYGOTE
	FDConfig = C.SVC_FD_CONFIG
	FDStatus = C.SVC_FD_STATUS
)

// SpawnRequest is the fixed part of a spawn request to the zygote (struct
// svc_spawn); the fds travel in the same message.
type SpawnRequest struct {
	Version, Flags     uint32
	InitUID, TaskUID   uint32
	InnerUID, InnerGID uint32
}

// Spawn request and shell constants.
const (
	SpawnVersion = C.SVC_SPAWN_VERSION
	SpawnMaxFDs  = C.SVC_SPAWN_MAX_FDS
	ShellGone    = C.SVC_SHELL_GONE  // a shell's first answer: every process of the task is gone
	ShellClean   = C.SVC_SHELL_CLEAN // its second: the task's mounts are undone, the shell ready
	// ShellListener tags the init's message, before its ready line, that
	// carries its watched base filter's listener (CellSpec.BaseWatched).
	ShellListener = C.SVC_SHELL_LISTENER
)

// Encode returns the request as the zygote reads it.
func (r *SpawnRequest) Encode() []byte {
	return encode32(r.Version, r.Flags, r.InitUID, r.TaskUID, r.InnerUID, r.InnerGID)
}

// TaskMessage is the fixed part of a task sent to a shell (struct
// svc_task): the counts of the cgroup files and mount trees among the fds
// that travel with it, and the length of the mount records that follow.
type TaskMessage struct {
	NProcs, NTrees, FrameLen uint32
}

// Encode returns the message as the shell reads it.
func (m *TaskMessage) Encode() []byte {
	return encode32(C.SVC_TASK_VERSION, m.NProcs, m.NTrees, m.FrameLen)
}

// TaskMessageSize is the size of struct svc_task, what Encode returns.
const TaskMessageSize = C.sizeof_struct_svc_task

func encode32(v ...uint32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.NativeEndian.AppendUint32(b, x)
	}
	return b
}

// SpawnReplySize is the size of the zygote's answer (struct svc_spawn_reply).
const SpawnReplySize = C.sizeof_struct_svc_spawn_reply

// SpawnRequestSize is the size of struct svc_spawn, what Encode returns.
const SpawnRequestSize = C.sizeof_struct_svc_spawn

// SpawnReply is the zygote's answer: the init's host pid, or -1 and why.
type SpawnReply struct {
	Pid int
	Err syscall.Errno
	Msg string
}

// DecodeSpawnReply decodes the zygote's answer.
func DecodeSpawnReply(b []byte) (SpawnReply, error) {
	if len(b) != SpawnReplySize {
		return SpawnReply{}, fmt.Errorf("zygote: reply of %d bytes, want %d", len(b), SpawnReplySize)
	}
	msg := b[8:]
	if i := bytes.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	return SpawnReply{
		Pid: int(int32(binary.NativeEndian.Uint32(b))),
		Err: syscall.Errno(int32(binary.NativeEndian.Uint32(b[4:]))),
		Msg: string(msg),
	}, nil
}

// Rlimit is one resource limit of the task.
type Rlimit struct {
	Resource   int
	Soft, Hard uint64
}

// UserNamespaceLimit is one per-user limit of a sandbox's user namespace:
// the file of /proc/sys/user it is written to, and the value.
type UserNamespaceLimit struct {
	Name string
	Max  int
}

// UserNamespaceLimits are the limits every sandbox's init writes to
// /proc/sys/user of its user namespace (through its own procfs, as the
// plan mounts it) while it is root there, before any task runs; a limit it
// cannot write fails the sandbox's setup (one whose file the kernel lacks
// has no count to bound). Each bounds what one user (the
// task's id, or the init's) has at once in that namespace; the kernel
// also charges the same count up the chain, in the host's namespace,
// against the user that made the sandbox's namespace: the init's own
// host id, not root (the zygote makes it so), where the host's
// fs.inotify.max_user_* and user.max_* bound the sum of a request's
// sandboxes. docs/security.md has the table of these counters.
//
//   - The task makes no namespace (its filter kills clone with a
//     namespace flag, unshare and setns): none, whatever the filter. The
//     init makes an IPC namespace per task, freed after an RCU grace
//     period, and the task process a cgroup namespace: room for a few
//     tasks' worth in flight.
//   - inotify: a share of a host user's 128 instances (the default of
//     fs.inotify.max_user_instances), for up to 8 parallel tasks of one
//     request; watches, the default of fs.inotify.max_user_watches on a
//     small host. Real programs (tail -f, a file watcher) take one
//     instance and a few watches.
//   - fanotify: none (fanotify_init is killed by every profile).
var UserNamespaceLimits = []UserNamespaceLimit{
	{"max_user_namespaces", 0}, {"max_pid_namespaces", 0}, {"max_net_namespaces", 0},
	{"max_mnt_namespaces", 0}, {"max_uts_namespaces", 0}, {"max_time_namespaces", 0},
	{"max_ipc_namespaces", 64}, {"max_cgroup_namespaces", 64},
	{"max_inotify_instances", 16}, {"max_inotify_watches", 8192},
	{"max_fanotify_groups", 0}, {"max_fanotify_marks", 0},
}

// CellSpec is what the init needs to build a sandbox before its task is
// known.
type CellSpec struct {
	Mounts   mount.Plan
	Hostname string
	UID, GID int // the task's identity inside the user namespace
	Rlimits  []Rlimit
	// BaseFilter is a seccomp program (struct sock_filter[]) a shell's
	// init installs once its sandbox is built, which every task process
	// inherits; nil for none. It must allow ShellCalls, and decide no
	// call of a task's profile more strictly than the profile does: each
	// task's own filter decides the rest (seccomp.Layers).
	BaseFilter []byte
	// BaseWatched says BaseFilter notifies (seccomp.Watched): the init
	// installs it with a listener and sends that on its control socket,
	// one ShellListener byte with the fd in SCM_RIGHTS, before its ready
	// line. No task process ever has it.
	BaseWatched bool
}

// TaskSpec is the task a built sandbox runs.
type TaskSpec struct {
	Dir    string   // working directory inside the sandbox
	Cmd    string   // as given by the user
	Args   []string // argv, argv[0] first
	Env    []string // NAME=value
	Filter []byte   // seccomp program (struct sock_filter[]); nil for none
	// Rlimits are set by the task process once released, before its
	// execve, over those of the cell frame (CellSpec.Rlimits): the
	// limits of a task lower than its cell's. The task process has no
	// privilege by then, so each may only lower a limit.
	Rlimits []Rlimit
	// StdinPassed says the task's stdin is the one fd sent with its
	// records (SCM_RIGHTS on its config socket) in place of its cell's
	// pipe: the task process makes it its fd 0 before its execve. The
	// fd is the file itself, shared with the sender, not a copy of its
	// bytes.
	StdinPassed bool
	// MergeOutput makes the task's fd 2 a copy of its fd 1 (2>&1): its
	// stdout and stderr are one stream, in the order of its writes, and
	// its cell's stderr pipe is closed unused.
	MergeOutput bool
}

// records appends config records to a buffer.
type records []byte

func (b *records) rec(tag byte, fields ...string) {
	n := 0
	for _, f := range fields {
		n += len(f) + 1
	}
	*b = append(*b, tag)
	*b = binary.LittleEndian.AppendUint32(*b, uint32(n))
	for _, f := range fields {
		*b = append(*b, f...)
		*b = append(*b, 0)
	}
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// Encode returns the cell frame of s: a little-endian uint32 length, then
// the records.
func (s *CellSpec) Encode() []byte {
	b := records(make([]byte, 4, 4096))
	b.mounts(s.Mounts)
	b.rec(C.SVC_REC_HOSTNAME, s.Hostname)
	b.rec(C.SVC_REC_IDS, u(uint64(s.UID)), u(uint64(s.GID)))
	for _, r := range s.Rlimits {
		b.rec(C.SVC_REC_RLIMIT, u(uint64(r.Resource)), u(r.Soft), u(r.Hard))
	}
	for _, l := range UserNamespaceLimits {
		b.rec(C.SVC_REC_USERNS_LIMIT, l.Name, u(uint64(l.Max)))
	}
	if s.BaseWatched {
		b.filter(C.SVC_REC_BASE_WATCHED, s.BaseFilter)
	} else {
		b.filter(C.SVC_REC_BASE, s.BaseFilter)
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// mounts appends a mount record per operation.
func (b *records) mounts(plan mount.Plan) {
	for _, op := range plan {
		opt := "0"
		if op.Optional {
			opt = "1"
		}
		b.rec(C.SVC_REC_MOUNT, string(op.Kind), op.Src, op.Dst, op.FSType, op.Data,
			u(uint64(op.Flags)), u(op.Attr), opt)
	}
}

// EncodeTaskFrame returns the frame of a shell's task (struct svc_task's
// framelen bytes): the mount records of plan and, if filter is not empty,
// the seccomp program the task process installs before it says it is
// ready. The program must allow the calls of PreExecCalls, the task
// process's until its execve. A watched program (seccomp.WatchedProgram)
// is installed with a listener, whose fd number in the task process the
// ready line gives (Report.Listener): take it with pidfd_getfd before the
// release, after which the task process closes its own.
func EncodeTaskFrame(plan mount.Plan, filter []byte, watched bool) []byte {
	var b records
	b.mounts(plan)
	tag := byte(C.SVC_REC_FILTER)
	if watched {
		tag = C.SVC_REC_WATCHED
	}
	b.filter(tag, filter)
	return b
}

// PreExecCalls are the system calls a task process makes between its
// ready line and its execve: to read its command (recvmsg, with the fds
// it passes, which dup3 puts in place, close, and mmap and munmap for a
// command too large for its arena), to lower its rlimits
// (prlimit64: TaskSpec.Rlimits), to enter its working directory, to
// execute it (execve, or write and exit_group for its error). A task
// whose seccomp program allows them all unconditionally can have it
// installed before it is released (EncodeTaskFrame).
var PreExecCalls = []string{"recvmsg", "read", "close", "dup3", "mmap", "munmap", "prlimit64", "chdir", "execve", "write", "exit_group"}

// ShellCalls are the system calls a shell's init makes once its base
// filter is installed (the end of its setup: CellSpec.BaseFilter), for
// each task: receive it, mount its /svc, /tmp and /dev/shm, clone its task
// process into a new IPC namespace, wait, kill and reap, undo the mounts,
// reset the PID sequence, report; to watch its control socket for a
// hangup while a task runs (fcntl, and ppoll and rt_sigreturn in the
// handler of the kernel's signal); and those its task process makes before it installs its own
// filter: its process group, rlimits, cgroups and cgroup namespace,
// identity, capabilities, fds, then the filter, and PreExecCalls after
// it. Traced (strace -f of the shell tests), with the error paths'
// exit_group and the allocator's brk, mmap, munmap and madvise. The base filter allows them all; each task's own filter then
// decides them as its profile does (seccomp.Layers).
var ShellCalls = []string{
	// The init.
	"recvmsg", "sendmsg", "read", "write", "close", "fcntl", "dup3", "brk", "mmap", "munmap", "madvise",
	"mount", "mount_setattr", "move_mount", "mkdir", "umount2", "clone", "wait4", "kill", "pwrite64",
	"exit_group", "ppoll", "rt_sigreturn",
	// The task process.
	"prctl", "rt_sigaction", "setpgid", "prlimit64", "unshare", "setresgid", "setresuid", "capset",
	"close_range", "seccomp", "chdir", "execve",
}

// filter appends the record of a seccomp program, if any.
func (b *records) filter(tag byte, prog []byte) {
	if len(prog) > 0 {
		*b = append(*b, tag)
		*b = binary.LittleEndian.AppendUint32(*b, uint32(len(prog)))
		*b = append(*b, prog...)
	}
}

// Encode returns the task's records, which the task process reads up to
// EOF; with StdinPassed the first bytes carry the stdin fd (SCM_RIGHTS).
func (s *TaskSpec) Encode() []byte {
	var b records
	b.rec(C.SVC_REC_DIR, s.Dir)
	b.rec(C.SVC_REC_CMD, s.Cmd)
	for _, a := range s.Args {
		b.rec(C.SVC_REC_ARG, a)
	}
	for _, e := range s.Env {
		b.rec(C.SVC_REC_ENV, e)
	}
	for _, r := range s.Rlimits {
		b.rec(C.SVC_REC_RLIMIT, u(uint64(r.Resource)), u(r.Soft), u(r.Hard))
	}
	if s.StdinPassed {
		b.rec(C.SVC_REC_STDIO, "0", "p")
	}
	if s.MergeOutput {
		b.rec(C.SVC_REC_STDIO, "2", "1")
	}
	b.filter(C.SVC_REC_FILTER, s.Filter)
	return b
}

// Status reads the status lines of a sandbox.
type Status struct {
	sc  *bufio.Scanner
	rep Report
	err error
}

// NewStatus reads status lines from r.
func NewStatus(r io.Reader) *Status { return &Status{sc: lineScanner(r)} }

// lineScanner returns a scanner of r's lines whose buffer starts small:
// status lines are short, and a stream has a few.
func lineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), bufio.MaxScanTokenSize)
	return sc
}

// WaitReady reads until the task process is ready ('R'). It is an error if
// the stream ends first or the init reports a setup failure.
func (s *Status) WaitReady() error {
	for !s.rep.Ready {
		if !s.next() {
			if s.rep.SetupError != "" {
				return fmt.Errorf("sandbox init: %s", s.rep.SetupError)
			}
			if s.err != nil {
				return s.err
			}
			return errors.New("sandbox init: ended before its task was ready")
		}
	}
	return nil
}

// Finish reads the rest of the lines up to EOF and returns the report.
func (s *Status) Finish() (Report, error) {
	for s.next() {
	}
	return s.rep, s.err
}

// Listener returns the fd, in the task process, of its watched filter's
// listener, as its ready line gave it; -1 for none.
func (s *Status) Listener() int {
	if !s.rep.Ready {
		return -1
	}
	return s.rep.Listener
}

// FinishFrom is Finish for the rest of the lines, up to EOF, read from
// the stream by other means: rest. It is for the lines a task's release
// brings: nothing follows the ready line until then, so the reader holds
// nothing read ahead when WaitReady returns.
func (s *Status) FinishFrom(rest []byte) (Report, error) {
	if s.err == nil {
		s.sc = lineScanner(bytes.NewReader(rest))
	}
	return s.Finish()
}

// next reads one line into the report; false at EOF or on an error.
func (s *Status) next() bool {
	if s.err != nil || !s.sc.Scan() {
		if s.err == nil {
			s.err = s.sc.Err()
		}
		return false
	}
	line := s.sc.Text()
	if len(line) < 2 || line[1] != ' ' {
		s.err = fmt.Errorf("init status: malformed line %q", line)
		return false
	}
	text := line[2:]
	switch line[0] {
	case C.SVC_REC_SETUP_FAILED:
		s.rep.SetupError = text
	case C.SVC_REC_READY:
		s.rep.Ready = true
		s.rep.Listener = -1
		if text != "" {
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 {
				s.err = fmt.Errorf("init status: malformed ready line %q", line)
				return false
			}
			s.rep.Listener = n
		}
	case C.SVC_REC_WORKDIR:
		s.rep.WorkdirError = text
	case C.SVC_REC_EXIT:
		st, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			s.err = fmt.Errorf("init status: bad exit line %q", line)
			return false
		}
		s.rep.Exited = true
		s.rep.Status = syscall.WaitStatus(st)
	default:
		s.err = fmt.Errorf("init status: unknown line %q", line)
		return false
	}
	return true
}

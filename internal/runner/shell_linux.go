package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/mount"
)

// A Shell is a sandbox that runs one task after another: its init
// (init.c's shell_main) builds the user, mount, PID and UTS namespaces
// once, and for each task makes what is the task's own (an IPC namespace,
// its cgroups, its workspace, /tmp and /dev/shm, its stdio), then kills
// and reaps every process the task left, undoes its mounts and restarts
// the PID sequence. A shell that cannot say so, or whose network
// namespace a task changed, is not used again. A shell keeps the identity
// (host ids) it was built with.
type Shell struct {
	pid int
	// mu guards pidfd: a kill may come at any time.
	mu    sync.Mutex
	pidfd *os.File
	ctl   *os.File // our end of the control socket
	// listener is the listener of the init's watched base filter, which
	// every task process inherits; -1 for none.
	listener int
	netns    *netns
	// netDirty: a task that may have made a socket ran since the network
	// namespace last read as when it was made.
	netDirty bool
	tasks    int  // cells given out
	busy     bool // a cell of it is out
	// poll waits for its cells' descriptors, one cell at a time; nil if
	// none could be had (poll(2) then).
	poll *poller
	dead atomic.Bool // the init is gone or must go: never used again
}

// ShellConfig describes the sandbox of a shell; Spec.Mounts is a
// mount.ShellPlan.
type ShellConfig struct {
	Spec             initproc.CellSpec
	InitUID, TaskUID int
}

// ShellTask is what one task of a shell has of its own.
type ShellTask struct {
	// CgroupProcs are the join files of the task's cgroup (v2's
	// cgroup.procs; v1's tasks, one per hierarchy), open for writing:
	// the task process moves itself into each before it drops its
	// privileges. The init stays out, so the group counts the task
	// alone. Cell takes them: it closes them, whether it succeeds or
	// not.
	CgroupProcs []int
	// Trees are the host directories whose mounts the task's attach
	// operations take, in the order of their numbers (see
	// mount.WorkspaceTree): each is cloned (open_tree) with the mounts
	// under it and handed to the init, which moves it into place.
	Trees  []string
	Mounts mount.Plan // mount.TaskMounts
	// Filter, if not empty, is the task's seccomp program, installed by
	// the task process before it says it is ready, off the task's
	// critical path: the task's own spec then has none. It must allow
	// initproc.PreExecCalls unconditionally.
	Filter []byte
	// Watched says Filter is a watched program (seccomp.WatchedProgram):
	// the cell takes its listener and answers its notifications while the
	// task runs, and the task's network namespace is read after it only if
	// a process of it made a socket. It needs SO_PASSPIDFD (Linux 6.5).
	Watched bool
}

// BuildShell makes a shell and returns once its sandbox is built.
func BuildShell(ctx context.Context, c *ShellConfig) (_ *Shell, err error) {
	z, err := theZygote()
	if err != nil {
		return nil, err
	}
	s := &Shell{listener: -1}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shell socket: %w", err)
	}
	s.ctl = os.NewFile(uintptr(pair[0]), "shell")
	// Without one its cells wait in poll(2).
	s.poll, _ = newPoller()
	theirCtl := os.NewFile(uintptr(pair[1]), "shell")
	defer theirCtl.Close()
	statR, w, err := pipe(false, true)
	if err != nil {
		return nil, fmt.Errorf("shell status pipe: %w", err)
	}
	defer unix.Close(statR)
	statW := os.NewFile(uintptr(w), "|init")
	defer statW.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	if s.netns, err = freshNetns(); err != nil {
		return nil, err
	}
	req := &initproc.SpawnRequest{
		Version: initproc.SpawnVersion,
		InitUID: uint32(c.InitUID), TaskUID: uint32(c.TaskUID),
		InnerUID: uint32(c.Spec.UID), InnerGID: uint32(c.Spec.GID),
	}
	if s.pid, s.pidfd, err = z.spawn(req, []*os.File{null, null, null, theirCtl, statW, s.netns.f}); err != nil {
		return nil, fmt.Errorf("start sandbox shell: %w", err)
	}
	theirCtl.Close()
	statW.Close()

	if _, err := s.ctl.Write(c.Spec.Encode()); err != nil {
		return nil, fmt.Errorf("send shell config: %w", err)
	}
	if _, err := waitReady(ctx, statR, s.kill); err != nil {
		return nil, err
	}
	if c.Spec.BaseWatched {
		if s.listener, err = recvListener(s.ctl); err != nil {
			return nil, err
		}
	}
	shellCounts.made.Add(1)
	return s, nil
}

// Cell starts a task of the shell and returns once its task process
// waits for its command, as Build does. The shell is busy until the
// cell's Close.
func (s *Shell) Cell(ctx context.Context, t *ShellTask) (_ *Cell, err error) {
	if s.busy || s.dead.Load() {
		for _, fd := range t.CgroupProcs {
			unix.Close(fd)
		}
		return nil, errors.New("sandbox shell: busy or gone")
	}
	s.busy = true
	if s.tasks++; s.tasks > 1 {
		netCounts.reused.Add(1) // the shell's namespace, for another task
	}
	cell := &Cell{shell: s, config: -1, stdin: -1, stdout: -1, stderr: -1, statR: -1, notify: -1, relay: -1}
	if s.listener >= 0 {
		if t.Watched {
			// A process's filters have at most one listener.
			return nil, errors.New("sandbox: a watched task in a shell whose base filter is watched")
		}
		cell.notify, cell.shellNotify = s.listener, true
	}
	var theirs []int
	defer func() {
		for _, fd := range theirs {
			unix.Close(fd)
		}
		if err != nil {
			// The shell may hold half a task: it goes, and the caller
			// closes it.
			s.kill()
			s.busy = false
			cell.close()
		}
	}()
	theirs, err = cell.pipes(t.Watched)
	theirs = append(theirs, t.CgroupProcs...)
	if err != nil {
		return nil, err
	}
	trees, err := openTrees(t.Trees)
	theirs = append(theirs, trees...)
	if err != nil {
		return nil, err
	}
	watched := t.Watched && len(t.Filter) > 0
	frame := initproc.EncodeTaskFrame(t.Mounts, t.Filter, watched)
	msg := &initproc.TaskMessage{
		NProcs: uint32(len(t.CgroupProcs)), NTrees: uint32(len(t.Trees)), FrameLen: uint32(len(frame)),
	}
	if len(theirs) > initproc.SpawnMaxFDs {
		return nil, fmt.Errorf("sandbox: %d fds for a task, at most %d", len(theirs), initproc.SpawnMaxFDs)
	}
	// The message and its frame in one call: the init reads both with
	// no wait between.
	b := append(msg.Encode(), frame...)
	n, err := unix.SendmsgN(int(s.ctl.Fd()), b, unix.UnixRights(theirs...), nil, 0)
	if err == nil && n < len(b) {
		_, err = s.ctl.Write(b[n:])
	}
	if err != nil {
		return nil, fmt.Errorf("send a task to the shell: %w", err)
	}
	for _, fd := range theirs {
		unix.Close(fd)
	}
	theirs = nil

	var pidfd int
	r := &fdReader{fd: cell.statR, pidfds: watched, pidfd: -1, poll: s.poll}
	if cell.status, pidfd, err = waitReadyFrom(ctx, r, s.kill); err != nil {
		return nil, err
	}
	if !cell.shellNotify {
		if cell.notify, err = takeListener(cell.status.Listener(), pidfd, watched); err != nil {
			return nil, err
		}
	} else if pidfd >= 0 {
		unix.Close(pidfd)
	}
	shellCounts.cells.Add(1)
	return cell, nil
}

// ErrListener is the error of Shell.Cell for a watched task whose filter's
// listener could not be taken.
var ErrListener = errors.New("sandbox: the task process's filter listener could not be taken")

// takeListener returns this process's copy of the listener of a watched
// task's filter, whose fd in the task process its ready line gave, taken
// through the pidfd of the line's writer (-1 for none), which it closes.
// An unwatched task must have none.
func takeListener(listener, pidfd int, watched bool) (int, error) {
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	switch {
	case !watched && listener < 0:
		return -1, nil
	case !watched:
		return -1, errors.New("sandbox: a task process without a watched filter gave a listener")
	case listener < 0 || pidfd < 0:
		return -1, fmt.Errorf("%w: none given (listener %d, pidfd %d)", ErrListener, listener, pidfd)
	}
	fd, err := unix.PidfdGetfd(pidfd, listener, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: pidfd_getfd: %w", ErrListener, err)
	}
	syncWakeUp(fd)
	return fd, nil
}

// syncWakeUp asks the kernel to hand the CPU to this process's waiter on
// the listener fd and back: a notified process waits for the answer
// (Linux 6.6; a hint, ignored where unknown).
func syncWakeUp(fd int) {
	_ = unix.IoctlSetInt(fd, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
}

// recvListener receives the listener of an init's watched base filter
// from its control socket, which carries it before anything else
// (initproc.ShellListener).
func recvListener(ctl *os.File) (int, error) {
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), b[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("sandbox shell: receive the base filter's listener: %w", err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		fds, _ = unix.ParseUnixRights(&msgs[0])
	}
	if n != 1 || b[0] != initproc.ShellListener || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, errors.New("sandbox shell: no listener of its base filter on the control socket")
	}
	syncWakeUp(fds[0])
	return fds[0], nil
}

// kill kills the shell's init, and with it every process of the shell.
func (s *Shell) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead.Store(true)
	if s.pidfd != nil {
		unix.PidfdSendSignal(int(s.pidfd.Fd()), unix.SIGKILL, nil, 0)
	}
}

// answer waits for the shell's answer want to its task (see
// initproc.ShellGone and ShellClean). It returns false if the shell is
// gone instead; its init is then reaped.
func (s *Shell) answer(want byte) (bool, error) {
	var b [1]byte
	if _, err := io.ReadFull(s.ctl, b[:]); err == nil && b[0] == want {
		return true, nil
	}
	s.kill()
	return false, s.reap()
}

// reap waits for the init's exit and reaps it.
func (s *Shell) reap() error {
	s.mu.Lock()
	pidfd := s.pidfd
	s.pidfd = nil
	s.mu.Unlock()
	if pidfd == nil {
		return nil
	}
	defer pidfd.Close()
	return waitPidfd(pidfd)
}

// maxShellTasks bounds the tasks one shell runs: nothing is known to
// build up in a shell from task to task, and this keeps it so for what is
// not known, at the cost of a new shell every so many tasks.
const maxShellTasks = 10000

// release takes back the shell after its cell: it may run another task if
// the task ended cleanly and left the network namespace as it was made.
func (s *Shell) release(clean, netUsed bool) {
	s.busy = false
	s.netDirty = s.netDirty || netUsed
	if !clean || s.dead.Load() || s.tasks >= maxShellTasks {
		s.dead.Store(true)
		return
	}
	if s.netDirty {
		if same, err := s.netns.unchanged(); err != nil || !same {
			s.kill()
			return
		}
		netCounts.kept.Add(1)
		s.netDirty = false
	}
}

// Usable reports whether the shell can run another task.
func (s *Shell) Usable() bool { return !s.dead.Load() && !s.busy }

// Close ends the shell: its init and every process in it are gone when
// it returns.
func (s *Shell) Close() error {
	s.kill()
	err := s.reap()
	if s.ctl != nil {
		s.ctl.Close()
	}
	if s.poll != nil {
		s.poll.close()
	}
	closeFD(&s.listener)
	if s.netns != nil {
		// Every process in it is gone: another cell may have it, as
		// any namespace given back (see releaseNetns).
		if err == nil {
			releaseNetns(s.netns, s.netDirty)
		} else {
			netCounts.destroyed.Add(1)
			s.netns.close()
		}
		s.netns = nil
	}
	return err
}

package runner

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/initproc"
)

// SetupTimeout bounds the build of a sandbox: from the spawn request to
// the task process waiting for its command. The task's own limits start
// when it is released.
const SetupTimeout = 30 * time.Second

// Task is the task a cell runs. Zero durations and limits mean none.
type Task struct {
	Spec  initproc.TaskSpec
	Stdin string

	WallTimeout time.Duration
	// CPULimit is enforced over the whole task by polling CPUUsage at the
	// earliest moment the limit could be reached at CPURate CPUs.
	CPULimit time.Duration
	CPURate  float64
	CPUUsage func() (time.Duration, error)

	OutputLimit int64   // per stream
	Budget      *Budget // shared by the tasks of a request; nil for none
	// StdoutFile and StderrFile, if not nil, take the stream in place of
	// the Result: its bytes are spliced from the task's pipe to the file
	// at its offset, at most OutputLimit of them (past it, or when the
	// file takes no more, the task is killed as for any stream past its
	// limit, with the file holding what fit), and none counts against
	// Budget; the Result's Stdout (Stderr) is then empty. They may be
	// one file. With MergeOutput, StderrFile is unused.
	StdoutFile, StderrFile *os.File
	// StdinFile, if not nil, is the task's standard input itself, in
	// place of its cell's pipe: it goes to the task process with its
	// command (initproc.TaskSpec.StdinPassed), which makes it its fd 0,
	// and Run writes no stdin (Stdin must be empty). A regular file
	// costs this process nothing however much the task reads. The
	// caller keeps it and may close it once Run returns.
	StdinFile *os.File
	// MergeOutput gives the task one stream for its stdout and stderr:
	// fd 2 is a copy of fd 1, as 2>&1, so the two keep the order of the
	// task's writes, and all of it is the Result's Stdout (or goes to
	// StdoutFile), within one output limit. StderrFile is unused.
	MergeOutput bool

	// NoSockets says the task's seccomp policy refuses socket and
	// socketpair: it cannot change its network namespace, which Close
	// then gives back to be used again without reading it.
	NoSockets bool
	// Allows decides a call its watched filter notified (the number and
	// the first argument), as the task's profile does: true lets it
	// through, false answers it with ENOSYS and counts it as refused
	// (Result.Denied). nil lets every notified call through.
	Allows func(nr int32, arg0 uint64) bool
	// Park has the task's loop wait parked in the runtime's poller (the
	// shell's poller) rather than in poll(2), which holds the
	// goroutine's P: for a task that runs beside others of its step,
	// whose goroutines and the cells being built meanwhile want the Ps.
	// A task alone waits in poll(2): each wake through the runtime's
	// poller costs more, and a task that writes much wakes its loop
	// often (1 MiB of stdout: 2.3-2.6 ms in poll(2), 3.7-4.1 ms parked).
	Park bool
}

// Cell is one task of a Shell, made ahead of it: the task process,
// without privileges, in the task's cgroups, waiting for its command. A
// cell runs one task ([Cell.Run]) or is closed unused ([Cell.Close]),
// which gives the shell back. Its methods are not safe for concurrent use.
type Cell struct {
	shell *Shell
	clean bool // the shell answered: all gone, mounts undone
	// This process's ends of the cell's pipes and status socket, -1 once
	// closed: plain descriptors, which pump and waitReady wait on in the
	// shell's poller (one epoll set for all of them), not files each
	// registered with the runtime's poller and unregistered. config
	// (blocking) takes the task's records, which
	// release the task; stdin (non-blocking) feeds it; stdout, stderr and
	// statR (non-blocking) carry its output and the status lines of the
	// init and the task process.
	config, stdin, stdout, stderr, statR int
	// notify is the listener of the task's watched filter, -1 for none:
	// it tells of every socket the task's processes make, so a task that
	// made none needs no look at its network namespace, and of every
	// call an allowlist refuses, which it counts. It is the cell's own
	// (the task process's filter) or, with shellNotify, the shell's (its
	// base filter), which the cell does not close.
	notify      int
	shellNotify bool
	// sawSocket: a process of the task called socket or socketpair.
	sawSocket bool
	// allows and denied: Task.Allows and Result.Denied of the running
	// task.
	allows func(nr int32, arg0 uint64) bool
	denied map[int32]int64
	// piped: the task's stdout feeds another task's stdin (PipeTo), whose
	// write end, non-blocking, is relay (-1 once closed, or for a task
	// that never runs). fed: this cell's stdin went to another cell's
	// relay.
	piped, fed bool
	relay      int

	status *initproc.Status
	used   bool
	// reaped: the shell said every process of the task is gone.
	reaped bool
	// netUsed says a process of the cell may have made a socket in the
	// shell's network namespace.
	netUsed bool
}

// waitReady waits, at most SetupTimeout, for the ready line on the status
// channel statR (non-blocking; of a shell's init or of a task process) and
// returns the reader of the lines that follow. Cancelling ctx meanwhile
// calls kill.
func waitReady(ctx context.Context, statR int, kill func()) (*initproc.Status, error) {
	st, _, err := waitReadyFrom(ctx, &fdReader{fd: statR, pidfd: -1}, kill)
	return st, err
}

// waitReadyFrom is waitReady on r; it returns as well the pidfd of the
// writer of the ready line when r takes them (a socket with SO_PASSPIDFD;
// -1 otherwise), for the caller to close.
func waitReadyFrom(ctx context.Context, r *fdReader, kill func()) (*initproc.Status, int, error) {
	stop := context.AfterFunc(ctx, kill)
	defer stop()
	r.deadline = time.Now().Add(SetupTimeout)
	st := initproc.NewStatus(r)
	err := st.WaitReady()
	pidfd := r.pidfd
	r.pidfd = -1
	if err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if ctx.Err() != nil {
			return nil, -1, context.Cause(ctx)
		}
		return nil, -1, err
	}
	return st, pidfd, nil
}

// fdReader reads a non-blocking descriptor, waiting for it until
// deadline in poll, or in poll(2) if that is nil. With pidfds set, fd is a unix socket with SO_PASSPIDFD
// and pidfd is that of the writer of the last bytes read (-1 before any).
type fdReader struct {
	fd       int
	deadline time.Time
	pidfds   bool
	pidfd    int
	poll     *poller // nil: poll(2)
}

func (r *fdReader) Read(p []byte) (int, error) {
	for {
		n, err := r.read(p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		default:
			return n, nil
		}
		if err := r.wait(); err != nil {
			return 0, err
		}
	}
}

// wait waits until fd is readable or the deadline has passed
// (os.ErrDeadlineExceeded), in its poller or else in poll(2).
func (r *fdReader) wait() error {
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
	if r.poll != nil {
		defer r.poll.clear()
		return r.poll.waitUntil(fds, r.deadline)
	}
	left := time.Until(r.deadline)
	if left <= 0 {
		return os.ErrDeadlineExceeded
	}
	ms := int(min(left.Milliseconds()+1, math.MaxInt32))
	if _, err := unix.Poll(fds, ms); err != nil && err != unix.EINTR {
		return err
	}
	return nil
}

// read reads once: with read(2), or with recvmsg(2) for the writer's
// pidfd, which replaces the one kept.
func (r *fdReader) read(p []byte) (int, error) {
	if !r.pidfds {
		return unix.Read(r.fd, p)
	}
	var oob [64]byte
	n, oobn, _, _, err := unix.Recvmsg(r.fd, p, oob[:], unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return n, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return n, err
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_PIDFD || len(m.Data) < 4 {
			continue
		}
		if r.pidfd >= 0 {
			unix.Close(r.pidfd)
		}
		r.pidfd = int(int32(binary.NativeEndian.Uint32(m.Data)))
	}
	return n, nil
}

// pipes makes the cell's three pipes, stdin, stdout and stderr, its
// config socket and its status socket, keeps this process's ends and
// returns the init's, in that order. The config channel is a socket so
// that the task's records can bring fds the task process puts in place
// of its pipes (Task.StdinFile, Task.MergeOutput): a cell is made before
// its task is known. The status channel is a socket; for a watched task
// its end here takes the writer's pidfd with what it reads
// (SO_PASSPIDFD), for the listener of the filter (see Shell.Cell).
func (c *Cell) pipes(watched bool) (theirs []int, err error) {
	for _, p := range []struct {
		mine  *int
		write bool // the init writes
	}{{&c.stdin, false}, {&c.stdout, true}, {&c.stderr, true}} {
		var their int
		if *p.mine, their, err = pipe(!p.write, true); err != nil {
			return theirs, fmt.Errorf("sandbox pipes: %w", err)
		}
		theirs = append(theirs, their)
	}
	// Blocking at both ends: this process writes the records at once,
	// and the task process reads them to EOF.
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return theirs, fmt.Errorf("sandbox config socket: %w", err)
	}
	c.config, theirs = pair[0], append(theirs, pair[1])
	pair, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return theirs, fmt.Errorf("sandbox status socket: %w", err)
	}
	c.statR, theirs = pair[0], append(theirs, pair[1])
	if err := unix.SetNonblock(c.statR, true); err != nil {
		return theirs, fmt.Errorf("sandbox status socket: %w", err)
	}
	if watched {
		if err := unix.SetsockoptInt(c.statR, unix.SOL_SOCKET, unix.SO_PASSPIDFD, 1); err != nil {
			return theirs, fmt.Errorf("sandbox status socket: SO_PASSPIDFD: %w", err)
		}
	}
	return theirs, nil
}

// openTrees clones the mounts of trees (open_tree) for an init, each with
// the mounts under it (a request's /tmp has its Go build cache's overlay
// mounted in it). On an error it returns what it opened, for the caller
// to close with the rest.
func openTrees(trees []string) (fds []int, err error) {
	for _, p := range trees {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fds, fmt.Errorf("clone the mount of %s: %w", p, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// pipe makes a pipe and returns this process's end of it, the write end
// when mineWrites, non-blocking when nonblock, and the other end, for the
// init, blocking. Both are plain descriptors: this process only passes
// the init's on, and waits on its own in poll(2).
func pipe(mineWrites, nonblock bool) (mine, theirs int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	m, t := p[0], p[1]
	if mineWrites {
		m, t = t, m
	}
	if nonblock {
		if err := unix.SetNonblock(m, true); err != nil {
			unix.Close(m)
			unix.Close(t)
			return -1, -1, err
		}
	}
	return m, t, nil
}

// closeFD closes *fd unless it is closed already (-1), and marks it so.
func closeFD(fd *int) {
	if *fd >= 0 {
		unix.Close(*fd)
		*fd = -1
	}
}

// kill kills the shell, and with it every process of the cell.
func (c *Cell) kill() { c.shell.kill() }

// Close ends the cell and gives its shell back once the shell has undone
// the task's mounts: call it off the critical path. An unused cell's task
// process reads its config's EOF without a command and exits, and the
// shell cleans up as after any task.
func (c *Cell) Close() error {
	if !c.reaped {
		closeFD(&c.config)
		closeFD(&c.stdin)
		closeFD(&c.relay)
	}
	err := c.waitExit()
	if c.clean {
		// Then the task's mounts undone, off the task's critical path.
		c.clean, err = c.shell.answer(initproc.ShellClean)
	}
	c.close()
	c.shell.release(c.clean, c.netUsed)
	return err
}

// close closes the cell's files.
func (c *Cell) close() {
	if c.shellNotify {
		c.notify = -1
	}
	for _, fd := range []*int{&c.config, &c.stdin, &c.stdout, &c.stderr, &c.statR, &c.notify, &c.relay} {
		closeFD(fd)
	}
}

// waitExit waits for the shell's word that every process of the task is
// gone.
func (c *Cell) waitExit() error {
	if c.reaped {
		return nil
	}
	var err error
	c.clean, err = c.shell.answer(initproc.ShellGone)
	c.reaped = true
	return err
}

// waitPidfd waits until the process of pidfd has exited and reaps it. For
// an init, the kernel makes the pidfd readable only once its PID namespace
// is empty, so every process in it is gone then.
func waitPidfd(pidfd *os.File) error {
	rc, err := pidfd.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		if err == unix.EINTR {
			return false
		}
		perr = err
		return err != nil || n > 0
	})
	if err == nil {
		err = perr
	}
	if err == nil {
		var info unix.Siginfo
		err = unix.Waitid(unix.P_PIDFD, int(pidfd.Fd()), &info, unix.WEXITED, nil)
	}
	if err != nil {
		return fmt.Errorf("wait for sandbox init: %w", err)
	}
	return nil
}

// Run releases the cell's task and returns when every process of it is
// gone. An error means the task could not be run. Close the cell
// afterwards either way.
func (c *Cell) Run(ctx context.Context, t *Task) (*Result, error) {
	switch {
	case c.used:
		return nil, errors.New("sandbox: cell already used")
	case c.fed && t.Stdin != "":
		return nil, errors.New("sandbox: stdin for a task whose stdin another task feeds")
	case t.StdinFile != nil && (t.Stdin != "" || c.fed):
		return nil, errors.New("sandbox: a stdin file for a task with stdin, or whose stdin another task feeds")
	case c.piped && t.StdoutFile != nil:
		return nil, errors.New("sandbox: a stdout file for a task whose stdout feeds another")
	}
	c.used = true
	r := &Result{}
	k := &killer{kill: c.kill}

	outputKill := func() { k.killFor(killOutput) }
	out := &collector{limit: t.OutputLimit, budget: t.Budget, exceeded: outputKill}
	errs := &collector{limit: t.OutputLimit, budget: t.Budget, exceeded: outputKill}
	if t.StdoutFile != nil {
		out.budget, out.file = nil, t.StdoutFile
	}
	if t.StderrFile != nil && !t.MergeOutput {
		errs.budget, errs.file = nil, t.StderrFile
	}
	var rl *relay
	if c.piped {
		// A transcript: cut at the limit, while the bytes flow on.
		out.exceeded = nil
		rl = newRelay(out)
		if c.relay < 0 {
			// No consumer will run: the stdout has no reader from the
			// start, before the task is released, so that its first
			// write fails (SIGPIPE) as it would with a pipe whose
			// reader is gone, and nothing reaches the transcript.
			closeFD(&c.stdout)
		}
	}

	// The config's EOF releases the task; its wall clock runs from then.
	spec := t.Spec
	spec.StdinPassed, spec.MergeOutput = t.StdinFile != nil, t.MergeOutput
	if t.MergeOutput {
		// The task process puts a copy of its stdout in place of the
		// stderr pipe, whose end here has nothing to read.
		closeFD(&c.stderr)
	}
	start := time.Now()
	werr := sendRecords(c.config, spec.Encode(), t.StdinFile)
	closeFD(&c.config)
	var timer *time.Timer
	if t.WallTimeout > 0 {
		timer = time.AfterFunc(t.WallTimeout, func() { k.killFor(killTimeout) })
	}
	// The CPU limit and ctx are watched by callbacks, not goroutines: a
	// task that ends within its limits costs them no goroutine at all.
	stopCPU := func() {}
	if t.CPULimit > 0 && t.CPUUsage != nil {
		stopCPU = watchCPU(t, func() { k.killFor(killCPU) })
	}
	stopCancel := context.AfterFunc(ctx, func() { k.killFor(killCancel) })

	var stdin []byte
	if werr == nil {
		// t.Stdin's own bytes, not a copy (it may be large): pump only
		// writes them out.
		stdin = unsafe.Slice(unsafe.StringData(t.Stdin), len(t.Stdin))
	}
	c.allows = t.Allows
	var pl *poller
	if t.Park && rl == nil {
		pl = c.shell.poll
	}
	rep, serr := c.status.FinishFrom(c.pump(stdin, out, errs, rl, pl))
	// A task under a watched filter told of every socket it made.
	c.netUsed = !t.NoSockets && (c.notify < 0 || c.sawSocket)
	xerr := c.waitExit()
	end := time.Now()
	if timer != nil {
		timer.Stop()
	}
	// Once the task is known to have exited, a late kill does nothing.
	k.exited()
	stopCPU()
	stopCancel()
	if rl != nil {
		// What the task wrote last, to a consumer that may still read.
		c.finishRelay(rl)
	}
	r.Stdout, r.StdoutTruncated = out.result()
	r.Stderr, r.StderrTruncated = errs.result()
	if xerr != nil {
		return nil, xerr
	}
	if serr != nil && rep.SetupError == "" {
		rep.SetupError = serr.Error()
	}
	r.Report = rep
	switch k.reason() {
	case killTimeout:
		r.TimedOut = true
	case killCPU:
		r.CPUExceeded = true
	case killOutput:
		r.OutputExceeded = true
	case killCancel:
		r.Cancelled = true
	}
	r.WallTime = end.Sub(start)
	r.Watched, r.Denied = c.notify >= 0, c.denied
	return r, nil
}

// Why the runner killed a task.
const (
	killNone = iota
	killTimeout
	killCPU
	killOutput
	killCancel
)

// killer kills a task's init (and with it the task's PID namespace) once,
// remembering the first reason.
type killer struct {
	kill func()

	mu   sync.Mutex // guards why and done
	why  int
	done bool // the init has exited
}

func (k *killer) killFor(why int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Once the task has ended, a timer or a cancellation firing late
	// changes nothing; output read after the end still overflows.
	if k.why != killNone || (k.done && why != killOutput) {
		return
	}
	k.why = why
	if !k.done {
		k.kill()
	}
}

// exited records that the init has been reaped.
func (k *killer) exited() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
}

func (k *killer) reason() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

// A collector keeps what is read from an output stream (fill), at most
// its limit (0: no limit) and what its budget grants. Past either it
// calls exceeded once (if not nil) and drains the rest.
//
// Reads go straight into out's spare room: no buffer to copy from. The
// room starts in the collector itself, since most tasks write little or
// nothing (and a stream's end is a read too), then is allocated and
// doubles (up to the limit), so a large output is copied about once in
// all as it grows, and allocated as few times: each allocation brings the
// garbage collector closer. What comes past the limit is drained through
// a scratch buffer.
type collector struct {
	limit    int64 // 0: none
	budget   *Budget
	exceeded func()
	// file, if not nil, takes the stream instead of out (fillFile);
	// written counts what it took.
	file      *os.File
	written   int64
	out       []byte
	first     [128]byte // out's first room
	scratch   []byte
	truncated bool
}

const collectFirst, collectChunk = 4 * 1024, 64 * 1024

// room returns where the next read goes.
func (c *collector) room() []byte {
	out := c.out
	switch {
	case c.truncated || c.limit > 0 && int64(len(out)) >= c.limit:
		if c.scratch == nil {
			c.scratch = make([]byte, collectChunk)
		}
		return c.scratch
	case cap(out) == 0:
		n := int64(len(c.first))
		if c.limit > 0 {
			n = min(n, c.limit)
		}
		c.out = c.first[:0:n]
	case len(out) == cap(out):
		grow := max(collectFirst, len(out))
		if c.limit > 0 {
			grow = int(min(int64(grow), c.limit-int64(len(out))))
		}
		c.out = slices.Grow(out, grow)
	}
	return c.out[len(c.out):cap(c.out)]
}

// add takes the n bytes just read into room.
func (c *collector) add(n int) {
	if n <= 0 || c.truncated {
		return
	}
	keep := int64(n)
	if c.limit > 0 {
		keep = min(keep, c.limit-int64(len(c.out)))
	}
	if c.budget != nil {
		keep = c.budget.take(keep)
	}
	c.out = c.out[:len(c.out)+int(keep)] // kept bytes were read in place (scratch keeps none)
	if keep < int64(n) {
		c.truncated = true
		if c.exceeded != nil {
			c.exceeded()
		}
	}
}

// keep takes b, bytes read elsewhere (a relay's), as fill takes what it
// reads: a copy of what fits.
func (c *collector) keep(b []byte) {
	for len(b) > 0 && !c.truncated {
		if c.limit > 0 && int64(len(c.out)) >= c.limit {
			c.add(len(b)) // none kept: truncated
			return
		}
		n := copy(c.room(), b)
		c.add(n)
		b = b[n:]
	}
}

// result returns what was kept and whether anything was not.
func (c *collector) result() ([]byte, bool) {
	out := c.out
	if len(out) == 0 {
		return nil, c.truncated
	}
	if idle := cap(out) - len(out); idle > collectFirst && idle > len(out) {
		out = slices.Clip(bytes.Clone(out)) // mostly idle room: not kept
	}
	return out, c.truncated
}

// fill reads fd, a non-blocking pipe or socket, into c until it is empty
// (false) or at its end (true).
func (c *collector) fill(fd int) (eof bool) {
	if c.file != nil {
		return c.fillFile(fd)
	}
	for {
		n, err := unix.Read(fd, c.room())
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		case err != nil:
			c.truncated = true
			return true
		case n == 0:
			return true
		default:
			c.add(n)
		}
	}
}

// spliceChunk is the most one splice moves from a stream's pipe to its
// file: what a pipe holds at most by default, 16 times over.
const spliceChunk = 1 << 20

// fillFile moves what the pipe fd (non-blocking) holds to c.file with
// splice(2), at the file's offset, until the pipe is empty (false) or at
// its end (true): the bytes go from the pipe's pages to the file's
// without passing through this process. Past the limit, or once the
// file takes no more (the workspace is full), it drains the pipe into
// its scratch buffer: a byte there truncates the stream and calls
// exceeded, so that the file holds exactly the limit.
func (c *collector) fillFile(fd int) (eof bool) {
	for {
		if c.truncated || c.limit > 0 && c.written >= c.limit {
			if c.scratch == nil {
				c.scratch = make([]byte, collectChunk)
			}
			n, err := unix.Read(fd, c.scratch)
			switch {
			case err == unix.EINTR:
			case err == unix.EAGAIN:
				return false
			case err != nil || n == 0:
				return true
			default:
				c.cut()
			}
			continue
		}
		want := spliceChunk
		if c.limit > 0 {
			want = int(min(int64(want), c.limit-c.written))
		}
		n, err := unix.Splice(fd, nil, int(c.file.Fd()), nil, want, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		case err != nil:
			// ENOSPC, EFBIG or an I/O error: the file takes no more.
			c.cut()
		case n == 0:
			return true
		default:
			c.written += n
		}
	}
}

// cut marks the stream cut short and calls exceeded, once.
func (c *collector) cut() {
	if c.truncated {
		return
	}
	c.truncated = true
	if c.exceeded != nil {
		c.exceeded()
	}
}

// pollWait waits for fds in poll(2), with no timeout: where no poller
// can be had (out of descriptors), the task still runs.
func pollWait(fds []unix.PollFd) error {
	_, err := unix.Poll(fds, -1)
	return err
}

// sendRecords writes a task's records b to fd, its config socket
// (blocking), with the fd of stdin, if not nil, in SCM_RIGHTS on the
// first bytes.
func sendRecords(fd int, b []byte, stdin *os.File) error {
	if stdin == nil {
		return writeAll(fd, b)
	}
	for {
		n, err := unix.SendmsgN(fd, b, unix.UnixRights(int(stdin.Fd())), nil, 0)
		if err == unix.EINTR {
			continue // nothing was sent
		}
		if err != nil {
			return err
		}
		return writeAll(fd, b[n:])
	}
}

// writeAll writes b to fd, a blocking descriptor.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// pump moves a released task's streams in the calling goroutine until
// its stdout, stderr and status channel are all at their end, which is
// once every process of the task is gone: it reads whatever they hold,
// writes stdin as its pipe takes it, answers the watched filter's
// notifications, and waits between: parked in pl if not nil (see
// Task.Park), else in poll(2). It returns the status lines the channel
// carried after the ready line. One loop in the request's own goroutine,
// rather than a goroutine for each stream, spares a task's end three
// wake-ups.
//
// A piped task's stdout goes through rl (non-nil) to the task it feeds,
// in the same loop; it does not count towards the end, since the
// consumer may not read it all: Run finishes the relay once the task is
// gone.
func (c *Cell) pump(stdin []byte, out, errs *collector, rl *relay, pl *poller) (status []byte) {
	const (
		iOut = iota
		iErr
		iStatus
		iIn
		iNotify
		iRelay
	)
	fds := []unix.PollFd{
		iOut:    {Fd: int32(c.stdout), Events: unix.POLLIN},
		iErr:    {Fd: int32(c.stderr), Events: unix.POLLIN},
		iStatus: {Fd: int32(c.statR), Events: unix.POLLIN},
		iIn:     {Fd: -1},
		iNotify: {Fd: int32(c.notify), Events: unix.POLLIN},
		iRelay:  {Fd: -1},
	}
	if len(stdin) > 0 {
		fds[iIn] = unix.PollFd{Fd: int32(c.stdin), Events: unix.POLLOUT}
	} else {
		closeFD(&c.stdin)
	}
	sc := &collector{}
	sinks := [...]*collector{iOut: out, iErr: errs, iStatus: sc}
	open := 3
	if c.stderr < 0 {
		// Merged into the stdout (Task.MergeOutput).
		fds[iErr].Fd = -1
		open--
	}
	if rl != nil {
		c.startRelay(rl, &fds[iOut], &fds[iRelay])
		open--
	}
	wait := pollWait
	if pl != nil {
		wait = pl.wait
		defer pl.clear()
	}
	for open > 0 {
		if err := wait(fds); err != nil {
			if err == unix.EINTR {
				continue
			}
			// Waiting fails only for want of memory: end the task,
			// with what it wrote so far, rather than spin.
			c.kill()
			out.truncated, errs.truncated = true, true
			return sc.out
		}
		for i := range fds {
			p := &fds[i]
			if p.Fd < 0 || p.Revents == 0 {
				continue
			}
			revents := p.Revents
			p.Revents = 0
			if i == iNotify {
				if !c.answer(revents) {
					p.Fd = -1 // no process left with the filter
				}
				continue
			}
			if i == iIn {
				if stdin = writeSome(int(p.Fd), stdin); len(stdin) == 0 {
					closeFD(&c.stdin)
					p.Fd = -1
				}
				continue
			}
			if rl != nil && (i == iOut || i == iRelay) {
				c.forward(rl, i == iRelay && revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0)
				continue
			}
			if sinks[i].fill(int(p.Fd)) {
				p.Fd = -1 // poll passes over negative fds
				open--
			}
		}
	}
	return sc.out
}

// answer serves the listener of the task's watched filter, which poll
// found with revents: a notification is a process of the task in a call
// the filter left to the listener, a socket or socketpair its profile
// allows, which it lets through (SECCOMP_USER_NOTIF_FLAG_CONTINUE: the
// filter has decided the call already, from its arguments alone) and
// records, or a call the allowlist refuses, which it answers with ENOSYS
// and counts. It returns false once no process has the filter any more.
func (c *Cell) answer(revents int16) bool {
	if revents&unix.POLLIN != 0 {
		// struct seccomp_notif (80 bytes: id, pid, flags, then struct
		// seccomp_data: nr, arch, instruction_pointer, args), zeroed as
		// the kernel wants, and struct seccomp_notif_resp (24 bytes: id,
		// val, error, flags).
		var req [80]byte
		if err := ioctlPtr(c.notify, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err == nil {
			nr := int32(binary.NativeEndian.Uint32(req[16:]))
			arg0 := binary.NativeEndian.Uint64(req[32:])
			var resp [24]byte
			copy(resp[0:8], req[0:8]) // id
			if c.allows == nil || c.allows(nr, arg0) {
				c.sawSocket = true
				binary.NativeEndian.PutUint32(resp[20:], unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE)
			} else {
				if c.denied == nil {
					c.denied = make(map[int32]int64)
				}
				c.denied[nr]++
				errno := -int32(unix.ENOSYS)
				binary.NativeEndian.PutUint32(resp[16:], uint32(errno))
			}
			// ENOENT: the process is gone, and its call with it.
			ioctlPtr(c.notify, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
		} else if err != unix.ENOENT && err != unix.EINTR {
			// Nothing more can be served: the task's notified calls
			// would wait forever. It ends, its namespace read.
			c.sawSocket = true
			c.kill()
			return false
		}
	}
	return revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) == 0
}

// ioctlPtr is ioctl(2) with a pointer argument.
func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// writeSome writes b to fd, a non-blocking pipe, as far as the pipe takes
// it, and returns what is left: nothing once written, or once the reader
// is gone (EPIPE) or the write fails.
func writeSome(fd int, b []byte) []byte {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return b
		case err != nil:
			return nil
		default:
			b = b[n:]
		}
	}
	return nil
}

// watchCPU kills the task once its cgroup has used CPULimit. It checks at
// the earliest time the limit can be reached at CPURate CPUs, so a task
// far from its limit costs one timer, not a poll loop. It returns the
// function that stops the checks; a check already running may still call
// kill, which does nothing once the task has exited (killer.exited).
func watchCPU(t *Task, kill func()) (stop func()) {
	rate := t.CPURate
	if rate <= 0 {
		rate = 1
	}
	var (
		mu      sync.Mutex // guards timer and stopped
		timer   *time.Timer
		stopped bool
	)
	var check func()
	check = func() {
		used, err := t.CPUUsage()
		if err != nil {
			return // the cgroup is gone: the task has ended
		}
		if used >= t.CPULimit {
			kill()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(max(time.Duration(float64(t.CPULimit-used)/rate), 2*time.Millisecond), check)
		}
	}
	mu.Lock()
	timer = time.AfterFunc(time.Duration(float64(t.CPULimit)/rate), check)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

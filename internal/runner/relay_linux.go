package runner

import (
	"errors"

	"golang.org/x/sys/unix"
)

// PipeTo makes the standard output of c's task the standard input of
// to's, for tasks that talk to each other (an interactor and a
// solution): c's Run relays every byte its task writes to to's task and
// keeps them as its Result.Stdout, a transcript cut at the output limit
// (or where the budget runs out) with StdoutTruncated while the bytes
// keep flowing; a relayed stream never kills its task (OutputExceeded).
// When to's task has ended, c's task's writes fail with EPIPE (SIGPIPE);
// when c's task has ended, to's task reads end-of-file once it has read
// every byte. A nil to is a task that never runs: c's task's writes fail
// at once.
//
// Call it before either cell runs; to's Task.Stdin must be empty, and a
// cell feeds one cell at most. Two cells may feed each other.
func (c *Cell) PipeTo(to *Cell) error {
	switch {
	case c.used || c.piped:
		return errors.New("sandbox: a piped cell that is used or feeds another already")
	case to != nil && (to.used || to.fed || to.stdin < 0):
		return errors.New("sandbox: a cell to feed that is used or fed already")
	}
	if to != nil {
		c.relay, to.stdin = to.stdin, -1
		to.fed = true
	}
	c.piped = true
	return nil
}

// relayBuf is the relay's buffer, a pipe's default capacity: as much as
// one read from a full pipe brings.
const relayBuf = 64 * 1024

// A relay carries what a piped task writes to its stdout on to the stdin
// of the task it feeds (Cell.PipeTo), and keeps the transcript in out. It
// reads the producer again only once the consumer has taken every byte
// read before: a consumer that does not read holds the producer up, as
// one pipe between them would, and nothing is buffered past one read.
// Both ends are plain non-blocking descriptors that the cell's pump
// waits on with the task's other streams: a read and a write, no
// goroutine and no allocation per message.
type relay struct {
	out     *collector
	buf     []byte
	pending []byte // read, not yet written
	done    bool   // the stdout is at its end or cut off, the relay closed
	// po and pr are the pump's poll entries of the stdout (POLLIN) and
	// of the consumer's stdin (POLLOUT while bytes wait, else none: poll
	// reports POLLERR once no reader is left), -1 when not waited on.
	po, pr *unix.PollFd
}

func newRelay(out *collector) *relay {
	return &relay{out: out, buf: make([]byte, relayBuf)}
}

// start sets the poll entries po and pr for c's stdout and relay. A task
// whose consumer never runs has its stdout cut off at once.
func (c *Cell) startRelay(rl *relay, po, pr *unix.PollFd) {
	rl.po, rl.pr = po, pr
	*po = unix.PollFd{Fd: int32(c.stdout), Events: unix.POLLIN}
	*pr = unix.PollFd{Fd: int32(c.relay)}
	if c.relay < 0 {
		c.cutOff(rl)
	}
}

// forward moves bytes on: the pending ones as far as the consumer's pipe
// takes them, then one read of the stdout, forwarded at once, so that a
// message costs one read and one write. gone says poll found the
// consumer's stdin without a reader. It leaves the poll entries set for
// what it waits on next; the stdout read end is closed once at its end
// (and the consumer's stdin after the last byte, so that the consumer
// reads end-of-file) or once the consumer has ended (cutOff).
func (c *Cell) forward(rl *relay, gone bool) {
	switch {
	case rl.done:
		return
	case gone:
		c.cutOff(rl)
		return
	case !c.flush(rl):
		return
	}
	for {
		n, err := unix.Read(c.stdout, rl.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != nil || n == 0:
			// The end: every process that could write is gone.
			rl.out.truncated = rl.out.truncated || err != nil
			c.endRelay(rl)
			return
		}
		rl.out.keep(rl.buf[:n])
		rl.pending = rl.buf[:n]
		// At once: the consumer's pipe most likely has room.
		c.flush(rl)
		return
	}
}

// flush writes the pending bytes as far as the consumer's pipe takes
// them. It reports whether all are written: then the stdout is waited on
// again; otherwise room in the consumer's pipe is, or the relay is cut
// off (the consumer has ended).
func (c *Cell) flush(rl *relay) bool {
	for len(rl.pending) > 0 {
		n, err := unix.Write(c.relay, rl.pending)
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			rl.po.Fd, rl.pr.Events = -1, unix.POLLOUT
			return false
		case err != nil:
			// EPIPE: the consumer has ended.
			c.cutOff(rl)
			return false
		default:
			rl.pending = rl.pending[n:]
		}
	}
	rl.po.Fd, rl.pr.Events = int32(c.stdout), 0
	return true
}

// cutOff ends the stdout of a piped task whose consumer has ended: what
// the pipe holds now goes to the transcript, then its read end is
// closed, so that the task's next write fails with EPIPE. Bytes read
// and not taken by the consumer are dropped.
func (c *Cell) cutOff(rl *relay) {
	// FIONREAD (TIOCINQ): what the pipe holds, and no more, since a
	// producer that writes on would refill it as fast as it is read.
	if n, err := unix.IoctlGetInt(c.stdout, unix.TIOCINQ); err == nil {
		for n > 0 {
			k, err := unix.Read(c.stdout, rl.buf[:min(n, len(rl.buf))])
			if err == unix.EINTR {
				continue
			}
			if err != nil || k == 0 {
				break
			}
			rl.out.keep(rl.buf[:k])
			n -= k
		}
	}
	c.endRelay(rl)
}

// endRelay closes both ends of the relay and stops waiting on them.
func (c *Cell) endRelay(rl *relay) {
	closeFD(&c.stdout)
	closeFD(&c.relay)
	rl.pending, rl.done = nil, true
	rl.po.Fd, rl.pr.Fd = -1, -1
}

// finishRelay relays what is left once every process of the task is
// gone: the bytes still in the stdout pipe, for as long as the consumer
// reads them, which ends with the consumer at the latest.
func (c *Cell) finishRelay(rl *relay) {
	fds := []unix.PollFd{*rl.po, *rl.pr}
	rl.po, rl.pr = &fds[0], &fds[1]
	for !rl.done {
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			c.cutOff(rl)
			return
		}
		gone := fds[1].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0
		if gone || fds[0].Revents != 0 || fds[1].Revents != 0 {
			c.forward(rl, gone)
		}
		fds[0].Revents, fds[1].Revents = 0, 0
	}
}

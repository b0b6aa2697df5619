package runner

import (
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A poller waits for a task's descriptors as poll(2) would, with the
// goroutine parked in the runtime's network poller rather than in a
// system call. A goroutine blocked in poll(2) holds its P: the runtime's
// monitor (sysmon) then wakes every 20 µs or so for as long as other
// goroutines want to run, each time on a CPU the task itself may be
// using, and takes the P back only after a tick. The poller's own epoll
// instance holds the descriptors and is itself registered with the
// runtime's poller, which wakes the goroutine when any of them is ready:
// the same one wake-up as poll(2) gives.
//
// The descriptors it is given are the caller's, as a []unix.PollFd; each
// wait brings the epoll set in line with them (a negative Fd is passed
// over, as poll does), so code written for poll(2) keeps its entries.
type poller struct {
	ep  *os.File // the epoll instance, non-blocking, in the runtime's poller
	rc  syscall.RawConn
	fd  int
	reg []unix.EpollEvent // the descriptors registered (Fd) with their events
	evs [8]unix.EpollEvent
}

func newPoller() (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	ep := os.NewFile(uintptr(fd), "epoll")
	rc, err := ep.SyscallConn()
	if err != nil {
		ep.Close()
		return nil, err
	}
	return &poller{ep: ep, rc: rc, fd: fd}, nil
}

// wait sets the Revents of fds as poll(2) with no timeout does: it
// returns once at least one is set, or with an error.
func (p *poller) wait(fds []unix.PollFd) error { return p.waitUntil(fds, time.Time{}) }

// waitUntil is wait with a deadline (none if zero), past which it returns
// os.ErrDeadlineExceeded.
func (p *poller) waitUntil(fds []unix.PollFd, deadline time.Time) error {
	if err := p.sync(fds); err != nil {
		return err
	}
	for i := range fds {
		fds[i].Revents = 0
	}
	if err := p.ep.SetReadDeadline(deadline); err != nil {
		return err
	}
	var n int
	var werr error
	err := p.rc.Read(func(uintptr) bool {
		for {
			n, werr = unix.EpollWait(p.fd, p.evs[:], 0)
			if werr != unix.EINTR {
				return werr != nil || n > 0
			}
		}
	})
	if err == nil && werr != nil {
		err = os.NewSyscallError("epoll_wait", werr)
	}
	if err != nil {
		return err
	}
	for _, ev := range p.evs[:n] {
		for i := range fds {
			if fds[i].Fd == ev.Fd {
				// EPOLLIN, EPOLLOUT, EPOLLERR and EPOLLHUP have poll's values.
				fds[i].Revents = int16(ev.Events)
			}
		}
	}
	return nil
}

// sync brings the registered set in line with fds: it removes the
// descriptors no longer wanted, changes those wanted with other events
// and adds the new ones. A descriptor closed since its registration left
// the set with it, and its removal fails harmlessly.
func (p *poller) sync(fds []unix.PollFd) error {
	want := func(fd int32) (uint32, bool) {
		for _, f := range fds {
			if f.Fd == fd {
				return uint32(uint16(f.Events)), true
			}
		}
		return 0, false
	}
	kept := p.reg[:0]
	for _, r := range p.reg {
		w, ok := want(r.Fd)
		if !ok {
			unix.EpollCtl(p.fd, unix.EPOLL_CTL_DEL, int(r.Fd), nil)
			continue
		}
		if w != r.Events {
			r.Events = w
			if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_MOD, int(r.Fd), &r); err != nil {
				return os.NewSyscallError("epoll_ctl", err)
			}
		}
		kept = append(kept, r)
	}
	p.reg = kept
	for _, f := range fds {
		if f.Fd < 0 || slices.ContainsFunc(p.reg, func(r unix.EpollEvent) bool { return r.Fd == f.Fd }) {
			continue
		}
		r := unix.EpollEvent{Events: uint32(uint16(f.Events)), Fd: f.Fd}
		if err := unix.EpollCtl(p.fd, unix.EPOLL_CTL_ADD, int(f.Fd), &r); err != nil {
			return os.NewSyscallError("epoll_ctl", err)
		}
		p.reg = append(p.reg, r)
	}
	return nil
}

// clear removes every registration. A poller kept for one descriptor set
// after another is cleared before the caller closes any of its set, so
// that no registration outlives its descriptor: a number the kernel
// gives again would otherwise read as registered already.
func (p *poller) clear() { p.sync(nil) }

// close closes the epoll instance.
func (p *poller) close() { p.ep.Close() }

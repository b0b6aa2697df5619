package runner

import (
	"testing"

	"golang.org/x/sys/unix"
)

// newTestPoller returns a poller closed with the test.
func newTestPoller(t *testing.T) *poller {
	t.Helper()
	p, err := newPoller()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// testPipe returns a non-blocking pipe, closed with the test unless the
// test closes an end itself (then it sets it to -1).
func testPipe(t *testing.T) *[2]int {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, fd := range p {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	})
	return &p
}

// TestPollerAsPoll: the poller reports what poll(2) reports for the same
// entries, as they change: data to read, room to write, a writer gone
// (POLLHUP), no events asked (still POLLHUP), a negative Fd passed over.
func TestPollerAsPoll(t *testing.T) {
	p := newTestPoller(t)
	a, b := testPipe(t), testPipe(t)
	if _, err := unix.Write(a[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	check := func(name string, fds []unix.PollFd) {
		t.Helper()
		want := append([]unix.PollFd(nil), fds...)
		if _, err := unix.Poll(want, 0); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(fds); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range fds {
			if fds[i].Revents != want[i].Revents {
				t.Errorf("%s: entry %d (fd %d): revents %#x, poll(2) says %#x", name, i, fds[i].Fd, fds[i].Revents, want[i].Revents)
			}
		}
	}
	fds := []unix.PollFd{
		{Fd: int32(a[0]), Events: unix.POLLIN},
		{Fd: int32(b[1]), Events: unix.POLLOUT},
		{Fd: -1, Events: unix.POLLIN},
	}
	check("readable and writable", fds)
	fds[1].Events = 0 // changed: the pipe's room no longer asked for
	check("one asked for nothing", fds)
	unix.Close(a[1])
	a[1] = -1
	fds[1].Fd = -1
	check("writer gone", fds)
	fds[0].Events = 0
	check("writer gone, nothing asked", fds)
}

// TestPollerWaits: wait returns only once an entry is ready, here after
// another goroutine writes.
func TestPollerWaits(t *testing.T) {
	p := newTestPoller(t)
	a := testPipe(t)
	done := make(chan error, 1)
	fds := []unix.PollFd{{Fd: int32(a[0]), Events: unix.POLLIN}}
	go func() { done <- p.wait(fds) }()
	select {
	case err := <-done:
		t.Fatalf("wait returned before anything was written: %v", err)
	default:
	}
	if _, err := unix.Write(a[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fds[0].Revents&unix.POLLIN == 0 {
		t.Errorf("revents %#x, want POLLIN", fds[0].Revents)
	}
}

// TestPollerClearedReusesNumbers: a poller kept from one descriptor set to
// the next (as a shell's is, from cell to cell) and cleared between them
// waits on a new descriptor that has the number of an old one. Without
// the clear the number reads as registered already: the new descriptor
// is not added, and here its change of events fails.
func TestPollerClearedReusesNumbers(t *testing.T) {
	p := newTestPoller(t)
	a := testPipe(t)
	if err := p.sync([]unix.PollFd{{Fd: int32(a[0]), Events: unix.POLLIN | unix.POLLPRI}}); err != nil {
		t.Fatal(err)
	}
	p.clear()
	old := a[0]
	unix.Close(a[0])
	a[0] = -1
	b := testPipe(t)
	if b[0] != old {
		t.Skipf("the kernel gave the read end %d, not the closed %d", b[0], old)
	}
	done := make(chan error, 1)
	fds := []unix.PollFd{{Fd: int32(b[0]), Events: unix.POLLIN}}
	go func() { done <- p.wait(fds) }()
	if _, err := unix.Write(b[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fds[0].Revents&unix.POLLIN == 0 {
		t.Errorf("revents %#x, want POLLIN", fds[0].Revents)
	}
}

package runner

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Creating a network namespace takes about a millisecond and destroying
// one more, under a kernel-wide lock; with CLONE_NEWNET in the task's
// clone both were on every task's critical path. A background thread
// instead makes fresh namespaces ahead of demand, brings their lo up and
// hands each to one cell. The namespace belongs to the host's user
// namespace, so not even the sandbox's init holds a capability over it;
// a cell whose processes could make no socket gives it back
// (recycleNetns), and every other is destroyed after its one task: nothing
// passes from one task to another.

// netPoolSize is how many namespaces wait ready at most.
const netPoolSize = 4

var (
	netOnce sync.Once
	netCh   chan netResult
)

type netResult struct {
	f   *os.File
	err error
}

// unusedNets holds namespaces given back by cells whose processes could
// not have changed them (see recycleNetns), to be handed out again first.
var unusedNets = make(chan *os.File, 2*netPoolSize)

// freshNetns returns a network namespace with only lo, up, that no
// process has used. The caller closes it or gives it to recycleNetns.
func freshNetns() (*os.File, error) {
	select {
	case f := <-unusedNets:
		return f, nil
	default:
	}
	netOnce.Do(func() {
		netCh = make(chan netResult, netPoolSize)
		go netLoop()
	})
	r := <-netCh
	return r.f, r.err
}

// recycleNetns takes back a namespace that its cell's processes, all gone
// now, could not have changed: none could make a socket (the cell never
// released its task, or the task's seccomp policy refuses sockets), and
// the namespace belongs to the host's user namespace, so none held a
// capability over it. It is as fresh as a new one, counters included
// (nothing was sent), and costs nothing to make or destroy.
func recycleNetns(f *os.File) {
	select {
	case unusedNets <- f:
	default:
		f.Close()
	}
}

func netLoop() {
	runtime.LockOSThread() // never unlocked: the thread switches namespaces
	host, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		for {
			netCh <- netResult{err: fmt.Errorf("open the host network namespace: %w", err)}
		}
	}
	for {
		f, err := makeNetns(host)
		netCh <- netResult{f, err}
	}
}

// makeNetns makes a network namespace on this thread, brings lo up and
// returns the thread to host.
func makeNetns(host *os.File) (*os.File, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("new network namespace: %w", err)
	}
	defer func() {
		if err := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); err != nil {
			panic(fmt.Sprintf("svc: return to the host network namespace: %v", err))
		}
	}()
	f, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("open the new network namespace: %w", err)
	}
	if err := loopbackUp(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

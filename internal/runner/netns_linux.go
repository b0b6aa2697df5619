package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Creating a network namespace takes about a millisecond and destroying
// one more, under a kernel-wide lock; with CLONE_NEWNET in the task's
// clone both were on every task's critical path. A background thread
// instead makes fresh namespaces ahead of demand, brings their lo up and
// hands each to one cell.
//
// The namespace belongs to the host's user namespace, so not even the
// sandbox's init holds a capability over it: a task can change it only
// through the sockets it makes (no address, route, rule, sysctl or device
// is within its reach), and a socket shows in the namespace's /proc/net
// listings while it exists and in its counters once it has sent anything.
// So once every process of a cell is gone, a namespace whose listings and
// counters read as they did when it was made is as fresh as a new one and
// is used again; any other is destroyed. A cell whose processes could
// make no socket (its task never released, or refused sockets by its
// seccomp policy) gives its namespace back unread, and so does one whose
// task's watched filter told of no socket made (ShellTask.Watched).

// netPoolSize is how many fresh namespaces wait ready at most.
const netPoolSize = 4

// netState are the /proc/net files whose content tells what the sockets
// of a namespace did: how many sockets exist, of every family, and of
// each IP protocol (a TCP connection may outlive its process, in TIME_WAIT
// or orphaned; a unix socket in flight in a garbage cycle outlives its
// processes until the kernel collects it, and counts until then), the
// counters that every packet, connection attempt and
// routing failure moves, and the multicast memberships and flow labels a
// socket can hold. A missing file (no IPv6) reads as missing each time.
// The socket tables are not among them: reading /proc/net/tcp walks the
// host-wide hash table (5 ms here), and /proc/net/unix (20 us a read,
// a sixth of the whole) lists sockets that sockstat's "sockets: used",
// the namespace's count of sockets of every family, counts already.
var netState = []string{
	"sockstat", "sockstat6", "dev", "snmp", "snmp6", "netstat",
	"igmp", "igmp6", "mcfilter", "mcfilter6", "ip6_flowlabel",
}

// hostWide are the fields of sockstat and sockstat6 that count for the
// whole host, not the namespace: left out of its state.
var hostWide = map[string]bool{"alloc": true, "mem": true, "orphan": true}

// netns is a network namespace, its netState files held open (a /proc/net
// file stays bound to the namespace it was opened in, and reads again from
// offset 0), and what they read when it was made.
type netns struct {
	f     *os.File
	fds   []int // of netState, -1 for a missing file
	state []byte
	buf   []byte // of the next read
}

func (n *netns) close() {
	for _, fd := range n.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	n.f.Close()
}

var (
	netOnce sync.Once
	netCh   chan netResult
	// dirtyNets are namespaces a cell's processes could have used, all
	// gone now, for the thread to read and keep or destroy.
	dirtyNets = make(chan *netns, 2*netPoolSize)
	// unusedNets hold namespaces as fresh as new ones, handed out first.
	unusedNets = make(chan *netns, 2*netPoolSize)
	// hostNet is the host's network namespace, opened by the thread.
	hostNet *os.File
)

type netResult struct {
	n   *netns
	err error
}

// freshNetns returns a network namespace with only lo, up, that is as no
// process had used it. The caller gives it to releaseNetns.
func freshNetns() (*netns, error) {
	select {
	case n := <-unusedNets:
		netCounts.reused.Add(1)
		return n, nil
	default:
	}
	startNetLoop()
	r := <-netCh
	return r.n, r.err
}

// startNetLoop starts, once, the threads that make and read namespaces.
func startNetLoop() {
	netOnce.Do(func() {
		netCh = make(chan netResult, netPoolSize)
		ready := make(chan struct{})
		go netLoop(ready)
		<-ready
		go checkLoop()
	})
}

// releaseNetns takes back a namespace once every process of its cell is
// gone. used says a process may have made a socket in it: the namespace
// is then kept only if its state reads as when it was made.
func releaseNetns(n *netns, used bool) {
	if !used {
		keepNetns(n)
		return
	}
	startNetLoop()
	select {
	case dirtyNets <- n:
	default:
		netCounts.destroyed.Add(1)
		n.close()
	}
}

func keepNetns(n *netns) {
	select {
	case unusedNets <- n:
	default:
		n.close()
	}
}

// netLoop makes fresh namespaces ahead of demand. It opens hostNet
// before it closes ready.
func netLoop(ready chan<- struct{}) {
	runtime.LockOSThread() // never unlocked: the thread switches namespaces
	var err error
	hostNet, err = os.Open("/proc/thread-self/ns/net")
	close(ready)
	if err != nil {
		for {
			netCh <- netResult{err: fmt.Errorf("open the host network namespace: %w", err)}
		}
	}
	for {
		n, err := makeNetns()
		netCh <- netResult{n, err}
	}
}

// checkLoop reads the namespaces cells have given back, apart from
// netLoop: making a namespace can wait long for the kernel's destruction
// of others, which must not hold them up.
func checkLoop() {
	for n := range dirtyNets {
		same, err := n.unchanged()
		if err == nil && same {
			netCounts.kept.Add(1)
			keepNetns(n)
		} else {
			netCounts.destroyed.Add(1)
			n.close()
		}
	}
}

// makeNetns makes a network namespace on this locked thread, brings lo
// up, reads its state and returns the thread to the host's.
func makeNetns() (_ *netns, err error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("new network namespace: %w", err)
	}
	defer returnHome()
	f, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("open the new network namespace: %w", err)
	}
	n := &netns{f: f}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	for _, name := range netState {
		fd, err := unix.Open("/proc/thread-self/net/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			fd = -1
		} else if err != nil {
			return nil, fmt.Errorf("open network namespace state: %s: %w", name, err)
		}
		n.fds = append(n.fds, fd)
	}
	if n.state, err = n.read(nil); err != nil {
		return nil, err
	}
	netCounts.made.Add(1)
	return n, nil
}

// returnHome moves this locked thread back to the host's network
// namespace. A thread that cannot return must not run anything else.
func returnHome() {
	if err := unix.Setns(int(hostNet.Fd()), unix.CLONE_NEWNET); err != nil {
		panic(fmt.Sprintf("svc: return to the host network namespace: %v", err))
	}
}

// unchanged reports whether the namespace's state reads as when it was
// made.
func (n *netns) unchanged() (bool, error) {
	var err error
	if n.buf, err = n.read(n.buf[:0]); err != nil {
		return false, err
	}
	return bytes.Equal(n.buf, n.state), nil
}

// read appends the content of the namespace's netState files to buf,
// each after its name and before its length.
func (n *netns) read(buf []byte) ([]byte, error) {
	for i, name := range netState {
		buf = append(buf, name...)
		buf = append(buf, ' ')
		if n.fds[i] < 0 {
			buf = append(buf, "missing\n"...)
			continue
		}
		mark := len(buf)
		var err error
		if buf, err = appendAll(buf, n.fds[i]); err != nil {
			return nil, fmt.Errorf("read network namespace state: %s: %w", name, err)
		}
		if name == "sockstat" || name == "sockstat6" {
			buf = append(buf[:mark], perNamespace(buf[mark:])...)
		}
		buf = fmt.Appendf(buf, "\n%d\n", len(buf)-mark)
	}
	return buf, nil
}

// perNamespace returns the lines of sockstat or sockstat6 without their
// host-wide fields: "TCP: inuse 0 orphan 0 tw 0 alloc 1 mem 2" is
// "TCP: inuse 0 tw 0".
func perNamespace(b []byte) []byte {
	var out []byte
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		out = append(out, f[0]...)
		for i := 1; i+1 < len(f); i += 2 {
			if !hostWide[string(f[i])] {
				out = fmt.Appendf(out, " %s %s", f[i], f[i+1])
			}
		}
		out = append(out, '\n')
	}
	return out
}

// appendAll appends the content of the file fd, read from offset 0, to
// buf.
func appendAll(buf []byte, fd int) ([]byte, error) {
	for off := int64(0); ; {
		if cap(buf)-len(buf) < 4096 {
			buf = slices.Grow(buf, 4096)
		}
		n, err := unix.Pread(fd, buf[len(buf):cap(buf)], off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		buf, off = buf[:len(buf)+n], off+int64(n)
	}
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

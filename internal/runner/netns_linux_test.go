package runner

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// runAndKeepNet runs argv in a fresh shell and returns the shell's network
// namespace once every process of the shell is gone.
func runAndKeepNet(t *testing.T, argv ...string) *netns {
	t.Helper()
	s := testShell(t)
	cell, err := s.Cell(context.Background(), shellTask(t))
	if err != nil {
		t.Fatal(err)
	}
	r, err := cell.Run(context.Background(), testTask(argv...))
	if err != nil {
		cell.Close()
		t.Fatal(err)
	}
	cell.Close()
	n := s.netns
	s.netns = nil
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.close)
	if !r.Report.Exited || r.Report.Status.ExitStatus() != 0 {
		t.Fatalf("%v: report %+v\nstdout %s\nstderr %s", argv, r.Report, r.Stdout, r.Stderr)
	}
	return n
}

func unchanged(t *testing.T, n *netns) bool {
	t.Helper()
	same, err := n.unchanged()
	if err != nil {
		t.Fatal(err)
	}
	return same
}

// TestNetnsUnchanged: a namespace is read as unchanged after tasks that
// made sockets but moved nothing, and as changed after each thing a task
// without privileges can do to it that outlives it or that a later task
// could observe.
func TestNetnsUnchanged(t *testing.T) {
	requireRoot(t)
	const py = "import socket, sys\n"
	for _, c := range []struct {
		name, script string
		changed      bool
	}{
		{"nothing", `pass`, false},
		{"sockets made and closed", `
for fam, typ in [(socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM), (socket.AF_UNIX, socket.SOCK_STREAM)]:
    socket.socket(fam, typ).close()
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); s.close()`, false},
		{"TCP over lo, left in TIME_WAIT", `
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); a, _ = s.accept()
c.sendall(b"x"); c.close(); a.close()`, true},
		{"a datagram to itself", `
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0))
s.sendto(b"x", s.getsockname())`, true},
		{"a datagram with no route", `
try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("10.9.9.9", 9))
except OSError: pass`, true},
		{"a connection refused", `
try: socket.create_connection(("127.0.0.1", 9))
except OSError: pass`, true},
		{"a unix socket made and closed", `
a, b = socket.socketpair(); a.close(); b.close()
s = socket.socket(socket.AF_UNIX); s.bind("\0svc-test"); s.listen(); s.close()`, false},
		{"an IPv6 connection refused", `
try: socket.create_connection(("::1", 9))
except OSError: pass`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := runAndKeepNet(t, "python3", "-c", py+c.script)
			if got := unchanged(t, n); got == c.changed {
				t.Errorf("namespace read as unchanged: %v, want %v", got, !c.changed)
			}
		})
	}
}

// TestNetnsKept: a shell whose task made a socket but moved nothing keeps
// its namespace for another task.
func TestNetnsKept(t *testing.T) {
	requireRoot(t)
	_, _, kept0, _ := NetnsCounts()
	cell, err := testShell(t).Cell(context.Background(), shellTask(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cell.Run(context.Background(), testTask("python3", "-c", "import socket; socket.socket().close()")); err != nil {
		t.Fatal(err)
	}
	if err := cell.Close(); err != nil {
		t.Fatal(err)
	}
	// The namespace is read by the pool's thread: wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, kept, _ := NetnsCounts()
		if kept > kept0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the namespace of a task that moved nothing was not kept within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPerNamespace(t *testing.T) {
	in := "sockets: used 3\nTCP: inuse 1 orphan 2 tw 3 alloc 4 mem 5\nUDP: inuse 0 mem 7\nFRAG: inuse 0 memory 0\n"
	want := "sockets: used 3\nTCP: inuse 1 tw 3\nUDP: inuse 0\nFRAG: inuse 0 memory 0\n"
	if got := string(perNamespace([]byte(in))); got != want {
		t.Errorf("perNamespace:\n got %q\nwant %q", got, want)
	}
}

// BenchmarkNetnsUnchanged is the read of a namespace's state that follows
// every task whose policy allows sockets.
func BenchmarkNetnsUnchanged(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: makes network namespaces")
	}
	n, err := freshNetns()
	if err != nil {
		b.Fatal(err)
	}
	defer n.close()
	for b.Loop() {
		if same, err := n.unchanged(); err != nil || !same {
			b.Fatalf("unchanged: %v, %v", same, err)
		}
	}
}

// TestNetnsCountsUnixSockets: a unix socket open in a namespace makes it
// read as changed, and reads as unchanged once closed: sockstat's count
// of sockets stands for /proc/net/unix, which is not read.
func TestNetnsCountsUnixSockets(t *testing.T) {
	requireRoot(t)
	n, err := freshNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	if !unchanged(t, n) {
		t.Fatal("a fresh namespace reads as changed")
	}
	// A unix socket made in n, on a thread that enters it and leaves.
	fd := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			fd <- -1
			return
		}
		s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Error(err)
		}
		fd <- s
	}()
	s := <-fd
	if s < 0 {
		t.FailNow()
	}
	if unchanged(t, n) {
		t.Error("a namespace with an open unix socket reads as unchanged")
	}
	unix.Close(s)
	if !unchanged(t, n) {
		t.Error("the namespace reads as changed once its unix socket is closed")
	}
}

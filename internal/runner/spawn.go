package runner

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Sandboxes are started from a few OS threads reserved for it.
//
// Each thread clears its own supplementary groups before every clone (a
// per-thread credential, so the rest of the process keeps its groups): a
// child cloned into a new user namespace keeps the groups of the thread
// that cloned it, and with setgroups denied in that namespace it could
// never drop them, so a task would hold the host's group 0.
//
// Each thread enters the task's fresh network namespace (from netPool)
// just for the clone, so the init is born in it; then it returns to the
// host's.
//
// The threads never exit, so Pdeathsig, which fires when the creating
// thread exits (go.dev/issue/27505), fires only when the process dies.

type spawnReq struct {
	path  string
	argv  []string
	attr  *os.ProcAttr
	netns *os.File
	done  chan spawnResult
}

type spawnResult struct {
	p   *os.Process
	err error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
	hostNet   *os.File // this process's network namespace
	hostErr   error
)

// startProcess starts a process from a spawning thread, in the network
// namespace netns.
func startProcess(path string, argv []string, attr *os.ProcAttr, netns *os.File) (*os.Process, error) {
	spawnOnce.Do(func() {
		hostNet, hostErr = os.Open("/proc/self/ns/net")
		spawnCh = make(chan spawnReq)
		for range max(2, runtime.NumCPU()) {
			go spawnLoop()
		}
	})
	if hostErr != nil {
		return nil, fmt.Errorf("open the host network namespace: %w", hostErr)
	}
	req := spawnReq{path: path, argv: argv, attr: attr, netns: netns, done: make(chan spawnResult, 1)}
	spawnCh <- req
	r := <-req.done
	return r.p, r.err
}

func spawnLoop() {
	runtime.LockOSThread() // never unlocked: this thread's credentials differ
	for req := range spawnCh {
		p, err := spawn(req)
		req.done <- spawnResult{p, err}
	}
}

func spawn(req spawnReq) (*os.Process, error) {
	// Cleared before every clone: a process-wide setgroups by the
	// embedding program (glibc applies it to every thread) must not hand
	// the groups back to sandboxes.
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return nil, fmt.Errorf("clear supplementary groups of the spawning thread: %w", e)
	}
	if err := unix.Setns(int(req.netns.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("enter the task's network namespace: %w", err)
	}
	p, err := os.StartProcess(req.path, req.argv, req.attr)
	if err := unix.Setns(int(hostNet.Fd()), unix.CLONE_NEWNET); err != nil {
		// This thread must never clone into a used namespace again.
		panic(fmt.Sprintf("svc: return to the host network namespace: %v", err))
	}
	return p, err
}

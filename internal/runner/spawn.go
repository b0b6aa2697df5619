package runner

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Sandboxes are started from a few OS threads reserved for it. Each clears
// its own supplementary groups before every clone (a per-thread
// credential, so the rest of the process keeps its groups): a child cloned into a new user namespace
// keeps the groups of the thread that cloned it, and with setgroups denied
// in that namespace it could never drop them, so a task would hold the
// host's group 0. The threads also never exit, so Pdeathsig, which fires
// when the creating thread exits (go.dev/issue/27505), fires only when the
// process dies.

type spawnReq struct {
	path string
	argv []string
	attr *os.ProcAttr
	done chan spawnResult
}

type spawnResult struct {
	p   *os.Process
	err error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

func startProcess(path string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		for range max(2, runtime.NumCPU()) {
			go spawnLoop()
		}
	})
	req := spawnReq{path: path, argv: argv, attr: attr, done: make(chan spawnResult, 1)}
	spawnCh <- req
	r := <-req.done
	return r.p, r.err
}

func spawnLoop() {
	runtime.LockOSThread() // never unlocked: this thread's credentials differ
	for req := range spawnCh {
		// Cleared before every clone: a process-wide setgroups by the
		// embedding program (glibc applies it to every thread) must not
		// hand the groups back to sandboxes.
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			req.done <- spawnResult{err: fmt.Errorf("clear supplementary groups of the spawning thread: %w", e)}
			continue
		}
		p, err := os.StartProcess(req.path, req.argv, req.attr)
		req.done <- spawnResult{p, err}
	}
}

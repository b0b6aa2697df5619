package runner

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/initproc"
)

// The zygote (init.c) is a small single-threaded C process, started once
// from the sealed binary, that clones the init of every sandbox. A clone
// of it copies a few pages, where a clone of this process would copy the
// page tables of the whole Go heap (Go cannot vfork a child that enters a
// new user namespace), and the init it makes runs on without an execve of
// the service's binary.
//
// It runs as root in the host's namespaces with no supplementary groups.
// It serves one request at a time on a SOCK_SEQPACKET socket and exits
// when the socket's other end closes. The inits it clones are children of
// this process (CLONE_PARENT), which reaps them: none is left a zombie
// once its task is done. Their PR_SET_PDEATHSIG, and the zygote's, fire
// when the OS thread that started the zygote exits: that thread is
// locked and never exits, so they fire when this process dies, and the
// tasks die with their inits (their PID namespaces end). An init also
// ends when its control socket hangs up, which it watches whatever it
// is doing (initproc): so a shell does not outlive this process even
// without its parent-death signal. A zygote that died is replaced on the
// next request.

// zygote is one running zygote.
type zygote struct {
	mu     sync.Mutex // serializes requests: one in flight on conn
	conn   *net.UnixConn
	failed atomic.Bool   // conn broke: the zygote is on its way out
	dead   chan struct{} // closed when the process has exited
}

var (
	zmu     sync.Mutex // guards current
	current *zygote
)

// theZygote returns the running zygote, starting one if there is none.
func theZygote() (*zygote, error) {
	zmu.Lock()
	defer zmu.Unlock()
	if current != nil {
		select {
		case <-current.dead:
		default:
			if !current.failed.Load() {
				return current, nil
			}
		}
		current.conn.Close()
		current = nil
	}
	z, err := startZygote()
	if err != nil {
		return nil, err
	}
	current = z
	return z, nil
}

// starter runs functions on one OS thread that never exits, the parent
// thread of every zygote (see above).
var starter = sync.OnceValue(func() chan func() {
	ch := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must not exit
		for f := range ch {
			f()
		}
	}()
	return ch
})

func startZygote() (z *zygote, err error) {
	done := make(chan struct{})
	starter() <- func() {
		z, err = startZygoteHere()
		close(done)
	}
	<-done
	return z, err
}

func startZygoteHere() (*zygote, error) {
	exe, err := sealedExe()
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "zygote"), os.NewFile(uintptr(fds[1]), "zygote")
	defer theirs.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		mine.Close()
		return nil, err
	}
	defer devnull.Close()
	files := make([]*os.File, initproc.FDZygote+1)
	files[0], files[1], files[2] = devnull, devnull, devnull
	files[initproc.FDZygote] = theirs
	// LD_BIND_NOW: the dynamic linker resolves every symbol once, in the
	// zygote, rather than lazily in each init and task process it forks
	// (a symbol lookup on the first call of each libc function: a tenth
	// of an init's CPU). No task inherits the environment: its execve
	// passes the task's own.
	proc, err := os.StartProcess(fmt.Sprintf("/proc/self/fd/%d", exe.Fd()), []string{initproc.ZygoteArg0},
		&os.ProcAttr{Dir: "/", Env: []string{"LD_BIND_NOW=1"}, Files: files})
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("start zygote: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		proc.Kill()
		proc.Wait()
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	z := &zygote{conn: c.(*net.UnixConn), dead: make(chan struct{})}
	go func() {
		proc.Wait()
		close(z.dead)
	}()
	return z, nil
}

// spawn asks the zygote for an init with the fds of initproc.SpawnRequest
// and returns its host pid and a pidfd. An error of the socket kills the
// zygote (the next request starts another); one of the spawn itself
// leaves it serving, and comes with the pid and pidfd of the init if one
// was made (killed, for the caller to reap).
func (z *zygote) spawn(req *initproc.SpawnRequest, files []*os.File) (int, *os.File, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	z.conn.SetDeadline(time.Now().Add(SetupTimeout))
	_, _, err := z.conn.WriteMsgUnix(req.Encode(), unix.UnixRights(fds...), nil)
	runtime.KeepAlive(files) // the fds stay open until the message is sent
	if err != nil {
		return 0, nil, z.broken(fmt.Errorf("zygote: send: %w", err))
	}
	buf := make([]byte, initproc.SpawnReplySize+1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, flags, _, err := z.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return 0, nil, z.broken(fmt.Errorf("zygote: receive: %w", err))
	}
	pidfd, err := receivedFD(oob[:oobn])
	if err != nil || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return 0, nil, z.broken(fmt.Errorf("zygote: malformed reply (flags %#x): %v", flags, err))
	}
	rep, err := initproc.DecodeSpawnReply(buf[:n])
	if err != nil {
		if pidfd != nil {
			pidfd.Close()
		}
		return 0, nil, z.broken(err)
	}
	switch {
	case rep.Err != 0 && rep.Pid > 0 && pidfd != nil:
		// An init made and killed: ours to reap.
		return rep.Pid, pidfd, fmt.Errorf("zygote: %s: %w", rep.Msg, rep.Err)
	case rep.Err != 0 || rep.Pid <= 0 || pidfd == nil:
		if pidfd != nil {
			pidfd.Close()
		}
		return 0, nil, fmt.Errorf("zygote: %s: %w", rep.Msg, rep.Err)
	}
	return rep.Pid, pidfd, nil
}

// broken closes the connection, which ends the zygote, and returns err.
func (z *zygote) broken(err error) error {
	z.failed.Store(true)
	z.conn.Close()
	return err
}

// receivedFD returns the one fd of an SCM_RIGHTS message, nil if none.
func receivedFD(oob []byte) (*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, err
		}
		fds = append(fds, r...)
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errors.New("want one fd")
	}
	// Non-blocking, so that the runtime's poller waits for its exit.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), "pidfd"), nil
}

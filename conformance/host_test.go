package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-sandbox/svc"
)

// hostID is the uid and gid the host side builds and runs as (nobody).
const hostID = 65534

// taskPath is the PATH of a task (API.md), which the host side searches
// too.
const taskPath = "/usr/local/bin:/usr/bin:/bin"

// The resource limits of a sandbox task that change what a program sees,
// set on the host side too: the stack is as large as the memory limit (a
// deep recursion behaves alike) and no core is dumped. They are this
// process's soft limits, which its children inherit; the hard limits stay,
// so the sandboxes this process makes later can still raise theirs (a
// lowered hard limit is for good, and a sandbox's init could not set a
// larger stack: EPERM).
var hostRlimits = sync.OnceValue(func() error {
	stack := uint64(sandboxLimits().MemoryMax)
	for _, r := range []struct {
		res int
		v   uint64
	}{{syscall.RLIMIT_STACK, stack}, {syscall.RLIMIT_CORE, 0}} {
		var l syscall.Rlimit
		if err := syscall.Getrlimit(r.res, &l); err != nil {
			return fmt.Errorf("getrlimit %d: %w", r.res, err)
		}
		l.Cur = min(r.v, l.Max)
		if err := syscall.Setrlimit(r.res, &l); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.res, err)
		}
	}
	return nil
})

// result is what a user sees of a run, on either side.
type result struct {
	Outcome          svc.Outcome
	ExitCode, Signal int
	Stdout, Stderr   string
	Truncated        bool // a stream was cut at the output limit
	// Calls are the system calls the run made, sorted, when it ran
	// under strace (SVC_CONFORMANCE_STRACE=1); else nil.
	Calls []string
}

func (r result) String() string {
	return fmt.Sprintf("%s exit %d signal %d", r.Outcome, r.ExitCode, r.Signal)
}

// hostDir is the host side of one case: a fresh directory base, root's,
// holding the working directory work and the private TMPDIR tmp, both
// owned by hostID.
type hostDir struct {
	base, work, tmp string
}

// newHostDir makes a hostDir under os.TempDir; remove it with remove.
func newHostDir() (*hostDir, error) {
	base, err := os.MkdirTemp("", "svcconf-")
	if err != nil {
		return nil, err
	}
	h := &hostDir{base: base, work: filepath.Join(base, "svc"), tmp: filepath.Join(base, "tmp")}
	// The host user must reach its directories.
	if err := os.Chmod(base, 0o755); err != nil {
		return h, err
	}
	for _, d := range []string{h.work, h.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return h, err
		}
		if err := os.Chown(d, hostID, hostID); err != nil {
			return h, err
		}
	}
	return h, nil
}

// remove removes the directory and all in it.
func (h *hostDir) remove() error { return os.RemoveAll(h.base) }

// place writes files into the working directory as svc places them:
// mode 0644, parents 0755, all owned by the host user.
func (h *hostDir) place(files map[string]string) error {
	for p, content := range files {
		dst := filepath.Join(h.work, filepath.FromSlash(p))
		if err := h.mkdirs(filepath.Dir(dst)); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
			return err
		}
		if err := os.Chown(dst, hostID, hostID); err != nil {
			return err
		}
	}
	return nil
}

// mkdirs makes dir and its missing parents below work, owned by the host
// user.
func (h *hostDir) mkdirs(dir string) error {
	if dir == h.work {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := h.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return os.Chown(dir, hostID, hostID)
}

// env is the task environment of API.md with the host's directories.
func (h *hostDir) env() []string {
	return []string{"PATH=" + taskPath, "HOME=" + h.work, "TMPDIR=" + h.tmp, "LANG=C.UTF-8"}
}

// clean turns the host's paths in an output into the sandbox's.
func (h *hostDir) clean(s string) string {
	s = strings.ReplaceAll(s, h.work, "/svc")
	return strings.ReplaceAll(s, h.tmp, "/tmp")
}

// run runs argv in the working directory as the host user, with the task
// environment and stdin on a pipe, as svc runs a task. After timeout, or
// when the program ends, its whole process group is killed. With trace,
// the run is under strace and result.Calls lists its calls.
func (h *hostDir) run(argv []string, stdin string, timeout time.Duration, trace bool) (result, error) {
	if err := hostRlimits(); err != nil {
		return result{}, err
	}
	var traceFile string
	if trace {
		f, err := os.CreateTemp(h.base, "strace-")
		if err != nil {
			return result{}, err
		}
		f.Close()
		if err := os.Chown(f.Name(), hostID, hostID); err != nil {
			return result{}, err
		}
		traceFile = f.Name()
		argv = traceArgv(argv, traceFile)
	}
	path, ok := lookTask(argv[0], h.work)
	if !ok {
		// As svc answers a command it cannot start.
		return result{Outcome: svc.OutcomeExited, ExitCode: 127}, nil
	}
	outs := make([]*os.File, 2)
	for i := range outs {
		f, err := os.CreateTemp(h.base, "out-")
		if err != nil {
			return result{}, err
		}
		defer f.Close()
		outs[i] = f
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return result{}, err
	}
	defer pw.Close()
	cmd := &exec.Cmd{
		Path: path, Args: argv, Dir: h.work, Env: h.env(),
		Stdin: pr, Stdout: outs[0], Stderr: outs[1],
		// A session of its own, as the sandbox's task has one with a
		// visible leader: where the test itself runs in a session
		// led from outside its pid namespace (a CI container),
		// getsid would answer 0.
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: hostID, Gid: hostID, Groups: []uint32{}},
		},
	}
	// ETXTBSY: a program the case built or placed was still open for
	// writing in a child another goroutine forked meanwhile, until that
	// child's execve (Go issue 22315): it passes once the child has
	// exec'd.
	for deadline := time.Now().Add(10 * time.Second); ; {
		err = cmd.Start()
		if !errors.Is(err, syscall.ETXTBSY) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
		cmd = &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env,
			Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: cmd.SysProcAttr}
	}
	pr.Close()
	if err != nil {
		return result{}, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() {
		io.WriteString(pw, stdin) // a program may not read it all
		pw.Close()
	}()
	var timedOut bool
	var mu sync.Mutex
	timer := time.AfterFunc(timeout, func() {
		mu.Lock()
		timedOut = true
		mu.Unlock()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	werr := cmd.Wait()
	timer.Stop()
	// What the program left behind ends with it, as in a sandbox.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return result{}, fmt.Errorf("wait %s: %w", argv[0], werr)
	}
	r := result{Outcome: svc.OutcomeExited}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		r.Outcome, r.Signal, r.ExitCode = svc.OutcomeSignaled, int(ws.Signal()), 128+int(ws.Signal())
	default:
		r.ExitCode = ws.ExitStatus()
	}
	mu.Lock()
	if timedOut {
		r.Outcome = svc.OutcomeTimedOut
	}
	mu.Unlock()
	var cut [2]bool
	if r.Stdout, cut[0], err = readOutput(outs[0]); err != nil {
		return r, err
	}
	if r.Stderr, cut[1], err = readOutput(outs[1]); err != nil {
		return r, err
	}
	r.Truncated = cut[0] || cut[1]
	r.Stdout, r.Stderr = h.clean(r.Stdout), h.clean(r.Stderr)
	if trace {
		if r.Calls, err = readTrace(traceFile); err != nil {
			return r, fmt.Errorf("strace: %w", err)
		}
	}
	return r, nil
}

// readOutput reads an output file from its start, cut at the sandbox's
// output limit, with bytes that are not UTF-8 replaced as svc does.
func readOutput(f *os.File) (string, bool, error) {
	limit := sandboxLimits().OutputLimit
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", false, err
	}
	var b bytes.Buffer
	if _, err := io.CopyN(&b, f, limit+1); err != nil && err != io.EOF {
		return "", false, err
	}
	cut := int64(b.Len()) > limit
	if cut {
		b.Truncate(int(limit))
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD"), cut, nil
}

// lookTask resolves a command as a task's would be: through the task's
// PATH, or, with a slash, relative to dir.
func lookTask(name, dir string) (string, bool) {
	executable := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return name, executable(p)
	}
	for _, d := range filepath.SplitList(taskPath) {
		if p := filepath.Join(d, name); executable(p) {
			return p, true
		}
	}
	return "", false
}

// runAsRoot runs argv in dir as the test's own user with env, for the
// host-only steps (hostbuild, stdin-gen); it returns the stdout, and an
// error with the stderr when the command fails.
func runAsRoot(ctx context.Context, dir string, env []string, argv []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if p, ok := lookTask(argv[0], dir); ok && !strings.Contains(argv[0], "/") {
		cmd.Path = p
	}
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, stderr.Bytes())
	}
	return out, nil
}

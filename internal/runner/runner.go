// Package runner is the parent side of a sandbox: it starts the init of a
// task in fresh namespaces (internal/initproc is the child side), feeds its
// stdin, collects its output within limits, enforces the wall and CPU time
// limits and waits until every process of the task is gone.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svc-sandbox/svc/internal/initproc"
	"golang.org/x/sys/unix"
)

// Namespaces every task gets at clone time. Its network namespace is a
// fresh one from the pool (netns.go), entered by the spawning thread for
// the clone; the cgroup namespace is entered by the init once it is in its
// cgroups.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// SetupTimeout bounds the sandbox setup of a task: from the release of its
// init to the creation of the task process. The task's own limits start
// then.
const SetupTimeout = 30 * time.Second

// Task describes one task to run. Zero durations and limits mean none.
type Task struct {
	Spec initproc.Spec
	// Host ids the namespace's root (the init) and the task identity
	// (Spec.UID/GID inside) map to.
	InitUID, TaskUID int
	Stdin            string

	// CgroupFD, when set (cgroup v2), is the task cgroup's directory: the
	// init is born in it (clone3 CLONE_INTO_CGROUP).
	CgroupFD *os.File
	// Enter, when set, puts the init (by host pid) in its cgroups before
	// it is released (cgroup v1).
	Enter func(pid int) error

	WallTimeout time.Duration
	// CPULimit is enforced over the whole task by polling CPUUsage at the
	// earliest moment the limit could be reached at CPURate CPUs.
	CPULimit time.Duration
	CPURate  float64
	CPUUsage func() (time.Duration, error)

	OutputLimit int64   // per stream
	Budget      *Budget // shared by the tasks of a request; nil for none
}

// Result is what happened to a task, before any interpretation.
type Result struct {
	Report           initproc.Report
	Stdout, Stderr   []byte
	StdoutTruncated  bool
	StderrTruncated  bool
	TimedOut         bool // the wall timeout killed it
	CPUExceeded      bool // the CPU limit killed it
	OutputExceeded   bool // an output limit killed it
	Cancelled        bool // ctx killed it
	SetupTimedOut    bool // the sandbox setup overran SetupTimeout
	WallTime         time.Duration
	InitExitedNormal bool // the init exited by itself
}

// Killed reports whether the runner killed the task.
func (r *Result) Killed() bool {
	return r.TimedOut || r.CPUExceeded || r.OutputExceeded || r.Cancelled || r.SetupTimedOut
}

// Budget is a byte budget shared by several tasks' output streams. It is
// safe for concurrent use.
type Budget struct{ left atomic.Int64 }

// NewBudget returns a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{}
	b.left.Store(n)
	return b
}

// Spend takes n bytes (or what is left) without a stream: output that
// counts against the budget but was not read here, such as a step
// replayed from a cache.
func (b *Budget) Spend(n int64) { b.take(n) }

// take grants up to n bytes.
func (b *Budget) take(n int64) int64 {
	for {
		left := b.left.Load()
		g := min(n, left)
		if g <= 0 {
			return 0
		}
		if b.left.CompareAndSwap(left, left-g) {
			return g
		}
	}
}

// Run runs one task and returns when every process of it is gone. An
// error means the task could not be started.
func Run(ctx context.Context, t *Task) (*Result, error) {
	exe, err := sealedExe()
	if err != nil {
		return nil, err
	}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return
	}
	stdinR, stdinW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	stdoutR, stdoutW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	stderrR, stderrW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cfgR, cfgW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("config pipe: %w", err)
	}
	statR, statW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("status pipe: %w", err)
	}

	sys := &syscall.SysProcAttr{
		Cloneflags: cloneFlags,
		UidMappings: []syscall.SysProcIDMap{
			{ContainerID: 0, HostID: t.InitUID, Size: 1},
			{ContainerID: t.Spec.UID, HostID: t.TaskUID, Size: 1},
		},
		GidMappings: []syscall.SysProcIDMap{
			{ContainerID: 0, HostID: t.InitUID, Size: 1},
			{ContainerID: t.Spec.GID, HostID: t.TaskUID, Size: 1},
		},
		GidMappingsEnableSetgroups: false,
		Credential:                 &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
		Pdeathsig:                  syscall.SIGKILL,
	}
	if t.CgroupFD != nil {
		sys.UseCgroupFD = true
		sys.CgroupFD = int(t.CgroupFD.Fd())
	}
	files := make([]*os.File, 5)
	files[0], files[1], files[2] = stdinR, stdoutW, stderrW
	files[initproc.FDConfig], files[initproc.FDStatus] = cfgR, statW
	netns, err := freshNetns()
	if err != nil {
		return nil, err
	}
	proc, err := startProcess(fmt.Sprintf("/proc/self/fd/%d", exe.Fd()), []string{initproc.Arg0},
		&os.ProcAttr{Dir: "/", Env: []string{}, Files: files, Sys: sys}, netns)
	netns.Close()
	if err != nil {
		return nil, fmt.Errorf("start sandbox init: %w", err)
	}
	// Our copies of the child's ends must go, or we never see EOF.
	for _, f := range []*os.File{stdinR, stdoutW, stderrW, cfgR, statW} {
		f.Close()
	}

	r := &Result{}
	k := &killer{proc: proc}
	if t.Enter != nil {
		if err := t.Enter(proc.Pid); err != nil {
			proc.Signal(syscall.SIGKILL)
			proc.Wait()
			return nil, fmt.Errorf("enter cgroup: %w", err)
		}
	}

	// The config releases the init.
	if _, err := cfgW.Write(t.Spec.Encode()); err != nil {
		proc.Signal(syscall.SIGKILL)
		proc.Wait()
		return nil, fmt.Errorf("send sandbox config: %w", err)
	}
	cfgW.Close()

	var wg sync.WaitGroup
	var started atomic.Int64 // unix nanoseconds when the task process existed
	started.Store(time.Now().UnixNano())
	// The wall clock of a task runs from the moment its process exists.
	// Until then the timer bounds the sandbox's setup, by SetupTimeout and
	// not by the wall timeout: a setup slower than the task's limit (a
	// loaded host, a limit of a few ms) must not use the task's time up
	// and report it timed out before it ran.
	var tmu sync.Mutex // guards timer
	timer := time.AfterFunc(SetupTimeout, func() { k.kill(killSetup) })
	defer func() {
		tmu.Lock()
		timer.Stop()
		tmu.Unlock()
	}()
	wg.Go(func() {
		rep, err := initproc.ReadReport(statR, func() {
			started.Store(time.Now().UnixNano())
			tmu.Lock()
			defer tmu.Unlock()
			if timer.Stop() && t.WallTimeout > 0 {
				timer = time.AfterFunc(t.WallTimeout, func() { k.kill(killTimeout) })
			}
		})
		if err != nil && rep.SetupError == "" {
			rep.SetupError = err.Error()
		}
		r.Report = rep
	})
	wg.Go(func() {
		if t.Stdin != "" {
			io.WriteString(stdinW, t.Stdin)
		}
		stdinW.Close()
	})
	outputKill := func() { k.kill(killOutput) }
	wg.Go(func() { r.Stdout, r.StdoutTruncated = collect(stdoutR, t.OutputLimit, t.Budget, outputKill) })
	wg.Go(func() { r.Stderr, r.StderrTruncated = collect(stderrR, t.OutputLimit, t.Budget, outputKill) })

	done := make(chan struct{})
	var watch sync.WaitGroup
	if t.CPULimit > 0 && t.CPUUsage != nil {
		watch.Go(func() { watchCPU(t, done, func() { k.kill(killCPU) }) })
	}
	watch.Go(func() {
		select {
		case <-ctx.Done():
			k.kill(killCancel)
		case <-done:
		}
	})

	st, werr := proc.Wait()
	end := time.Now()
	k.exited()
	close(done)
	watch.Wait()
	wg.Wait()
	if werr != nil {
		return nil, fmt.Errorf("wait for sandbox init: %w", werr)
	}
	switch k.reason() {
	case killTimeout:
		r.TimedOut = true
	case killCPU:
		r.CPUExceeded = true
	case killOutput:
		r.OutputExceeded = true
	case killCancel:
		r.Cancelled = true
	case killSetup:
		r.SetupTimedOut = true
	}
	r.InitExitedNormal = st.Exited()
	if r.Report.Started {
		r.WallTime = end.Sub(time.Unix(0, started.Load()))
	}
	return r, nil
}

// Why the runner killed a task.
const (
	killNone = iota
	killTimeout
	killCPU
	killOutput
	killCancel
	killSetup
)

// killer kills a task's init (and with it the task's PID namespace) once,
// remembering the first reason.
type killer struct {
	proc *os.Process

	mu   sync.Mutex // guards why and done
	why  int
	done bool // the init has exited
}

func (k *killer) kill(why int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	// Once the task has ended, a timer or a cancellation firing late
	// changes nothing; output read after the end still overflows.
	if k.why != killNone || (k.done && why != killOutput) {
		return
	}
	k.why = why
	if !k.done {
		k.proc.Signal(syscall.SIGKILL)
	}
}

// exited records that the init has been reaped.
func (k *killer) exited() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
}

func (k *killer) reason() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.why
}

// collect reads a stream to EOF, keeping at most limit bytes (0: no
// limit) and what the budget grants. Past either it calls exceeded once
// and drains the rest.
func collect(r io.Reader, limit int64, budget *Budget, exceeded func()) (out []byte, truncated bool) {
	buf := make([]byte, 32*1024)
	for {
		n, err := r.Read(buf)
		if n > 0 && !truncated {
			keep := int64(n)
			if limit > 0 {
				keep = min(keep, limit-int64(len(out)))
			}
			if budget != nil {
				keep = budget.take(keep)
			}
			out = append(out, buf[:keep]...)
			if keep < int64(n) {
				truncated = true
				exceeded()
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				truncated = true
			}
			return out, truncated
		}
	}
}

// watchCPU kills the task once its cgroup has used CPULimit. It checks at
// the earliest time the limit can be reached at CPURate CPUs, so a task
// far from its limit costs one timer, not a poll loop.
func watchCPU(t *Task, done <-chan struct{}, kill func()) {
	rate := t.CPURate
	if rate <= 0 {
		rate = 1
	}
	wait := time.Duration(float64(t.CPULimit) / rate)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
		}
		used, err := t.CPUUsage()
		if err != nil {
			return // the cgroup is gone: the task has ended
		}
		if used >= t.CPULimit {
			kill()
			return
		}
		timer.Reset(max(time.Duration(float64(t.CPULimit-used)/rate), 2*time.Millisecond))
	}
}

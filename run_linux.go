package svc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/cgroup"
	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/mount"
	"github.com/svc-sandbox/svc/internal/runner"
	"github.com/svc-sandbox/svc/internal/seccomp"
)

// The identity of a task inside its user namespace. The namespace's root
// (the init) and this id map to the two host ids of the request's slot.
const (
	taskUID = 1000
	taskGID = 1000
)

// taskEnv is the fixed environment of every task (API.md); the task's own
// env is added to it.
var taskEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/svc", "TMPDIR=/tmp", "LANG=C.UTF-8"}

// host is the Linux machinery of a Sandbox, set up once by New.
type host struct {
	cfg     *Config
	cg      *cgroup.Hierarchy
	service *cgroup.Group
	sys     []mount.SystemEntry
	runDir  string
	// skeleton is the root every sandbox binds (mount.MakeSkeleton), in
	// runDir.
	skeleton string
	// runMounted: runDir is the instance's tmpfs.
	runMounted bool
	lock       *os.File
	cpuRate    float64 // CPUs a task may use at most, for the CPU-limit timer

	// base is the seccomp program every shell's init installs, nil for
	// none, with a listener when baseWatched, and filters what each
	// profile's task process installs over it: see taskFilters. allows
	// decides, for each profile, a call a listener was notified of.
	base        []byte
	baseWatched bool
	filters     map[Profile]taskFilter
	allows      map[Profile]func(nr int32, arg0 uint64) bool
	// watch: early filters are installed in their watched form where
	// they have one. Off from the start where the kernel cannot pass a
	// listener (watchable), and off for good once taking one failed.
	watch atomic.Bool
	// lastFirst is the profile of the last request's first task, and
	// firstRun how many requests in a row had it, up to guessRun (see
	// expected).
	firstMu   sync.Mutex // guards lastFirst and firstRun
	lastFirst Profile
	firstRun  int

	// bg tracks teardowns done off the critical path; close waits for them.
	bg sync.WaitGroup

	// gocache is the prepared Go build cache, nil for none
	// (Config.GoBuildCache).
	gocache *goCache

	// shellPlan is the sandbox of every shell; taskMounts what each task
	// of one has of its own.
	shellPlan, taskMounts mount.Plan
	shellMu               sync.Mutex
	shells                map[int][]*shell // idle, by identity slot, oldest first
	idleShells            int              // in shells
	idleSeq               uint64           // stamps shells as they are put back
	nshell                atomic.Int64     // shells made, for their cgroups' names
	closing               bool             // no shell is kept any more
}

// idleCaps returns how many idle shells an identity slot keeps (twice what
// the widest step can use at once: a step's tasks and those its next step
// prepares meanwhile) and how many all slots keep (four times the tasks
// that can run at once: requests prepared ahead take slots of their own):
// enough for most tasks to find one, while the idle processes and network
// namespaces stay bounded (32 by default on 2 CPUs).
func (h *host) idleCaps() (perSlot, total int) {
	l := h.cfg.Limits
	return 2 * l.MaxParallelTasks, 4 * l.MaxConcurrency
}

// background runs f off the request's critical path; close waits for it.
func (h *host) background(f func()) { h.bg.Go(f) }

func openHost(cfg *Config) (*host, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("svc needs root to create namespaces, cgroups and mounts")
	}
	h := &host{cfg: cfg, runDir: filepath.Join(cfg.StateDir, "run")}
	// The sandbox identities traverse the run directory to reach their
	// workspace, so it and its ancestors must be searchable by others.
	for _, d := range []string{cfg.StateDir, h.runDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	for d := filepath.Dir(cfg.StateDir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("state dir: %s is not searchable by other users (mode %v); sandboxes could not reach their workspaces", d, fi.Mode().Perm())
		}
		if d == "/" {
			break
		}
	}
	lock, err := os.OpenFile(filepath.Join(cfg.StateDir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("state dir %s is in use by another svc instance: %w", cfg.StateDir, err)
	}
	h.lock = lock

	if h.cg, err = cgroup.Detect(); err != nil {
		h.close()
		return nil, err
	}
	sum := sha256.Sum256([]byte(cfg.StateDir))
	name := "svc-" + hex.EncodeToString(sum[:6])
	if err := h.sweep(name); err != nil {
		h.close()
		return nil, fmt.Errorf("remove what a previous instance left: %w", err)
	}
	// Request directories come and go at the rate of requests and hold
	// only mount points: in a small tmpfs of the instance's own they cost
	// no disk inode allocation (ext4's made every mkdir search its bitmap
	// past recently deleted inodes).
	if err := unix.Mount("svc-run", h.runDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4m,mode=0711"); err != nil {
		h.close()
		return nil, fmt.Errorf("mount the run directory: %w", err)
	}
	h.runMounted = true
	if h.service, err = h.cg.Service(cfg.CgroupParent, name); err != nil {
		h.close()
		return nil, err
	}
	// Task and shell groups are made, written and removed relative to
	// the service group's directories.
	if err := h.service.Hold(); err != nil {
		h.close()
		return nil, err
	}
	if h.sys, err = mount.ScanRootFS(cfg.RootFS); err != nil {
		h.close()
		return nil, err
	}
	h.skeleton = filepath.Join(h.runDir, ".root")
	if err := mount.MakeSkeleton(h.skeleton, h.sys); err != nil {
		h.close()
		return nil, err
	}
	params := mount.Params{RootFS: cfg.RootFS, Skeleton: h.skeleton, ShmSize: 16 * MiB}
	// Toolchains off the task PATH run by name. Without an overlay (a
	// kernel without overlayfs) they do not, which is no reason to refuse
	// every other task.
	if params.LocalBin, err = localBin(cfg.RootFS, h.runDir); err != nil {
		cfg.Logger.Warn("toolchains off the task PATH do not run by name", "err", err)
	}
	if cfg.GoBuildCache != "" {
		if params.GoEnv, err = goEnvFile(cfg.RootFS, h.runDir); err != nil {
			h.close()
			return nil, err
		}
		if h.gocache, err = openGoCache(cfg, params.GoEnv); err != nil {
			h.close()
			return nil, err
		}
	}
	h.shellPlan, h.taskMounts = mount.ShellPlan(params, h.sys), mount.TaskMounts(params)
	h.shells = make(map[int][]*shell)
	h.watch.Store(watchable())
	profiles := cfg.AllowedProfiles
	if !slices.Contains(profiles, cfg.DefaultProfile) {
		profiles = append(slices.Clone(profiles), cfg.DefaultProfile)
	}
	if h.base, h.baseWatched, h.filters, err = taskFilters(profiles, h.watch.Load(), userNotif()); err != nil {
		h.close()
		return nil, err
	}
	if h.allows, err = deciders(profiles); err != nil {
		h.close()
		return nil, err
	}
	h.lastFirst, h.firstRun = cfg.DefaultProfile, guessRun
	h.cpuRate = float64(runtime.NumCPU())
	if q := cfg.Limits.CPUMax; q.Quota > 0 {
		h.cpuRate = min(h.cpuRate, float64(q.Quota)/float64(q.Period))
	}
	return h, nil
}

// guessRun is how many requests in a row must have had one profile for
// their first task before requests are prepared expecting it.
const guessRun = 4

// expectFirst records the profile of a request's first task.
func (h *host) expectFirst(p Profile) {
	h.firstMu.Lock()
	defer h.firstMu.Unlock()
	if p == h.lastFirst {
		h.firstRun = min(h.firstRun+1, guessRun)
	} else {
		h.lastFirst, h.firstRun = p, 1
	}
}

// expected returns the profile a request prepared now expects of its
// first task: the last requests' if the last guessRun of them all had
// it, and otherwise none, so that it installs no filter ahead. A cell
// with another profile's filter serves no task, and its request builds a
// second cell on its critical path: a workload that mixes profiles is
// better served by cells any task can take.
func (h *host) expected() Profile {
	h.firstMu.Lock()
	defer h.firstMu.Unlock()
	if h.firstRun < guessRun {
		return ""
	}
	return h.lastFirst
}

// taskFilter is the seccomp program a task process of a profile
// installs.
type taskFilter struct {
	prog []byte
	// watched is its watched form (seccomp.Watched), which tells a
	// listener of every socket the task makes, so that the network
	// namespace of a task that made none is given back unread, and of
	// every call the allowlist refuses, which the task's stats count; nil
	// where the shell's base filter has the listener, or for a profile
	// whose watched form would never notify.
	watched []byte
	// early: the profile allows what a task process does before its
	// execve (initproc.PreExecCalls), so the program can be installed
	// before the release.
	early bool
}

// taskFilters returns the seccomp programs of profiles, the profiles a
// task may run under. Where the profiles can be split (seccomp.Layers),
// base is the program a shell's init installs once and each task process
// inherits, and a profile's program is its residual, a fraction of the
// whole: base and residual together decide every call as the profile
// does. The base is watched (baseWatched) where the kernel has listeners
// (notify): one listener per shell serves all its tasks, and decides the
// calls the profiles differ on by refusal (seccomp.Layers.Watched).
// Otherwise base is nil and each task process installs its profile's
// whole program, watched where watch says a task process's listener can
// be taken.
func taskFilters(profiles []Profile, watch, notify bool) (base []byte, baseWatched bool, filters map[Profile]taskFilter, err error) {
	var ps []*seccomp.Profile
	for _, name := range profiles {
		p, err := seccomp.Lookup(string(name))
		if err != nil {
			return nil, false, nil, err
		}
		ps = append(ps, p)
	}
	// An error says the profiles cannot be split (the v1 and v2 profiles
	// allowed together differ in their default action): their tasks
	// install whole programs.
	layers, lerr := seccomp.NewLayers(ps, initproc.ShellCalls)
	if lerr == nil && notify {
		// Watched, one listener per shell sees every refusal; where
		// that cannot be, tasks install whole programs.
		layers, lerr = layers.Watched()
	}
	if lerr == nil {
		if base, err = seccomp.Build(layers.Base); err != nil {
			return nil, false, nil, err
		}
		baseWatched = notify
	} else {
		layers = nil
	}
	filters = make(map[Profile]taskFilter, len(ps))
	for _, p := range ps {
		f := taskFilter{early: p.AllowsAlways(initproc.PreExecCalls...)}
		if layers != nil {
			f.prog, err = seccomp.Build(layers.Residual[p.Name])
		} else {
			f.prog, err = seccomp.Build(p)
		}
		if err != nil {
			return nil, false, nil, err
		}
		if layers == nil && watch && p.Notifies() {
			w, err := seccomp.Watched(p)
			if err != nil {
				return nil, false, nil, err
			}
			if f.watched, err = seccomp.Build(w); err != nil {
				return nil, false, nil, err
			}
		}
		filters[Profile(p.Name)] = f
	}
	return base, baseWatched, filters, nil
}

// deciders returns, for each profile, how its listener answers a
// notified call: through (true) or refused with ENOSYS (false).
func deciders(profiles []Profile) (map[Profile]func(nr int32, arg0 uint64) bool, error) {
	m := make(map[Profile]func(nr int32, arg0 uint64) bool, len(profiles))
	for _, name := range profiles {
		p, err := seccomp.Lookup(string(name))
		if err != nil {
			return nil, err
		}
		decide, err := p.Decider()
		if err != nil {
			return nil, err
		}
		m[name] = func(nr int32, arg0 uint64) bool { return decide(nr, arg0) == seccomp.Allow }
	}
	return m, nil
}

// userNotif reports whether the kernel has seccomp listeners
// (SECCOMP_RET_USER_NOTIF, Linux 5.0).
func userNotif() bool {
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return e == 0
}

// watchable reports whether a task process's filter listener can be
// passed here: the kernel gives a socket's reader the pidfd of the writer
// (SO_PASSPIDFD, Linux 6.5), through which the listener is copied
// (pidfd_getfd, which Yama's ptrace_scope 3 forbids even to root), and
// libseccomp builds a filter that notifies. Without, a task that could
// make sockets has its network namespace read after it.
func watchable() bool {
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		return false
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	if unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_PASSPIDFD, 1) != nil {
		return false
	}
	_, err = seccomp.WatchedProgram(seccomp.CompileV2)
	return err == nil
}

// sweep removes the leftovers of a crashed instance with this state dir:
// its processes and cgroups, its workspace mounts and directories.
func (h *host) sweep(cgroupName string) error {
	old, err := h.cg.Service(h.cfg.CgroupParent, cgroupName)
	if err != nil {
		return err
	}
	if err := old.Destroy(); err != nil {
		return err
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(h.runDir))
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	// Deepest first, the run directory's own tmpfs last.
	slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
		}
	}
	entries, err := os.ReadDir(h.runDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(h.runDir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (h *host) close() error {
	h.bg.Wait()
	h.shellMu.Lock()
	h.closing = true
	h.shellMu.Unlock()
	err := h.dropShells()
	if h.service != nil {
		err = errors.Join(err, h.service.Destroy())
		h.service.Release()
	}
	if h.runMounted {
		err = errors.Join(err, unix.Unmount(h.runDir, unix.MNT_DETACH))
	}
	if h.lock != nil {
		h.lock.Close()
	}
	return err
}

// request is the per-request state: workspace, identity, and the cells
// built ahead for its tasks. It has no cgroup of its own: each task has
// one, a child of the service's, whose limits bound the task and what it
// writes to the workspace and /tmp, which share a tmpfs of a bounded size.
type request struct {
	h                *host
	id               string
	slot             int // the identity slot
	dir, ws, tmp     string
	initUID, taskUID int
	budget           *runner.Budget
	ntask            atomic.Int64
	// limits bound its tasks and size its tmpfs: the Sandbox's limits and
	// workspace size, or those of the Go build cache's build. own: its
	// shells are built for it and closed after its tasks, never kept for
	// another request (their rlimits are its limits').
	limits Limits
	size   int64
	own    bool
	// goLower is the prepared Go build cache, the lower layer of the
	// overlay on its /tmp/.gocache; "" for none (see mountGoCache).
	goLower string

	// building counts the cells being built ahead; close waits for them.
	building sync.WaitGroup
	mu       sync.Mutex // guards ready
	ready    []*cell    // cells built ahead, not yet used
}

// cell is a task started ahead in a shell of the request's identity
// slot, with the task's cgroup.
type cell struct {
	c     *runner.Cell
	group *cgroup.Group
	// stats has the group's statistics files open: the task's result
	// reads them without opening any.
	stats *cgroup.StatsReader
	shell *shell
	h     *host
	slot  int
	// early is the profile whose filter the task process installed
	// before it said it was ready; "" for none.
	early Profile
}

// shell is a sandbox shell with, on cgroup v1, the cpu and cpuacct groups
// its tasks share: making and removing those per task cost more than
// starting their accounting afresh (cgroup.Group.ChildSharing), while a
// task's memory and pids groups, whose peaks cannot be reset, are its own.
// The shell's init is in none of them.
type shell struct {
	*runner.Shell
	share     *cgroup.CPUShare // the cpu group, its files held open; nil on v2
	idleSince uint64           // when put back idle (host.idleSeq)
	own       bool             // of a request with limits of its own: never idle
}

// close ends the shell and removes its group.
func (sh *shell) close() error {
	err := sh.Shell.Close()
	if sh.share != nil {
		sh.share.Close()
		err = errors.Join(err, sh.share.Group().Remove())
	}
	return err
}

// newRequest makes the environment of a request for identity slot slot:
// its directory, and the tmpfs on it with the workspace and /tmp, with
// the prepared Go build cache in it once there is one.
func (h *host) newRequest(id string, slot int) (*request, error) {
	return h.openRequest(&request{id: id, slot: slot, limits: h.cfg.Limits, size: h.cfg.WorkspaceSize})
}

// openRequest makes the environment of rq, whose id, slot, limits, size
// and own are set.
func (h *host) openRequest(rq *request) (_ *request, err error) {
	cfg := h.cfg
	rq.h = h
	rq.dir = filepath.Join(h.runDir, rq.id)
	rq.initUID, rq.taskUID = cfg.UIDBase+2*rq.slot, cfg.UIDBase+2*rq.slot+1
	rq.budget = runner.NewBudget(rq.limits.RequestOutputLimit)
	rq.ws, rq.tmp = filepath.Join(rq.dir, "svc"), filepath.Join(rq.dir, "tmp")
	defer func() {
		if err != nil {
			rq.close()
		}
	}()
	// One tmpfs holds the workspace and /tmp, bounded together by the
	// workspace size: one mount and one unmount per request, and each
	// unmount costs an expedited RCU grace period. Its root is the
	// request's directory: only root and the request's init (its group)
	// may pass through it, so other host users cannot reach the
	// workspace, and the task never needs the host path.
	if err := os.Mkdir(rq.dir, 0o700); err != nil {
		return nil, err
	}
	inodes := max(1024, rq.size/(16*KiB))
	data := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0710,uid=0,gid=%d", rq.size, inodes, rq.initUID)
	if err := unix.Mount("svc-workspace", rq.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return nil, fmt.Errorf("mount workspace %s: %w", rq.dir, err)
	}
	for _, d := range []struct {
		path string
		mode uint32
	}{{rq.ws, 0o755}, {rq.tmp, 0o1777}} {
		if err := unix.Mkdir(d.path, 0); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", d.path, err)
		}
		if err := unix.Chown(d.path, rq.taskUID, rq.taskUID); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", d.path, err)
		}
		if err := unix.Chmod(d.path, d.mode); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", d.path, err)
		}
	}
	if lower := h.goCacheLower(); lower != "" && !rq.own {
		if err := rq.mountGoCache(lower); err != nil {
			return nil, err
		}
	}
	return rq, nil
}

// prepare makes a request's environment and builds the cell of its first
// task, ahead of demand.
func (h *host) prepare(ctx context.Context, id string, slot int) (*request, error) {
	rq, err := h.newRequest(id, slot)
	if err != nil {
		return nil, err
	}
	c, err := rq.buildCell(ctx, h.expected())
	if err != nil {
		rq.close()
		return nil, err
	}
	rq.ready = append(rq.ready, c)
	return rq, nil
}

// discardCells ends the task processes made ahead that no task used,
// once the builds in flight are done, and gives their shells back: no task
// process of the request outlives it (idle shells' inits stay, with no
// task in them).
func (rq *request) discardCells() {
	rq.building.Wait()
	rq.mu.Lock()
	ready := rq.ready
	rq.ready = nil
	rq.mu.Unlock()
	for _, c := range ready {
		if err := c.close(); err != nil {
			rq.h.cfg.Logger.Error("discard a cell built ahead", "err", err)
		}
	}
}

// close removes everything of the request: unused cells, its tmpfs and
// directory.
func (rq *request) close() error {
	rq.discardCells()
	if err := unix.Unmount(rq.dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", rq.dir, err)
	}
	// Unmounted, the directory is the empty one made for the mount point.
	return removeEmpty(rq.dir)
}

// removeEmpty removes dir, an empty directory, with one rmdir; if that
// fails (something was left in it), it removes dir with everything in it.
func removeEmpty(dir string) error {
	if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
		return os.RemoveAll(dir)
	}
	return nil
}

// cellSpec is the sandbox the request's shells are built with.
func (rq *request) cellSpec() initproc.CellSpec {
	l := rq.limits
	cpuSecs := uint64(math.Ceil(l.CPUTimeLimit.Seconds())) + 1
	return initproc.CellSpec{
		BaseFilter:  rq.h.base,
		BaseWatched: rq.h.baseWatched,
		Mounts:      rq.h.shellPlan,
		Hostname:    "svc",
		UID:         taskUID,
		GID:         taskGID,
		Rlimits: []initproc.Rlimit{
			{Resource: unix.RLIMIT_CPU, Soft: cpuSecs, Hard: cpuSecs + 1},
			{Resource: unix.RLIMIT_FSIZE, Soft: uint64(rq.size), Hard: uint64(rq.size)},
			{Resource: unix.RLIMIT_NOFILE, Soft: 1024, Hard: 1024},
			{Resource: unix.RLIMIT_CORE, Soft: 0, Hard: 0},
			{Resource: unix.RLIMIT_STACK, Soft: uint64(l.MemoryMax), Hard: uint64(l.MemoryMax)},
		},
	}
}

// buildCell takes a shell of the request's identity slot, makes the task
// cgroup with the task limits and starts the task process in them, for a
// task of profile: its filter installed already where the profile allows
// (host.early).
func (rq *request) buildCell(ctx context.Context, profile Profile) (_ *cell, err error) {
	l := rq.limits
	sh, err := rq.h.takeShell(ctx, rq)
	if err != nil {
		return nil, err
	}
	var (
		tg    *cgroup.Group
		stats *cgroup.StatsReader
	)
	// On a failure, what was made goes, in cell.close's order; the shell
	// is given back unless it had to go.
	defer func() {
		if err == nil {
			return
		}
		if stats != nil {
			stats.Close()
		}
		if sh != nil {
			err = errors.Join(err, rq.h.putShell(rq.slot, sh))
		}
		if tg != nil {
			err = errors.Join(err, tg.Remove())
		}
	}()
	name := fmt.Sprintf("%s-t%d", rq.id, rq.ntask.Add(1))
	if sh.share != nil {
		tg, err = rq.h.service.ChildSharing(name, sh.share.Group(), "cpu", "cpuacct")
	} else {
		tg, err = rq.h.service.Child(name)
	}
	if err != nil {
		return nil, err
	}
	limits := cgroup.Limits{
		MemoryMax: l.MemoryMax,
		PidsMax:   l.PidsMax, // the task's processes alone: the init stays out
		CPUQuota:  l.CPUMax.Quota,
		CPUPeriod: l.CPUMax.Period,
	}
	if sh.share != nil {
		// The shell's: its quota is written anew as the task's
		// accounting starts, which ends any throttled period the
		// shell's last task left.
		limits.CPUQuota, limits.CPUPeriod = 0, 0
	}
	if err := tg.SetLimits(limits); err != nil {
		return nil, err
	}
	if sh.share != nil {
		stats, err = tg.OpenStatsShared(sh.share)
	} else {
		stats, err = tg.OpenStats()
	}
	if err != nil {
		return nil, err
	}
	procs, err := stats.OpenProcs()
	if err != nil {
		return nil, err
	}
	f, ok := rq.h.filters[profile]
	if !ok {
		return nil, fmt.Errorf("sandbox: no seccomp program for profile %q", profile)
	}
	task := &runner.ShellTask{
		CgroupProcs: procs,
		Trees:       []string{mount.WorkspaceTree: rq.ws, mount.TmpTree: rq.tmp},
		Mounts:      rq.h.taskMounts,
	}
	if f.early {
		task.Filter = f.prog
		if f.watched != nil && rq.h.watch.Load() {
			task.Filter, task.Watched = f.watched, true
		}
	}
	c, err := sh.Cell(ctx, task)
	if errors.Is(err, runner.ErrListener) && rq.h.watch.Swap(false) {
		// The kernel or a security module refuses what watchable could
		// not try: from now on filters are not watched, and the
		// namespace of every task that could make sockets is read.
		rq.h.cfg.Logger.Error("filters not watched from now on: the task process's listener could not be taken", "err", err)
	}
	if err != nil {
		// The shell may hold half a task: it goes.
		err = errors.Join(err, sh.close())
		sh = nil
		return nil, err
	}
	cl := &cell{c: c, group: tg, stats: stats, shell: sh, h: rq.h, slot: rq.slot}
	if f.early {
		cl.early = profile
	}
	return cl, nil
}

// takeShell returns an idle shell of the request's identity slot, or
// builds one; a request with limits of its own builds its own.
func (h *host) takeShell(ctx context.Context, rq *request) (*shell, error) {
	h.shellMu.Lock()
	if idle := h.shells[rq.slot]; len(idle) > 0 && !rq.own {
		sh := idle[len(idle)-1]
		h.shells[rq.slot] = idle[:len(idle)-1]
		h.idleShells--
		h.shellMu.Unlock()
		return sh, nil
	}
	h.shellMu.Unlock()
	rs, err := runner.BuildShell(ctx, &runner.ShellConfig{Spec: rq.cellSpec(), InitUID: rq.initUID, TaskUID: rq.taskUID})
	if err != nil {
		return nil, err
	}
	sh := &shell{Shell: rs, own: rq.own}
	if h.cg.Version() == cgroup.V1 {
		g, err := h.service.Child(fmt.Sprintf("shell-%d", h.nshell.Add(1)))
		if err != nil {
			return nil, errors.Join(err, sh.close())
		}
		l := rq.limits.CPUMax
		if sh.share, err = g.ShareCPU(cgroup.Limits{CPUQuota: l.Quota, CPUPeriod: l.Period}); err != nil {
			return nil, errors.Join(err, g.Remove(), sh.close())
		}
	}
	return sh, nil
}

// dropShells closes the idle shells.
func (h *host) dropShells() error {
	h.shellMu.Lock()
	shells := h.shells
	h.shells = make(map[int][]*shell)
	h.idleShells = 0
	h.shellMu.Unlock()
	var err error
	for _, idle := range shells {
		for _, sh := range idle {
			err = errors.Join(err, sh.close())
		}
	}
	return err
}

// putShell keeps a shell whose task is done for the slot's next one, or
// closes it (always one built for a request's own limits). When all slots together keep as many idle shells as they
// may, the one idle longest, of any slot, makes room: slots that served
// the last requests keep their shells, where slots no request has used
// for a while would otherwise hold every place and have the busy ones
// build a shell for each task.
func (h *host) putShell(slot int, sh *shell) error {
	perSlot, total := h.idleCaps()
	h.shellMu.Lock()
	if sh.own || !sh.Usable() || h.closing || len(h.shells[slot]) >= perSlot {
		h.shellMu.Unlock()
		return sh.close()
	}
	var evicted *shell
	if h.idleShells >= total {
		evicted = h.evictIdle()
	}
	h.idleSeq++
	sh.idleSince = h.idleSeq
	h.shells[slot] = append(h.shells[slot], sh)
	h.idleShells++
	h.shellMu.Unlock()
	if evicted != nil {
		return evicted.close()
	}
	return nil
}

// evictIdle takes out of the idle shells the one put back first. Each
// slot's list is in the order its shells were put back, so the candidates
// are the lists' first shells. The caller holds shellMu.
func (h *host) evictIdle() *shell {
	victim := -1
	for slot, idle := range h.shells {
		if len(idle) > 0 && (victim < 0 || idle[0].idleSince < h.shells[victim][0].idleSince) {
			victim = slot
		}
	}
	if victim < 0 {
		return nil
	}
	sh := h.shells[victim][0]
	h.shells[victim] = slices.Delete(h.shells[victim], 0, 1)
	h.idleShells--
	return sh
}

// close ends the cell's task if unused, gives its shell back and removes
// its cgroup.
func (c *cell) close() error {
	err := c.c.Close()
	// The reader first: it may hold the shell's files, which go with the
	// shell to its next task or with its close.
	c.stats.Close()
	err = errors.Join(err, c.h.putShell(c.slot, c.shell))
	return errors.Join(err, c.group.Remove())
}

// prepare builds the cells of the request's coming tasks in the
// background.
func (rq *request) prepare(ctx context.Context, tasks []Task) {
	for _, t := range tasks {
		profile := t.profile(rq.h.cfg.DefaultProfile)
		rq.building.Go(func() {
			c, err := rq.buildCell(ctx, profile)
			if err != nil {
				return // the task builds its own and reports the error
			}
			rq.mu.Lock()
			rq.ready = append(rq.ready, c)
			rq.mu.Unlock()
		})
	}
}

// takeCell returns a cell built ahead for a task of profile (its filter
// installed, or none), or builds one. A cell whose task process installed
// another profile's filter serves no task of this one: it stays for
// another task, or is discarded with the request.
func (rq *request) takeCell(ctx context.Context, profile Profile) (*cell, error) {
	rq.mu.Lock()
	for i := len(rq.ready) - 1; i >= 0; i-- {
		if c := rq.ready[i]; c.early == profile || c.early == "" {
			rq.ready = slices.Delete(rq.ready, i, i+1)
			rq.mu.Unlock()
			return c, nil
		}
	}
	rq.mu.Unlock()
	return rq.buildCell(ctx, profile)
}

// runStep places the files of every task of the step, then runs its tasks
// concurrently. stored holds the open stored files of the request.
func (rq *request) runStep(ctx context.Context, step Step, stored storedFiles) (StepResult, error) {
	sr := StepResult{Parallel: step.Parallel, Results: make([]Result, len(step.Tasks))}
	errs := make([]error, len(step.Tasks))
	var wg sync.WaitGroup
	for i, t := range step.Tasks {
		if err := placeFiles(rq.ws, rq.taskUID, t.Files, stored); err != nil {
			sr.Results[i] = Result{Outcome: OutcomeInfrastructureFailure, Error: err.Error()}
		}
	}
	// Only once every file is in place does any task of the step start;
	// a step of one runs it in this goroutine.
	for i, t := range step.Tasks {
		switch {
		case sr.Results[i].Outcome != "":
		case len(step.Tasks) == 1:
			sr.Results[i], errs[i] = rq.runTask(ctx, t)
		default:
			wg.Go(func() { sr.Results[i], errs[i] = rq.runTask(ctx, t) })
		}
	}
	wg.Wait()
	return sr, errors.Join(errs...)
}

func (rq *request) runTask(ctx context.Context, t Task) (Result, error) {
	cfg, l := rq.h.cfg, rq.limits
	profile := t.profile(cfg.DefaultProfile)
	dir := t.WorkingDir
	if dir == "" {
		dir = "/svc"
	}
	c, err := rq.takeCell(ctx, profile)
	if err != nil {
		return Result{}, err
	}
	// The cell goes off the critical path: the task's mounts are undone,
	// its shell given back and its cgroup removed after the result is out.
	defer rq.h.background(func() {
		if err := c.close(); err != nil {
			rq.h.cfg.Logger.Error("task cleanup", "err", err)
		}
	})
	var filter []byte // none if installed already
	if c.early != profile {
		f, ok := rq.h.filters[profile]
		if !ok {
			return Result{}, fmt.Errorf("sandbox: no seccomp program for profile %q", profile)
		}
		filter = f.prog
	}
	rt := &runner.Task{
		Spec: initproc.TaskSpec{
			Dir:    dir,
			Cmd:    t.Cmd,
			Args:   append([]string{t.Cmd}, t.Args...),
			Env:    t.environ(),
			Filter: filter,
		},
		Stdin:       t.Stdin,
		WallTimeout: l.WallTimeout,
		CPULimit:    l.CPUTimeLimit,
		CPURate:     rq.h.cpuRate,
		CPUUsage:    c.group.CPUUsage,
		OutputLimit: l.OutputLimit,
		Budget:      rq.budget,
		NoSockets:   refusesSockets(profile),
		Allows:      rq.h.allows[profile],
	}
	rr, err := c.c.Run(ctx, rt)
	if err != nil {
		return Result{}, err
	}
	if rr.Cancelled {
		return Result{}, context.Cause(ctx)
	}
	switch {
	case rr.Report.SetupError != "":
		return Result{}, fmt.Errorf("sandbox init: %s", rr.Report.SetupError)
	case rr.Report.WorkdirError != "":
		return Result{Outcome: OutcomeInfrastructureFailure, Error: rr.Report.WorkdirError}, nil
	case !rr.Report.Exited && !rr.Killed():
		return Result{}, errors.New("sandbox init ended before its task did")
	}
	st, err := c.stats.Stats()
	if err != nil {
		return Result{}, err
	}
	r := result(rr, st)
	r.Stats.DeniedSyscalls = deniedSyscalls(profile, rr)
	return r, nil
}

// deniedSyscalls names the calls the task's allowlist refused: nil where
// no listener saw them, and none ever under a v1 profile, which refuses
// nothing it does not kill (clone3's refusal is no allowlist's).
func deniedSyscalls(p Profile, rr *runner.Result) map[string]int64 {
	if !rr.Watched && strings.HasSuffix(string(p), "_v2") {
		return nil
	}
	m := make(map[string]int64, len(rr.Denied))
	for nr, n := range rr.Denied {
		m[seccomp.CallName(nr)] += n
	}
	return m
}

// refusesSockets reports whether tasks under p can make no socket.
func refusesSockets(p Profile) bool {
	sp, err := seccomp.Lookup(string(p))
	return err == nil && sp.RefusesSockets()
}

// environ returns the task's environment: the fixed one, overridden and
// extended by the task's env, sorted by name after the fixed ones.
func (t *Task) environ() []string {
	env := slices.Clone(taskEnv)
	names := make([]string, 0, len(t.Env))
	for k := range t.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		kv := k + "=" + t.Env[k]
		if i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }); i >= 0 {
			env[i] = kv
		} else {
			env = append(env, kv)
		}
	}
	return env
}

// result interprets a finished task, applying API.md's outcome precedence.
func result(rr *runner.Result, st cgroup.Stats) Result {
	r := Result{
		Stdout:          validUTF8(string(rr.Stdout)),
		Stderr:          validUTF8(string(rr.Stderr)),
		StdoutTruncated: rr.StdoutTruncated,
		StderrTruncated: rr.StderrTruncated,
		Stats: Stats{
			WallTimeMs:        rr.WallTime.Milliseconds(),
			CPUUsageUsec:      st.CPUUsageUsec,
			CPUUserUsec:       st.CPUUserUsec,
			CPUSystemUsec:     st.CPUSystemUsec,
			CPUNrThrottled:    st.CPUNrThrottled,
			CPUThrottledUsec:  st.CPUThrottledUsec,
			MemoryPeakBytes:   st.MemoryPeakBytes,
			PidsPeak:          st.PidsPeak,
			OOMKillCount:      st.OOMKills,
			PidsLimitHitCount: st.PidsLimitHits,
		},
	}
	// A task killed by us (or whose init was killed) has no status of its
	// own: the kernel killed it with SIGKILL.
	ws := rr.Report.Status
	switch {
	case rr.Report.Exited && ws.Signaled():
		r.Signal = int(ws.Signal())
		r.ExitCode = 128 + r.Signal
	case rr.Report.Exited:
		r.ExitCode = ws.ExitStatus()
	default:
		r.Signal = int(syscall.SIGKILL)
		r.ExitCode = 128 + r.Signal
	}
	oom := st.OOMKills != nil && *st.OOMKills > 0
	pidsHit := st.PidsLimitHits != nil && *st.PidsLimitHits > 0
	switch {
	case r.Signal == int(syscall.SIGSYS):
		r.Outcome = OutcomePolicyViolation
	case oom && !st.OwnLimitOOM:
		r.Outcome = OutcomeAncestorOutOfMemory
	case oom:
		r.Outcome = OutcomeOutOfMemory
	case rr.TimedOut:
		r.Outcome = OutcomeTimedOut
	case rr.CPUExceeded || r.Signal == int(syscall.SIGXCPU):
		r.Outcome = OutcomeCPUTimeExceeded
	case rr.OutputExceeded:
		r.Outcome = OutcomeOutputLimit
	case pidsHit && (r.ExitCode != 0 || r.Signal != 0):
		r.Outcome = OutcomePidsLimit
	case r.Signal != 0:
		r.Outcome = OutcomeSignaled
	default:
		r.Outcome = OutcomeExited
	}
	return r
}

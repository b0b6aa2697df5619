package svc

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/cgroup"
	"github.com/svc-sandbox/svc/internal/initproc"
	"github.com/svc-sandbox/svc/internal/mount"
	"github.com/svc-sandbox/svc/internal/seccomp"
)

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
	// noLargeFolios: the workspace tmpfs could not be switched to huge=
	// for a placement once, so placements no longer try (placeStep).
	noLargeFolios atomic.Bool
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
	// shellBack is closed, and replaced, whenever a shell comes back
	// from a cell closing in the background; shellWaits counts the
	// tasks waiting for one (see takeShell).
	shellBack  chan struct{}
	shellWaits int
	// idlePerSlot and idleTotal cap the idle shells (idleCaps).
	idlePerSlot, idleTotal int
	idleSeq                uint64       // stamps shells as they are put back
	nshell                 atomic.Int64 // shells made, for their cgroups' names
	closing                bool         // no shell is kept any more
}

// background runs f off the request's critical path; close waits for it.
func (h *host) background(f func()) { h.bg.Go(f) }

var _ platform = (*host)(nil)

// openHost sets up the host for a Sandbox with cfg, its defaults filled:
// the state dir and its lock, the cgroups, the root the sandboxes see and
// the seccomp programs, after removing what a crashed instance left. Its
// error says what a container lacks, where the cause is one that
// runtimes' defaults have (withHint).
func openHost(cfg *Config) (platform, error) {
	h, err := setUpHost(cfg)
	if err != nil {
		return nil, withHint(err)
	}
	return h, nil
}

// setUpHost is openHost but for the hint of its error.
func setUpHost(cfg *Config) (*host, error) {
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
	h.shells, h.shellBack = make(map[int][]*shell), make(chan struct{})
	h.idlePerSlot, h.idleTotal = idleCaps(cfg.Limits)
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

// cgroupVersion is the version of the cgroup hierarchy: 1 or 2.
func (h *host) cgroupVersion() int { return int(h.cg.Version()) }

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

// drain waits for the teardowns in the background and closes the idle
// shells.
func (h *host) drain() error {
	h.bg.Wait()
	return h.dropShells()
}

// close waits for the teardowns in the background, closes the idle shells
// and keeps none from now on, removes the service's cgroups and the run
// directory's tmpfs, and releases the state dir.
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

// policyIdentity names a profile's system-call policy for cache keys: the
// name and a digest of the compiled program, so that a changed policy
// misses.
func policyIdentity(p Profile) string {
	if v, ok := policyIDs.Load(p); ok {
		return v.(string)
	}
	id := string(p)
	if prog, err := seccomp.Program(string(p)); err == nil {
		sum := sha256.Sum256(prog)
		id += ":" + hex.EncodeToString(sum[:16])
	}
	policyIDs.Store(p, id)
	return id
}

var policyIDs sync.Map // Profile -> string

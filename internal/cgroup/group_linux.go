package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of the retry loops of Kill and Remove: at most this many rounds,
// sleeping from 1ms doubling up to maxBackoff between them (about 2s in all).
const (
	killRounds   = 60
	removeRounds = 60
	maxBackoff   = 40 * time.Millisecond
)

// errSelf refuses to kill a group holding this process.
var errSelf = errors.New("cgroup: group holds this process")

// Group is one cgroup: one directory on v2; on v1 one directory in each of
// the memory, pids, cpu and cpuacct hierarchies. Get one from
// [Hierarchy.Service], [Hierarchy.Open] or [Group.Child]; the zero value is
// not usable. Its methods only read and write kernel files, so it is safe
// for concurrent use by multiple goroutines.
type Group struct {
	h *Hierarchy
	// rels and dirs are the group's path and directory in each of h.ctrls.
	rels, dirs []string
	// shared are the directories among dirs that belong to another group
	// (see ChildSharing): never made or removed through this one.
	shared []string
}

// Path returns the group's path relative to the hierarchy root, such as
// "/process_api/x/svc-abc/req-1/task-0". On v1 it is the path in the
// memory hierarchy; the other controllers' paths differ from it when the
// group was made by Service with parent "" and this process's own cgroups
// differ per controller.
func (g *Group) Path() string { return g.rels[0] }

// dir returns the group's directory in controller c (any on v2).
func (g *Group) dir(c string) string {
	if g.h.ver == V2 {
		return g.dirs[0]
	}
	for i, x := range g.h.ctrls {
		if x.name == c {
			return g.dirs[i]
		}
	}
	panic("cgroup: unknown controller " + c)
}

// uniq returns the group's distinct directories (v1 cpu and cpuacct may
// share a mount).
func (g *Group) uniq() []string {
	var out []string
	for _, d := range g.dirs {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// own returns the group's distinct directories less the shared ones: those
// it makes and removes.
func (g *Group) own() []string {
	return slices.DeleteFunc(g.uniq(), func(d string) bool { return slices.Contains(g.shared, d) })
}

// sharesCPU reports whether the group's cpuacct directory is another
// group's (see ChildSharing).
func (g *Group) sharesCPU() bool {
	return g.h.ver == V1 && slices.Contains(g.shared, g.dir("cpuacct"))
}

// Child makes the child group name of g; it is an error (wrapping
// fs.ErrExist) if it exists. On v2 it first enables memory, pids and cpu
// in g's subtree_control when not yet enabled, which fails if g holds
// processes.
func (g *Group) Child(name string) (*Group, error) { return g.ChildSharing(name, nil) }

// ChildSharing makes the child group name of g, as Child does, but in the
// v1 controllers named in shared it takes the directories of the group
// from instead of making its own: they stay from's, and [Group.Remove]
// leaves them. A sandbox that runs one task after another keeps cpu and
// cpuacct groups this way, which start each task's accounting afresh
// (see [CPUShare]), while memory and pids, whose peaks cannot be
// reset, are the task's own. v2 has one directory for every controller:
// shared must be empty there.
func (g *Group) ChildSharing(name string, from *Group, shared ...string) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if len(shared) > 0 && (g.h.ver != V1 || from == nil || from.h != g.h) {
		return nil, fmt.Errorf("cgroup: child %s: only v1 groups of one hierarchy share controllers", name)
	}
	if g.h.ver == V2 {
		if err := enable(g.dirs[0]); err != nil {
			return nil, err
		}
	}
	c := &Group{h: g.h}
	for i := range g.dirs {
		c.rels = append(c.rels, path.Join(g.rels[i], name))
		c.dirs = append(c.dirs, filepath.Join(g.dirs[i], name))
	}
	for _, sc := range shared {
		i := slices.IndexFunc(g.h.ctrls, func(c ctrl) bool { return c.name == sc })
		if i < 0 {
			return nil, fmt.Errorf("cgroup: child %s: no controller %q to share", name, sc)
		}
		c.rels[i], c.dirs[i] = from.rels[i], from.dirs[i]
		c.shared = append(c.shared, from.dirs[i])
	}
	var made []place
	for _, d := range c.own() {
		p := g.h.place(d)
		if err := unix.Mkdirat(p.fd, p.rel, 0o755); err != nil {
			for _, m := range made {
				_ = unix.Unlinkat(m.fd, m.rel, unix.AT_REMOVEDIR) // best effort: undo the half-made group
			}
			return nil, fmt.Errorf("cgroup: child: mkdir %s: %w", d, err)
		}
		made = append(made, p)
	}
	return c, nil
}

// Hold opens the group's directories and keeps them open until Release,
// for its descendants: making and removing them, writing their limits and
// opening their statistics then walk their paths from there, a component
// or two, instead of from the root. The service's group holds its
// directories for the tasks' groups. Release only when no descendant is
// being made, changed or removed.
func (g *Group) Hold() error {
	fds := make(map[string]int)
	for _, d := range g.uniq() {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return fmt.Errorf("cgroup: hold %s: %w", d, err)
		}
		fds[d] = fd
	}
	h := g.h
	h.heldMu.Lock()
	defer h.heldMu.Unlock()
	if h.held == nil {
		h.held = make(map[string]int)
	}
	for d, fd := range fds {
		if _, ok := h.held[d]; ok {
			unix.Close(fd) // held already: one fd is enough
			continue
		}
		h.held[d] = fd
	}
	return nil
}

// Release closes the directories Hold opened.
func (g *Group) Release() {
	h := g.h
	h.heldMu.Lock()
	defer h.heldMu.Unlock()
	for _, d := range g.uniq() {
		if fd, ok := h.held[d]; ok {
			unix.Close(fd)
			delete(h.held, d)
		}
	}
}

// SetLimits writes the non-zero fields of l. v1: memory.limit_in_bytes and
// memory.memsw.limit_in_bytes (when present, in the order the kernel
// accepts: memsw may not be below the limit), pids.max, cpu.cfs_period_us,
// cpu.cfs_quota_us. v2: memory.max, memory.swap.max = 0 (when present),
// pids.max, cpu.max "quota period" or "max period".
func (g *Group) SetLimits(l Limits) error {
	if l.MemoryMax < 0 || l.PidsMax < 0 || l.CPUQuota < 0 || l.CPUPeriod < 0 {
		return fmt.Errorf("cgroup: set limits %+v: negative value", l)
	}
	period := strconv.FormatInt(l.CPUPeriod, 10)
	if l.CPUPeriod == 0 {
		period = "100000"
	}
	setCPU := l.CPUQuota > 0 || l.CPUPeriod > 0
	if g.h.ver == V2 {
		d := g.h.place(g.dirs[0])
		if l.MemoryMax > 0 {
			if err := writeFile(d, "memory.max", itoa(l.MemoryMax)); err != nil {
				return err
			}
			if err := writeOpt(d, "memory.swap.max", "0"); err != nil {
				return err
			}
		}
		if l.PidsMax > 0 {
			if err := writeFile(d, "pids.max", itoa(l.PidsMax)); err != nil {
				return err
			}
		}
		if setCPU {
			q := "max"
			if l.CPUQuota > 0 {
				q = itoa(l.CPUQuota)
			}
			if err := writeFile(d, "cpu.max", q+" "+period); err != nil {
				return err
			}
		}
		return nil
	}

	if l.MemoryMax > 0 {
		if err := setMemV1(g.h.place(g.dir("memory")), itoa(l.MemoryMax)); err != nil {
			return err
		}
	}
	if l.PidsMax > 0 {
		if err := writeFile(g.h.place(g.dir("pids")), "pids.max", itoa(l.PidsMax)); err != nil {
			return err
		}
	}
	if setCPU {
		q := "-1"
		if l.CPUQuota > 0 {
			q = itoa(l.CPUQuota)
		}
		d := g.h.place(g.dir("cpu"))
		err := writeFile(d, "cpu.cfs_period_us", period)
		if errors.Is(err, syscall.EINVAL) {
			// The new period with the old quota may break a constraint
			// (quota/period above the parent's) that the new pair keeps.
			if err = writeFile(d, "cpu.cfs_quota_us", q); err == nil {
				err = writeFile(d, "cpu.cfs_period_us", period)
			}
		}
		if err == nil {
			err = writeFile(d, "cpu.cfs_quota_us", q)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// setMemV1 sets the v1 memory limit and, when the kernel accounts swap, the
// memory+swap limit to the same value v. memsw may not be below the limit:
// lowering works limit first, raising memsw first.
func setMemV1(d place, v string) error {
	err := writeFile(d, "memory.limit_in_bytes", v)
	if err == nil {
		return writeOpt(d, "memory.memsw.limit_in_bytes", v)
	}
	if !errors.Is(err, syscall.EINVAL) {
		return err
	}
	if _, serr := os.Stat(filepath.Join(d.path, "memory.memsw.limit_in_bytes")); serr != nil {
		return err
	}
	if err := writeFile(d, "memory.memsw.limit_in_bytes", v); err != nil {
		return err
	}
	return writeFile(d, "memory.limit_in_bytes", v)
}

// writeOpt is writeFile of a file the kernel may not have.
func writeOpt(d place, name, val string) error {
	err := writeFile(d, name, val)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(d.path); serr == nil {
			return nil
		}
	}
	return err
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// AddProc moves process pid (all its threads) into the group: into
// cgroup.procs of every controller on v1, of the one directory on v2.
func (g *Group) AddProc(pid int) error {
	for _, d := range g.uniq() {
		if err := writeFile(g.h.place(d), "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// OpenFD opens the v2 group directory O_PATH|O_DIRECTORY|O_CLOEXEC, for
// clone3's CLONE_INTO_CGROUP (syscall.SysProcAttr's UseCgroupFD and
// CgroupFD). The caller closes it. On v1 it returns an error wrapping
// [ErrNotSupported].
func (g *Group) OpenFD() (*os.File, error) {
	if g.h.ver != V2 {
		return nil, fmt.Errorf("cgroup: open fd on v1: %w", ErrNotSupported)
	}
	fd, err := unix.Open(g.dirs[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup: open fd %s: %w", g.dirs[0], err)
	}
	return os.NewFile(uintptr(fd), g.dirs[0]), nil
}

// CPUUsage returns the total CPU time used by the group and its
// descendants: v1 cpuacct.usage, v2 cpu.stat usage_usec. It reads one file.
func (g *Group) CPUUsage() (time.Duration, error) {
	if g.h.ver == V2 {
		m, err := readFlat(g.dirs[0], "cpu.stat")
		if err != nil {
			return 0, err
		}
		u, ok := m["usage_usec"]
		if !ok {
			return 0, fmt.Errorf("cgroup: cpu usage: no usage_usec in %s: %w", filepath.Join(g.dirs[0], "cpu.stat"), fs.ErrNotExist)
		}
		return time.Duration(u) * time.Microsecond, nil
	}
	d := g.dir("cpuacct")
	u, err := readInt(d, "cpuacct.usage")
	if err != nil {
		return 0, err
	}
	if u == nil {
		return 0, fmt.Errorf("cgroup: cpu usage: %s: %w", filepath.Join(d, "cpuacct.usage"), fs.ErrNotExist)
	}
	return time.Duration(*u), nil
}

// Kill sends SIGKILL to every process in the group and its descendants.
// On v2 with cgroup.kill (Linux 5.14) one write does it, reaching even
// processes forking meanwhile. Otherwise it loops, a bounded number of
// rounds: read cgroup.procs of the subtree in every controller, kill what
// is there, until nothing is left. Kill does not wait for the killed
// processes to exit; [Group.Remove] does. A missing group is fine. Kill
// refuses a group holding the calling process.
func (g *Group) Kill() error {
	if err := g.refuseSelf(); err != nil {
		return err
	}
	if g.h.ver == V2 {
		err := writeFile(g.h.place(g.dirs[0]), "cgroup.kill", "1")
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// No cgroup.kill (Linux < 5.14), or no group: the loop finds out.
	}
	self := os.Getpid()
	wait := time.Millisecond
	for range killRounds {
		live := false
		for _, d := range g.uniq() {
			dirs, err := subtree(d)
			if err != nil {
				return fmt.Errorf("cgroup: kill: %w", err)
			}
			for _, sd := range dirs {
				pids, err := readProcs(sd)
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed meanwhile
				}
				if err != nil {
					return fmt.Errorf("cgroup: kill: %w", err)
				}
				for _, p := range pids {
					if p == self {
						continue
					}
					live = true
					if err := unix.Kill(p, unix.SIGKILL); err != nil && err != unix.ESRCH {
						return fmt.Errorf("cgroup: kill %d: %w", p, err)
					}
				}
			}
		}
		if !live {
			return nil
		}
		time.Sleep(wait)
		wait = min(2*wait, maxBackoff)
	}
	return fmt.Errorf("cgroup: kill %s: processes left after %d rounds", g.Path(), killRounds)
}

// refuseSelf returns errSelf if this process is in g or below, in any of
// g's controllers.
func (g *Group) refuseSelf() error {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	v1, v2, err := ParseProcCgroup(strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	for i, c := range g.h.ctrls {
		own := v2
		if g.h.ver == V1 {
			own = v1[c.name]
		}
		r := g.rels[i]
		if own == r || strings.HasPrefix(own, strings.TrimSuffix(r, "/")+"/") {
			return fmt.Errorf("%w: %s", errSelf, r)
		}
	}
	return nil
}

// Remove removes the group and its descendants, deepest first, in every
// controller but those it shares with another group (ChildSharing). A
// missing directory is fine. A busy one (processes just
// killed may take a moment to leave) is retried a bounded number of times
// with a short backoff, about 2s in all; the error then wraps EBUSY.
func (g *Group) Remove() error {
	wait := time.Millisecond
	for i := 1; ; i++ {
		err := g.removeOnce()
		if err == nil || !errors.Is(err, syscall.EBUSY) || i == removeRounds {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, maxBackoff)
	}
}

func (g *Group) removeOnce() error {
	// A leaf, the common case, goes without reading the subtree.
	leaf := true
	for _, d := range g.own() {
		p := g.h.place(d)
		if err := unix.Unlinkat(p.fd, p.rel, unix.AT_REMOVEDIR); err != nil && err != unix.ENOENT {
			leaf = false
			break
		}
	}
	if leaf {
		return nil
	}
	for _, d := range g.own() {
		dirs, err := subtree(d)
		if err != nil {
			return fmt.Errorf("cgroup: remove: %w", err)
		}
		for _, sd := range dirs {
			if err := unix.Rmdir(sd); err != nil && err != unix.ENOENT {
				return fmt.Errorf("cgroup: remove %s: %w", sd, err)
			}
		}
	}
	return nil
}

// Destroy kills the group's processes and removes it with its descendants
// ([Group.Kill], then [Group.Remove]); the startup sweep uses it on the
// leftovers of a crashed instance. A group already empty is removed
// without a look for processes.
func (g *Group) Destroy() error {
	if g.removeOnce() == nil {
		return nil
	}
	err := g.Kill()
	if errors.Is(err, errSelf) {
		return err
	}
	return errors.Join(err, g.Remove())
}

package cgroup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/moby/sys/mountinfo"
)

// v1Controllers are the v1 controllers a Group spans, in this order; memory
// first, so that Group.Path reports the memory path.
var v1Controllers = []string{"memory", "pids", "cpu", "cpuacct"}

// v2Controllers are enabled in subtree_control on v2.
var v2Controllers = []string{"memory", "pids", "cpu"}

// supervisor is the leaf that takes this process's own cgroup's processes
// on v2 (see Hierarchy.Service).
const supervisor = "supervisor"

// Hierarchy is the cgroup hierarchy of this host as seen by this process.
// Make one with [Detect]; the zero value is not usable. It is safe for
// concurrent use.
type Hierarchy struct {
	ver Version
	// ctrls: v1 one per v1Controllers entry; v2 exactly one, named "".
	ctrls []ctrl

	// mu serializes Service: moving processes to the supervisor leaf and
	// enabling controllers in the same parent.
	mu sync.Mutex

	// held are the directories held open by Group.Hold, with their fds.
	heldMu sync.RWMutex
	held   map[string]int
}

// place returns how system calls reach the directory dir: relative to its
// nearest ancestor held open by [Group.Hold], or by its path. (Never
// relative to dir itself: dir may be the one made or removed.)
func (h *Hierarchy) place(dir string) place {
	h.heldMu.RLock()
	defer h.heldMu.RUnlock()
	if len(h.held) == 0 {
		return pathPlace(dir)
	}
	for d := filepath.Dir(dir); len(d) > 1; d = filepath.Dir(d) {
		if fd, ok := h.held[d]; ok {
			return place{fd, dir[len(d)+1:], dir}
		}
	}
	return pathPlace(dir)
}

// ctrl is one controller's hierarchy (v1) or the unified hierarchy (v2).
type ctrl struct {
	name string // v1 controller, "" on v2
	mnt  string // mount point
	root string // the hierarchy path mounted at mnt ("/" normally)
	own  string // this process's cgroup, from /proc/self/cgroup at Detect
}

// dir returns the directory of cgroup rel in c.
func (c ctrl) dir(rel string) string {
	if c.root != "/" {
		if rel == c.root {
			rel = "/"
		} else if strings.HasPrefix(rel, c.root+"/") {
			rel = rel[len(c.root):]
		}
	}
	return filepath.Join(c.mnt, rel)
}

// Detect finds the hierarchy: v2 when /sys/fs/cgroup is a cgroup2 mount,
// else v1, which needs the memory, pids, cpu and cpuacct controllers
// mounted (the error names a missing one). It reads /proc/self/mountinfo
// and /proc/self/cgroup.
func Detect() (*Hierarchy, error) {
	ms, err := mountinfo.GetMounts(cgroupMounts)
	if err != nil {
		return nil, fmt.Errorf("cgroup: read mountinfo: %w", err)
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	return detect(ms, f)
}

// cgroupMounts keeps the cgroup mounts and whatever is mounted at
// /sys/fs/cgroup.
func cgroupMounts(m *mountinfo.Info) (skip, stop bool) {
	ok := m.FSType == "cgroup" || m.FSType == "cgroup2" || m.Mountpoint == "/sys/fs/cgroup"
	return !ok, false
}

// detect is Detect on given mounts (from mountinfo, in its order) and
// /proc/self/cgroup contents.
func detect(ms []*mountinfo.Info, procCgroup io.Reader) (*Hierarchy, error) {
	v1, v2, err := ParseProcCgroup(procCgroup)
	if err != nil {
		return nil, err
	}
	// The last mount at a point is the visible one.
	var top *mountinfo.Info
	for _, m := range ms {
		if m.Mountpoint == "/sys/fs/cgroup" {
			top = m
		}
	}
	if top != nil && top.FSType == "cgroup2" {
		if v2 == "" {
			return nil, errors.New("cgroup: /sys/fs/cgroup is cgroup2 but /proc/self/cgroup has no 0:: line")
		}
		c := ctrl{mnt: top.Mountpoint, root: top.Root, own: path.Clean(v2)}
		return &Hierarchy{ver: V2, ctrls: []ctrl{c}}, nil
	}
	h := &Hierarchy{ver: V1}
	for _, name := range v1Controllers {
		var mnt *mountinfo.Info
		for _, m := range ms {
			if m.FSType == "cgroup" && hasOpt(m.VFSOptions, name) {
				mnt = m
				break
			}
		}
		if mnt == nil {
			return nil, fmt.Errorf("cgroup: v1 controller %s not mounted", name)
		}
		own, ok := v1[name]
		if !ok {
			return nil, fmt.Errorf("cgroup: v1 controller %s not in /proc/self/cgroup", name)
		}
		h.ctrls = append(h.ctrls, ctrl{name: name, mnt: mnt.Mountpoint, root: mnt.Root, own: path.Clean(own)})
	}
	return h, nil
}

// hasOpt reports whether the comma-separated opts hold o.
func hasOpt(opts, o string) bool {
	for _, s := range strings.Split(opts, ",") {
		if s == o {
			return true
		}
	}
	return false
}

// Version returns the hierarchy's version.
func (h *Hierarchy) Version() Version { return h.ver }

// joinFile is the file of a group's directory through which a task
// process joins it, writing "0" (itself) while it is single-threaded. On
// v1 it is tasks, which moves the writing thread alone; cgroup.procs
// moves its whole thread group and for that takes the kernel's global
// cgroup_threadgroup_rwsem for writing, which waits for an RCU grace
// period (milliseconds on an idle machine) whenever no other migration
// came shortly before, holding cgroup_mutex, and every cgroup made,
// removed or joined on the machine waits with it. For a process of one
// thread the two moves are the same. On v2 tasks does not exist and a
// thread moves alone only within a threaded subtree: cgroup.procs.
func (h *Hierarchy) joinFile() string {
	if h.ver == V1 {
		return "tasks"
	}
	return "cgroup.procs"
}

// Own returns this process's cgroup path as read by Detect: on v1 its path
// in the memory hierarchy. It does not follow later moves, such as the
// one into the supervisor leaf by Service.
func (h *Hierarchy) Own() string { return h.ctrls[0].own }

// Open returns the Group for rel, a cgroup path relative to the hierarchy
// root ("/a/b"), the same path in every controller on v1. With create it
// makes the directories (mkdir -p) in every controller and enables no
// controllers; without, at least one of them must exist.
func (h *Hierarchy) Open(rel string, create bool) (*Group, error) {
	if !strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("cgroup: open %q: path not absolute", rel)
	}
	rel = path.Clean(rel)
	g := &Group{h: h}
	for _, c := range h.ctrls {
		g.rels = append(g.rels, rel)
		g.dirs = append(g.dirs, c.dir(rel))
	}
	found := false
	for _, d := range g.uniq() {
		if create {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("cgroup: open %s: %w", rel, err)
			}
			continue
		}
		if _, err := os.Stat(d); err == nil {
			found = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cgroup: open %s: %w", rel, err)
		}
	}
	if !create && !found {
		return nil, fmt.Errorf("cgroup: open %s: %w", rel, fs.ErrNotExist)
	}
	return g, nil
}

// Service makes the cgroup of a service instance, name, under parent
// (parent "" means this process's own cgroup as Detect saw it, per
// controller on v1), ready to hold children with limits. An existing
// cgroup is reused, so a startup sweep may call Service with the name of
// a crashed instance and [Group.Destroy] the result.
//
// On v2 it enables memory, pids and cpu in parent's subtree_control and in
// the new group's. Because a non-root cgroup with controllers enabled for
// its children may hold no processes, when parent is this process's own
// cgroup and is not the hierarchy's root (a container's cgroup, seen as
// "/" from its own cgroup namespace, is not), Service first moves every process of it
// (this one and any others, a wrapper shell say) into the leaf
// <parent>/supervisor. Processes this one starts later land there too
// unless placed elsewhere.
//
// On v1 it makes the directory in the memory, pids, cpu and cpuacct
// hierarchies.
func (h *Hierarchy) Service(parent, name string) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if parent != "" && !strings.HasPrefix(parent, "/") {
		return nil, fmt.Errorf("cgroup: service parent %q: path not absolute", parent)
	}
	g := &Group{h: h}
	for _, c := range h.ctrls {
		base := c.own
		if parent != "" {
			base = path.Clean(parent)
		}
		rel := path.Join(base, name)
		g.rels = append(g.rels, rel)
		g.dirs = append(g.dirs, c.dir(rel))
	}
	if h.ver == V1 {
		for _, d := range g.uniq() {
			if err := mkdir(d); err != nil {
				return nil, err
			}
		}
		return g, nil
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.ctrls[0]
	base := path.Dir(g.rels[0])
	pdir := c.dir(base)
	if base == c.own {
		root, err := isRoot(pdir)
		if err != nil {
			return nil, err
		}
		if !root {
			if err := evacuate(pdir); err != nil {
				return nil, err
			}
		}
	}
	if err := enable(pdir); err != nil {
		return nil, err
	}
	if err := mkdir(g.dirs[0]); err != nil {
		return nil, err
	}
	if err := enable(g.dirs[0]); err != nil {
		return nil, err
	}
	return g, nil
}

// validName rejects names that are not one path element.
func validName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("cgroup: invalid name %q", name)
	}
	return nil
}

// mkdir makes dir; an existing one is fine.
func mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cgroup: mkdir: %w", err)
	}
	return nil
}

// isRoot reports whether the v2 cgroup dir is the root of the whole
// hierarchy, which alone may hold processes while its controllers are
// enabled for children. Its path says nothing: in a container's own
// cgroup namespace the container's cgroup reads as "/" in
// /proc/self/cgroup and is mounted at /sys/fs/cgroup, but it is an
// ordinary cgroup of the host. The true root is the one cgroup without a
// cgroup.type file.
func isRoot(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	default:
		return false, fmt.Errorf("cgroup: %w", err)
	}
}

// evacuate moves every process in the v2 cgroup dir into dir/supervisor,
// a few rounds in case they fork meanwhile.
func evacuate(dir string) error {
	sup := filepath.Join(dir, supervisor)
	for range 10 {
		pids, err := readProcs(dir)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if err := mkdir(sup); err != nil {
			return err
		}
		for _, p := range pids {
			err := writeFile(pathPlace(sup), "cgroup.procs", strconv.Itoa(p))
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("cgroup: move to supervisor: %w", err)
			}
		}
	}
	return fmt.Errorf("cgroup: move to supervisor: %s keeps gaining processes", dir)
}

// enable enables v2Controllers in the v2 cgroup dir's subtree_control,
// those not enabled yet, one at a time for a precise error.
func enable(dir string) error {
	on, err := readFile(dir, "cgroup.subtree_control")
	if err != nil {
		return err
	}
	avail, err := readFile(dir, "cgroup.controllers")
	if err != nil {
		return err
	}
	for _, c := range v2Controllers {
		if hasField(on, c) {
			continue
		}
		if !hasField(avail, c) {
			return fmt.Errorf("cgroup: controller %s not available in %s (cgroup.controllers: %q)", c, dir, strings.TrimSpace(avail))
		}
		if err := writeFile(pathPlace(dir), "cgroup.subtree_control", "+"+c); err != nil {
			if errors.Is(err, syscall.EBUSY) {
				return fmt.Errorf("%w (the cgroup holds processes)", err)
			}
			return err
		}
	}
	return nil
}

// hasField reports whether the space-separated s holds f.
func hasField(s, f string) bool {
	for _, x := range strings.Fields(s) {
		if x == f {
			return true
		}
	}
	return false
}

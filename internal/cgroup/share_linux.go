package cgroup

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A CPUShare holds open the cpu and cpuacct directories of a v1 group
// whose task groups share them ([Group.ChildSharing]), one task at a time,
// as a sandbox that runs one task after another does. It writes the CPU
// limit once; each task's accounting then starts with two writes and a
// read, no file opened ([Group.OpenStatsShared]). It is not safe for
// concurrent use; Close it before the group is removed.
type CPUShare struct {
	g       *Group
	quota   []byte
	quotaFD int // cpu.cfs_quota_us
	usageFD int // cpuacct.usage, for its reset
	// dirs are the cpu and cpuacct directories with their statistics
	// files open.
	dirs map[string]dirFD
	// procs are their join files (Hierarchy.joinFile), open for writing:
	// each task process gets a copy (StatsReader.OpenProcs).
	procs map[string]int
}

// ShareCPU writes the CPU limit of l (its CPUQuota and CPUPeriod; the rest
// is ignored) to the v1 group g and opens its cpu and cpuacct files for
// the groups that will share them.
func (g *Group) ShareCPU(l Limits) (_ *CPUShare, err error) {
	if g.h.ver != V1 {
		return nil, fmt.Errorf("cgroup: share cpu of %s: v1 only", g.Path())
	}
	s := &CPUShare{g: g, quotaFD: -1, usageFD: -1, dirs: make(map[string]dirFD, 2), procs: make(map[string]int, 2)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := g.SetLimits(Limits{CPUQuota: l.CPUQuota, CPUPeriod: l.CPUPeriod}); err != nil {
		return nil, err
	}
	s.quota = []byte("-1")
	if l.CPUQuota > 0 {
		s.quota = []byte(itoa(l.CPUQuota))
	}
	for _, c := range []string{"cpu", "cpuacct"} {
		p := g.dir(c)
		if _, ok := s.dirs[p]; ok {
			continue // cpu and cpuacct on one mount
		}
		d, err := g.openStatsDir(p)
		if err != nil {
			return nil, fmt.Errorf("cgroup: share cpu: %w", err)
		}
		s.dirs[p] = d
		join := g.h.joinFile()
		fd, err := unix.Openat(d.fd, join, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("cgroup: share cpu: open %s: %w", filepath.Join(p, join), err)
		}
		s.procs[p] = fd
	}
	for _, f := range []struct {
		fd   *int
		ctrl string
		name string
	}{{&s.quotaFD, "cpu", "cpu.cfs_quota_us"}, {&s.usageFD, "cpuacct", "cpuacct.usage"}} {
		if *f.fd, err = unix.Openat(s.dirs[g.dir(f.ctrl)].fd, f.name, unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
			return nil, fmt.Errorf("cgroup: share cpu: open %s: %w", filepath.Join(g.dir(f.ctrl), f.name), err)
		}
	}
	return s, nil
}

// Group returns the group whose cpu and cpuacct directories are shared.
func (s *CPUShare) Group() *Group { return s.g }

// dir returns the directory p of the share, if it is one of its; a nil
// share has none.
func (s *CPUShare) dir(p string) (dirFD, bool) {
	if s == nil {
		return dirFD{}, false
	}
	d, ok := s.dirs[p]
	return d, ok
}

// start begins a task's CPU accounting, the group's processes all gone:
// the quota written anew refills the bandwidth and ends any throttled
// period the last task left, the reset of cpuacct.usage zeroes
// cpuacct.usage_all too, and it returns cpu.stat, the base of the task's
// throttling counts.
func (s *CPUShare) start() (map[string]int64, error) {
	for _, w := range []struct {
		fd   int
		ctrl string
		name string
		val  []byte
	}{{s.quotaFD, "cpu", "cpu.cfs_quota_us", s.quota}, {s.usageFD, "cpuacct", "cpuacct.usage", []byte("0")}} {
		if _, err := unix.Pwrite(w.fd, w.val, 0); err != nil {
			return nil, fmt.Errorf("cgroup: write %s: %s %q: %w", w.name, filepath.Join(s.g.dir(w.ctrl), w.name), w.val, err)
		}
	}
	return s.dirs[s.g.dir("cpu")].readFlat("cpu.stat")
}

// Close closes the share's files; closing it again does nothing.
func (s *CPUShare) Close() {
	for _, fd := range []*int{&s.quotaFD, &s.usageFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	for _, d := range s.dirs {
		d.close()
	}
	for _, fd := range s.procs {
		unix.Close(fd)
	}
	s.dirs, s.procs = nil, nil
}

// procsFD returns the open join file of the share's directory p,
// if p is one of its; a nil share has none.
func (s *CPUShare) procsFD(p string) (int, bool) {
	if s == nil {
		return -1, false
	}
	fd, ok := s.procs[p]
	return fd, ok
}

package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Stats reads the group's statistics (see [Stats] for the files). It is an
// error if the group does not exist; a value the kernel does not provide
// is nil.
func (g *Group) Stats() (Stats, error) {
	r, err := g.OpenStats()
	if err != nil {
		return Stats{}, err
	}
	defer r.Close()
	return r.Stats()
}

// A StatsReader reads a group's statistics through files it opened once:
// a task's are opened before the task starts, so that reading them after
// it, on the way to its result, is a read per file. Close it before the
// group is removed. It is not safe for concurrent use.
type StatsReader struct {
	g    *Group
	dirs map[string]dirFD
	// own are the directories among dirs that the reader opened; the
	// others are a CPUShare's, and stay open.
	own []dirFD
	// cpuBase is cpu.stat when the reader was opened, for a group that
	// shares its cpu directory: its counts are taken from then.
	cpuBase map[string]int64
	// share is the CPUShare whose directories the group shares, or nil.
	share *CPUShare
}

// statsFiles are the files Stats reads in each controller.
var statsFiles = map[string][]string{
	"":        {"cpu.stat", "memory.peak", "pids.peak", "memory.events", "memory.events.local", "pids.events"}, // v2
	"cpuacct": {"cpuacct.usage", "cpuacct.usage_all"},
	"cpu":     {"cpu.stat"},
	"memory":  {"memory.max_usage_in_bytes", "memory.oom_control"},
	"pids":    {"pids.peak", "pids.events"},
}

// OpenStats opens the group's statistics files for [StatsReader.Stats].
// It is an error if the group does not exist, or if it shares its cpu and
// cpuacct directories with another ([Group.ChildSharing]): their
// accounting is started through the share ([Group.OpenStatsShared]).
func (g *Group) OpenStats() (*StatsReader, error) {
	if g.sharesCPU() {
		return nil, fmt.Errorf("cgroup: stats of %s: its cpu directories are shared: open them through the share", g.Path())
	}
	return g.openStats(nil)
}

// OpenStatsShared is OpenStats for a group that shares the cpu and cpuacct
// directories of share's group, none of whose processes may be left: it
// reads them through share's open files and starts the group's CPU
// accounting afresh there ([CPUShare]), so that the reader counts CPU
// time and throttling from the open on.
func (g *Group) OpenStatsShared(share *CPUShare) (*StatsReader, error) {
	if !g.sharesCPU() || g.dir("cpu") != share.g.dir("cpu") || g.dir("cpuacct") != share.g.dir("cpuacct") {
		return nil, fmt.Errorf("cgroup: stats of %s: it does not share the cpu directories of %s", g.Path(), share.g.Path())
	}
	return g.openStats(share)
}

// openStatsDir opens the group's directory p and the statistics files of
// the controllers in it (cpu and cpuacct may share one).
func (g *Group) openStatsDir(p string) (dirFD, error) {
	d, err := openDir(g.h.place(p))
	if err != nil {
		return d, err
	}
	for _, c := range g.h.ctrls {
		if g.dir(c.name) == p {
			for _, name := range statsFiles[c.name] {
				d.open(name)
			}
		}
	}
	return d, nil
}

func (g *Group) openStats(share *CPUShare) (_ *StatsReader, err error) {
	r := &StatsReader{g: g, dirs: make(map[string]dirFD, len(g.dirs)), share: share}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	// Each directory is opened once, which also checks that it exists,
	// and its files are opened relative to it.
	for _, p := range g.uniq() {
		if d, ok := share.dir(p); ok {
			r.dirs[p] = d
			continue
		}
		d, err := g.openStatsDir(p)
		if err != nil {
			return nil, fmt.Errorf("cgroup: stats: %w", err)
		}
		r.dirs[p] = d
		r.own = append(r.own, d)
	}
	if share != nil {
		if r.cpuBase, err = share.start(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// OpenProcs opens for writing the file through which a process joins
// each of the group's distinct directories (one on v2, one per hierarchy
// on v1: see [Hierarchy.joinFile]), relative to the directories the
// reader holds open, so no path is walked again; those of a CPUShare's
// directories are copies of the share's, opened once for all its tasks. A
// single-threaded process that writes "0" to each moves itself into the
// group. The caller closes them.
func (r *StatsReader) OpenProcs() ([]int, error) {
	join := r.g.h.joinFile()
	var fds []int
	for _, p := range r.g.uniq() {
		var fd int
		var err error
		if held, ok := r.share.procsFD(p); ok {
			fd, err = unix.FcntlInt(uintptr(held), unix.F_DUPFD_CLOEXEC, 0)
		} else {
			fd, err = unix.Openat(r.dirs[p].fd, join, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("cgroup: open %s: %w", filepath.Join(p, join), err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// Stats reads the group's statistics.
func (r *StatsReader) Stats() (Stats, error) {
	g := r.g
	if g.h.ver == V2 {
		return statsV2(r.dirs[g.dirs[0]])
	}
	return statsV1(r.dirs[g.dir("cpuacct")], r.dirs[g.dir("cpu")], r.dirs[g.dir("memory")], r.dirs[g.dir("pids")], r.cpuBase)
}

// Close closes the files the reader opened (not a CPUShare's).
func (r *StatsReader) Close() {
	for _, d := range r.own {
		d.close()
	}
	r.own, r.dirs = nil, nil
}

func statsV2(d dirFD) (Stats, error) {
	var s Stats
	cpu, err := d.readFlat("cpu.stat")
	if err != nil {
		return s, err
	}
	s.CPUUsageUsec = lookup(cpu, "usage_usec")
	s.CPUUserUsec = lookup(cpu, "user_usec")
	s.CPUSystemUsec = lookup(cpu, "system_usec")
	s.CPUNrThrottled = lookup(cpu, "nr_throttled")
	s.CPUThrottledUsec = lookup(cpu, "throttled_usec")
	if s.MemoryPeakBytes, err = d.readInt("memory.peak"); err != nil {
		return s, err
	}
	if s.PidsPeak, err = d.readInt("pids.peak"); err != nil {
		return s, err
	}
	ev, err := d.readFlat("memory.events")
	if err != nil {
		return s, err
	}
	s.OOMKills = lookup(ev, "oom_kill")
	local, err := d.readFlat("memory.events.local")
	if err != nil {
		return s, err
	}
	if local == nil {
		local = ev // Linux < 5.7: memory.events is the best there is
	}
	s.OwnLimitOOM = local["oom"] > 0
	pe, err := d.readFlat("pids.events")
	if err != nil {
		return s, err
	}
	s.PidsLimitHits = lookup(pe, "max")
	return s, nil
}

// statsV1 reads a v1 group's statistics from its directories; cpuBase,
// if not nil, is cpu.stat at the start of the group's accounting.
func statsV1(acct, cpu, mem, pids dirFD, cpuBase map[string]int64) (Stats, error) {
	var s Stats
	var err error
	if s.CPUUsageUsec, s.CPUUserUsec, s.CPUSystemUsec, err = cpuacctUsage(acct); err != nil {
		return s, err
	}
	cs, err := cpu.readFlat("cpu.stat")
	if err != nil {
		return s, err
	}
	for k, v := range cpuBase {
		if _, ok := cs[k]; ok {
			cs[k] -= v
		}
	}
	s.CPUNrThrottled = lookup(cs, "nr_throttled")
	s.CPUThrottledUsec = usec(lookup(cs, "throttled_time"))

	if s.MemoryPeakBytes, err = mem.readInt("memory.max_usage_in_bytes"); err != nil {
		return s, err
	}
	// v1 counts oom_kill only in the victim's own group: sum the subtree
	// (a leaf, the task's group, is its own subtree).
	var oc []map[string]int64
	if mem.leaf() {
		m, err := mem.readFlat("memory.oom_control")
		if err != nil {
			return s, err
		}
		oc = append(oc, m)
	} else {
		sub, err := subtree(mem.path)
		if err != nil {
			return s, err
		}
		for _, sd := range sub {
			m, err := readFlat(sd, "memory.oom_control")
			if err != nil {
				return s, err
			}
			oc = append(oc, m)
		}
	}
	for _, m := range oc {
		if k := lookup(m, "oom_kill"); k != nil {
			if s.OOMKills == nil {
				s.OOMKills = new(int64)
			}
			*s.OOMKills += *k
		}
	}
	s.OwnLimitOOM, err = ownLimitV1(mem.path, s.OOMKills)
	if err != nil {
		return s, err
	}

	if s.PidsPeak, err = pids.readInt("pids.peak"); err != nil {
		return s, err
	}
	pe, err := pids.readFlat("pids.events")
	if err != nil {
		return s, err
	}
	s.PidsLimitHits = lookup(pe, "max")
	return s, nil
}

// cpuacctUsage returns the total, user and system CPU time of a v1
// cpuacct group in microseconds. The total, cpuacct.usage, is exact: the
// scheduler adds each run's time. The split is not: cpuacct.usage_all
// (cpuacct.usage_user and cpuacct.usage_sys before Linux 4.11) comes from
// timer ticks, so a task shorter than a tick reads 0 and 0. The sampled
// split is scaled to the total, as v2's cpu.stat does (see [splitCPU]).
func cpuacctUsage(d dirFD) (total, user, sys *int64, err error) {
	total, err = d.readInt("cpuacct.usage")
	if err != nil || total == nil {
		return nil, nil, nil, err
	}
	var u, sy int64
	all, err := d.read("cpuacct.usage_all")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		var ns [2]*int64
		for i, f := range []string{"cpuacct.usage_user", "cpuacct.usage_sys"} {
			if ns[i], err = d.readInt(f); err != nil {
				return nil, nil, nil, err
			}
		}
		if ns[0] == nil || ns[1] == nil {
			return usec(total), nil, nil, nil
		}
		u, sy = *ns[0], *ns[1]
	case err != nil:
		return nil, nil, nil, err
	default:
		if u, sy, err = parseUsageAll(all); err != nil {
			return nil, nil, nil, fmt.Errorf("cgroup: %s: %w", filepath.Join(d.path, "cpuacct.usage_all"), err)
		}
	}
	total = usec(total)
	u, sy = splitCPU(*total, u, sy)
	return total, &u, &sy, nil
}

// splitCPU divides the exact CPU time total between user and system in the
// proportion of the tick-sampled times user and sys, the kernel's rule for
// v2 (cputime_adjust): with no system samples, all of it is user time;
// with no user samples, all of it is system time.
func splitCPU(total, user, sys int64) (int64, int64) {
	switch {
	case sys <= 0:
		return total, 0
	case user <= 0:
		return 0, total
	}
	// total*sys/(user+sys) <= total, so the 128-bit quotient fits.
	hi, lo := bits.Mul64(uint64(total), uint64(sys))
	s, _ := bits.Div64(hi, lo, uint64(user+sys))
	return total - int64(s), int64(s)
}

// ownLimitV1 tells whether the OOM kills (oomKills, of the subtree) of the
// v1 memory group dir came from the group's own limit. v1 counts no "oom"
// event. memory.failcnt and memory.memsw.failcnt count charges refused at
// the group's limits, but recent kernels count failures of the memory
// counter only, and with memsw equal to the limit memsw is charged first
// and fails first, leaving both at 0. So a peak usage (memory or memsw)
// within a small margin of the group's lowest limit counts as well: the
// kernel charges up to the exact limit before it gives up.
func ownLimitV1(dir string, oomKills *int64) (bool, error) {
	if oomKills == nil || *oomKills == 0 {
		return false, nil
	}
	v := make(map[string]*int64)
	for _, f := range []string{
		"memory.failcnt", "memory.memsw.failcnt",
		"memory.limit_in_bytes", "memory.memsw.limit_in_bytes",
		"memory.max_usage_in_bytes", "memory.memsw.max_usage_in_bytes",
	} {
		n, err := readInt(dir, f)
		if err != nil {
			return false, err
		}
		if n != nil {
			v[f] = n
		}
	}
	get := func(f string) int64 {
		if n := v[f]; n != nil {
			return *n
		}
		return 0
	}
	if get("memory.failcnt") > 0 || get("memory.memsw.failcnt") > 0 {
		return true, nil
	}
	limit := get("memory.limit_in_bytes")
	if n := v["memory.memsw.limit_in_bytes"]; n != nil && *n < limit {
		limit = *n
	}
	peak := max(get("memory.max_usage_in_bytes"), get("memory.memsw.max_usage_in_bytes"))
	margin := min(limit/8, 1<<20)
	return limit > 0 && peak >= limit-margin, nil
}

// usec converts nanoseconds to microseconds; nil stays nil.
func usec(ns *int64) *int64 {
	if ns == nil {
		return nil
	}
	u := *ns / 1000
	return &u
}

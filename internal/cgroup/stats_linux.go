package cgroup

import (
	"fmt"
	"os"
)

// Stats reads the group's statistics (see [Stats] for the files). It is an
// error if the group does not exist; a value the kernel does not provide
// is nil.
func (g *Group) Stats() (Stats, error) {
	for _, d := range g.uniq() {
		if _, err := os.Stat(d); err != nil {
			return Stats{}, fmt.Errorf("cgroup: stats: %w", err)
		}
	}
	if g.h.ver == V2 {
		return g.statsV2()
	}
	return g.statsV1()
}

func (g *Group) statsV2() (Stats, error) {
	var s Stats
	d := g.dirs[0]
	cpu, err := readFlat(d, "cpu.stat")
	if err != nil {
		return s, err
	}
	s.CPUUsageUsec = lookup(cpu, "usage_usec")
	s.CPUUserUsec = lookup(cpu, "user_usec")
	s.CPUSystemUsec = lookup(cpu, "system_usec")
	s.CPUNrThrottled = lookup(cpu, "nr_throttled")
	s.CPUThrottledUsec = lookup(cpu, "throttled_usec")
	if s.MemoryPeakBytes, err = readInt(d, "memory.peak"); err != nil {
		return s, err
	}
	if s.PidsPeak, err = readInt(d, "pids.peak"); err != nil {
		return s, err
	}
	ev, err := readFlat(d, "memory.events")
	if err != nil {
		return s, err
	}
	s.OOMKills = lookup(ev, "oom_kill")
	local, err := readFlat(d, "memory.events.local")
	if err != nil {
		return s, err
	}
	if local == nil {
		local = ev // Linux < 5.7: memory.events is the best there is
	}
	s.OwnLimitOOM = local["oom"] > 0
	pe, err := readFlat(d, "pids.events")
	if err != nil {
		return s, err
	}
	s.PidsLimitHits = lookup(pe, "max")
	return s, nil
}

func (g *Group) statsV1() (Stats, error) {
	var s Stats
	var err error
	acct := g.dir("cpuacct")
	for _, f := range []struct {
		name string
		dst  **int64
	}{
		{"cpuacct.usage", &s.CPUUsageUsec},
		{"cpuacct.usage_user", &s.CPUUserUsec},
		{"cpuacct.usage_sys", &s.CPUSystemUsec},
	} {
		ns, err := readInt(acct, f.name)
		if err != nil {
			return s, err
		}
		*f.dst = usec(ns)
	}
	cpu, err := readFlat(g.dir("cpu"), "cpu.stat")
	if err != nil {
		return s, err
	}
	s.CPUNrThrottled = lookup(cpu, "nr_throttled")
	s.CPUThrottledUsec = usec(lookup(cpu, "throttled_time"))

	mem := g.dir("memory")
	if s.MemoryPeakBytes, err = readInt(mem, "memory.max_usage_in_bytes"); err != nil {
		return s, err
	}
	// v1 counts oom_kill only in the victim's own group: sum the subtree.
	dirs, err := subtree(mem)
	if err != nil {
		return s, err
	}
	for _, sd := range dirs {
		oc, err := readFlat(sd, "memory.oom_control")
		if err != nil {
			return s, err
		}
		if k := lookup(oc, "oom_kill"); k != nil {
			if s.OOMKills == nil {
				s.OOMKills = new(int64)
			}
			*s.OOMKills += *k
		}
	}
	s.OwnLimitOOM, err = ownLimitV1(mem, s.OOMKills)
	if err != nil {
		return s, err
	}

	pids := g.dir("pids")
	if s.PidsPeak, err = readInt(pids, "pids.peak"); err != nil {
		return s, err
	}
	pe, err := readFlat(pids, "pids.events")
	if err != nil {
		return s, err
	}
	s.PidsLimitHits = lookup(pe, "max")
	return s, nil
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

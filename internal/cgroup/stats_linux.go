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
	// v1 has no "oom" event: a failed charge at this group's own limit
	// (failcnt) together with an OOM kill in it is the closest sign.
	var fail int64
	for _, f := range []string{"memory.failcnt", "memory.memsw.failcnt"} {
		n, err := readInt(mem, f)
		if err != nil {
			return s, err
		}
		if n != nil {
			fail += *n
		}
	}
	s.OwnLimitOOM = fail > 0 && s.OOMKills != nil && *s.OOMKills > 0

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

// usec converts nanoseconds to microseconds; nil stays nil.
func usec(ns *int64) *int64 {
	if ns == nil {
		return nil
	}
	u := *ns / 1000
	return &u
}

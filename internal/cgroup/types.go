package cgroup

// Limits of one cgroup. A zero field means "not set": the kernel's value
// (normally "no limit", or the one set before) stays. Negative fields are
// rejected by [Group.SetLimits].
type Limits struct {
	// MemoryMax in bytes. Swap is limited to 0 with it: v1 sets
	// memory.memsw.limit_in_bytes to the same value when the file exists,
	// v2 sets memory.swap.max to 0 when the file exists.
	MemoryMax int64
	// PidsMax is the most processes and threads the group may hold.
	PidsMax int64
	// CPUQuota is the CPU time in microseconds the group may use per
	// CPUPeriod; 0 means unlimited.
	CPUQuota int64
	// CPUPeriod in microseconds; 0 means the kernel default, 100000. It is
	// written only together with CPUQuota or when set itself.
	CPUPeriod int64
}

// Stats of one group. A nil pointer means the kernel does not provide the
// value (never a made-up 0). The zero value reports nothing.
type Stats struct {
	// CPU time in microseconds: v2 cpu.stat usage_usec, user_usec,
	// system_usec; v1 cpuacct.usage, split between user and system in the
	// proportion of cpuacct.usage_all's tick samples, as v2 does. On
	// either, user plus system is the total, and a task shorter than a
	// tick counts as all user time.
	CPUUsageUsec, CPUUserUsec, CPUSystemUsec *int64
	// CFS bandwidth throttling: v1 cpu.stat nr_throttled and throttled_time;
	// v2 cpu.stat nr_throttled and throttled_usec.
	CPUNrThrottled, CPUThrottledUsec *int64
	// MemoryPeakBytes is the peak memory usage: v1 memory.max_usage_in_bytes,
	// v2 memory.peak (Linux 5.19).
	MemoryPeakBytes *int64
	// PidsPeak is pids.peak, on either version when the kernel has it.
	PidsPeak *int64
	// OOMKills counts the processes of the group and its descendants killed
	// by the OOM killer, whichever limit triggered it: v2 memory.events
	// oom_kill, v1 the sum of memory.oom_control oom_kill over the subtree.
	OOMKills *int64
	// OwnLimitOOM reports that this group's own memory limit (not an
	// ancestor's) was reached and the OOM killer ran for it. v2:
	// memory.events.local "oom" > 0 (memory.events "oom" on kernels without
	// the local file). v1, which counts no such event: OOMKills > 0 and
	// either memory.failcnt or memory.memsw.failcnt > 0, or the peak usage
	// (memory.max_usage_in_bytes or memory.memsw.max_usage_in_bytes)
	// within min(limit/8, 1MiB) of the group's limit; recent kernels leave
	// both failcnts at 0 when memsw equals the limit.
	OwnLimitOOM bool
	// PidsLimitHits is pids.events "max": forks refused by a pids limit
	// (counted in the forking group on older kernels, in the limiting group
	// and its ancestors on newer ones).
	PidsLimitHits *int64
}

package svc

// CgroupVersion returns the version of the cgroup hierarchy the sandboxes
// run in: 1 or 2.
func (s *Sandbox) CgroupVersion() int { return int(s.host.cg.Version()) }

//go:build !linux

package svc

// CgroupVersion returns 0: there are no cgroups off Linux.
func (s *Sandbox) CgroupVersion() int { return 0 }

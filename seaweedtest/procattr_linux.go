package seaweedtest

import "syscall"

// procAttr starts weed in a process group of its own, killed with the
// test process (SIGKILL at its death).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package seaweedtest

import "syscall"

// procAttr starts weed in a process group of its own.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

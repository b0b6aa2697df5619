// Command prog maps a file and locks it.
package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// msync flushes a mapping to its file (the syscall package has no Msync).
func msync(m []byte) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MSYNC, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), syscall.MS_SYNC)
	if errno != 0 {
		return errno
	}
	return nil
}

func main() {
	f, err := os.Create("data.bin")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	f.Truncate(1 << 16)
	m, err := syscall.Mmap(int(f.Fd()), 0, 1<<16, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		fmt.Println("mmap:", err)
		os.Exit(1)
	}
	copy(m, "mapped hello")
	copy(m[1<<15:], "middle")
	fmt.Println("msync", msync(m))
	fmt.Println("munmap", syscall.Munmap(m))
	f.Close()
	b, _ := os.ReadFile("data.bin")
	fmt.Println(len(b), string(b[:12]), string(b[1<<15:1<<15+6]))
	anon, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	fmt.Println("anonymous", len(anon), err)
	syscall.Munmap(anon)

	a, _ := os.OpenFile("lock", os.O_CREATE|os.O_RDWR, 0o644)
	c, _ := os.OpenFile("lock", os.O_RDWR, 0)
	fmt.Println("ex", syscall.Flock(int(a.Fd()), syscall.LOCK_EX))
	fmt.Println("conflict", syscall.Flock(int(c.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	syscall.Flock(int(a.Fd()), syscall.LOCK_UN)
	fmt.Println("shared", syscall.Flock(int(a.Fd()), syscall.LOCK_SH), syscall.Flock(int(c.Fd()), syscall.LOCK_SH|syscall.LOCK_NB))
	a.Close()
	c.Close()
}

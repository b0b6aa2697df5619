// Command prog reports facts about its process.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

func main() {
	fmt.Println("pid", os.Getpid() > 0, os.Getppid() >= 0, os.Getpid() != os.Getppid())
	fmt.Println("ids", os.Getuid() == os.Geteuid(), os.Getgid() == os.Getegid())
	groups, err := os.Getgroups()
	fmt.Println("groups", groups != nil || err == nil)
	wd, _ := os.Getwd()
	fmt.Println("wd", wd, os.Args)
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		fmt.Println(k, os.Getenv(k))
	}
	home, _ := os.UserHomeDir()
	fmt.Println("home", home, os.TempDir() != "")
	exe, err := os.Executable()
	fmt.Println("exe", filepath.Base(exe), err)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Println("rusage", ru.Maxrss > 0, ru.Utime.Sec >= 0)
	var rl syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	fmt.Println("nofile", rl.Cur > 0 && rl.Cur <= rl.Max)
	var uts syscall.Utsname
	syscall.Uname(&uts)
	fmt.Println("uname", uts.Sysname[0] == 'L', runtime.Version() != "")
	var st syscall.Statfs_t
	fmt.Println("statfs", syscall.Statfs(".", &st) == nil && st.Bsize > 0)
	fmt.Println("pagesize", os.Getpagesize())
	_, err = os.Hostname()
	fmt.Println("hostname", err == nil)
}

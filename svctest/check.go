package svctest

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RequireSandbox skips the test, saying why, when [Check] finds that the
// machine cannot run sandboxes.
func RequireSandbox(t testing.TB) {
	t.Helper()
	if err := Check(); err != nil {
		t.Skipf("svctest: this machine cannot run sandboxes: %v", err)
	}
}

var (
	checkOnce sync.Once
	checkErr  error
)

// Check reports why this machine cannot run sandboxes, or nil when it can
// as far as can be told without making one. It wants what the svc package
// documents under Requirements: Linux 5.12 or later, root, user
// namespaces, seccomp, and cgroup v1 with the memory, pids, cpu and
// cpuacct controllers or cgroup v2 with memory, pids and cpu. The answer
// is computed once.
func Check() error {
	checkOnce.Do(func() { checkErr = check("/") })
	return checkErr
}

// minKernel is the oldest kernel the library runs on (mount_setattr).
var minKernel = [2]int{5, 12}

// check looks at the machine whose /proc and /sys are under root.
func check(root string) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("needs Linux, this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root: sandboxes use namespaces, cgroups and mounts (euid %d)", os.Geteuid())
	}
	read := func(p string) (string, error) {
		b, err := os.ReadFile(root + p)
		return strings.TrimSpace(string(b)), err
	}
	rel, err := read("proc/sys/kernel/osrelease")
	if err != nil {
		return fmt.Errorf("kernel version: %w", err)
	}
	if v, ok := kernelVersion(rel); !ok || v[0] < minKernel[0] || (v[0] == minKernel[0] && v[1] < minKernel[1]) {
		return fmt.Errorf("needs Linux %d.%d or later (mount_setattr, openat2, close_range), this is %s", minKernel[0], minKernel[1], rel)
	}
	if n, err := read("proc/sys/user/max_user_namespaces"); err == nil && n == "0" {
		return errors.New("user namespaces are disabled (/proc/sys/user/max_user_namespaces is 0)")
	}
	if status, err := read("proc/self/status"); err == nil && !strings.Contains(status, "\nSeccomp:") {
		return errors.New("the kernel has no seccomp (no Seccomp: line in /proc/self/status)")
	}
	if ctrl, err := read("sys/fs/cgroup/cgroup.controllers"); err == nil {
		have := strings.Fields(ctrl)
		for _, c := range []string{"memory", "pids", "cpu"} {
			if !slices.Contains(have, c) {
				return fmt.Errorf("cgroup v2 without the %s controller (/sys/fs/cgroup/cgroup.controllers: %q)", c, ctrl)
			}
		}
		return nil
	}
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct"} {
		if fi, err := os.Stat(root + "sys/fs/cgroup/" + c); err != nil || !fi.IsDir() {
			return fmt.Errorf("no cgroup v2 and no cgroup v1 %s controller at /sys/fs/cgroup/%s", c, c)
		}
	}
	return nil
}

// kernelVersion parses the major and minor version of a kernel release
// such as "6.1.0-18-amd64".
func kernelVersion(rel string) ([2]int, bool) {
	f := strings.SplitN(rel, ".", 3)
	if len(f) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(f[0])
	minor := f[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	mi, err2 := strconv.Atoi(minor)
	return [2]int{major, mi}, err1 == nil && err2 == nil
}

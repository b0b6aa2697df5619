package svc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// v2GuestTests are the tests of this package that touch cgroups and
// limits; TestCgroupV2Guest runs them again in a cgroup v2 kernel.
var v2GuestTests = []string{
	"TestRunHello", "TestEndToEndNative", "TestCancel", "TestStepsShareWorkspace",
	"TestLimit", "TestCleanup", "TestDeadline", "TestStatsTaskAlone",
	// Network namespaces kept when read unchanged, on this kernel's
	// /proc/net.
	"TestIsolationNetworkFresh",
	// Shells reused across requests: tasks join v2 cgroups from them.
	"TestIsolationShellReuse",
	// Large files placed with the workspace's tmpfs switched to huge=
	// and back, on the guest's kernel.
	"TestFileStoreTaskReadsStoredFile",
}

// TestCgroupV2Guest is the cgroup v2 lane: on a host with cgroup v1 it
// boots a throw-away guest whose only hierarchy is cgroup v2
// (../shared/tools/run-in-v2vm.sh) and runs there the cgroup package's
// tests and this package's cgroup and limit tests. Test binaries are built
// on the host without -race (the guest is emulated).
func TestCgroupV2Guest(t *testing.T) {
	if os.Getenv("SVC_IN_V2_GUEST") != "" {
		t.Skip("already inside the v2 guest")
	}
	requireRoot(t)
	if testing.Short() {
		t.Skip("the v2 guest lane takes minutes; skipped with -short")
	}
	if isCgroup2("/sys/fs/cgroup") {
		t.Skip("the host itself has cgroup v2: the host lane covers v2")
	}
	script, err := filepath.Abs("../shared/tools/run-in-v2vm.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run the v2 lane: %v", err)
		}
		t.Skipf("no v2 guest tool: %v", err)
	}
	if _, err := os.Stat("/var/lib/v2vm/kernel"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the v2 guest is not set up (.ci/run runs %s --setup): %v", script, err)
		}
		t.Skipf("the v2 guest is not set up; run %s --setup", script)
	}

	// The guest shares the working directory (and mounts its own /tmp).
	dir, err := os.MkdirTemp(mustWd(t), ".v2lane-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	build := func(pkg, out string) string {
		bin := filepath.Join(dir, out)
		cmd := exec.Command("go", "test", "-c", "-o", bin, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
		return bin
	}
	svcBin := build(".", "svc.test")
	cgBin := build("./internal/cgroup", "cgroup.test")

	script2 := strings.Join([]string{
		"set -e",
		"cat /proc/self/mountinfo | grep -q ' /sys/fs/cgroup .* - cgroup2 '",
		"cd " + mustWd(t) + "/internal/cgroup && " + cgBin + " -test.count=1 -test.v",
		"cd " + mustWd(t) + " && " + svcBin + " -test.count=1 -test.v -test.timeout=12m -test.run '^(" + strings.Join(v2GuestTests, "|") + ")'",
	}, "\n")
	start := time.Now()
	cmd := exec.Command(script, "sh", "-c", script2)
	cmd.Env = append(os.Environ(), "SVC_IN_V2_GUEST=1", "V2VM_TIMEOUT=900")
	out, err := cmd.CombinedOutput()
	t.Logf("v2 guest lane (%v):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("v2 guest lane failed: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP") && !strings.Contains(string(out), "--- PASS") {
		t.Fatal("v2 guest lane ran no test")
	}
}

func isCgroup2(dir string) bool {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && f[4] == dir && strings.Contains(line, " - cgroup2 ") {
			return true
		}
	}
	return false
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

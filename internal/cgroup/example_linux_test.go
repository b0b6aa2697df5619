package cgroup_test

import (
	"log"
	"os/exec"

	"github.com/svc-sandbox/svc/internal/cgroup"
)

// A service group, one task group below it with limits, a process in it,
// its stats, and the cleanup. Compile-only: it needs root.
func Example() {
	h, err := cgroup.Detect()
	if err != nil {
		log.Fatal(err)
	}
	svc, err := h.Service("", "svc-example")
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Destroy()
	task, err := svc.Child("task-0")
	if err != nil {
		log.Fatal(err)
	}
	err = task.SetLimits(cgroup.Limits{MemoryMax: 256 << 20, PidsMax: 64, CPUQuota: 100000})
	if err != nil {
		log.Fatal(err)
	}
	// On v2, task.OpenFD with SysProcAttr.UseCgroupFD starts the process
	// inside; AddProc works on both versions.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	if err := task.AddProc(cmd.Process.Pid); err != nil {
		log.Print(err) // it may have exited already
	}
	cmd.Wait()
	st, err := task.Stats()
	if err != nil {
		log.Fatal(err)
	}
	if st.OwnLimitOOM {
		log.Print("memory limit exceeded")
	}
}

package svc

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// TestSetupHint checks what setup errors say a container lacks, from the
// errors as they reach withHint (deploy/container_linux_test.go shows
// them in real containers).
func TestSetupHint(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // "" for no hint
	}{
		{fmt.Errorf("remove what a previous instance left: cgroup: mkdir: %w", &fs.PathError{Op: "mkdir", Path: "/sys/fs/cgroup/memory/svc-1", Err: syscall.EROFS}),
			"the cgroup filesystem is read-only here"},
		{errors.New(`cgroup: controller memory not available in /sys/fs/cgroup (cgroup.controllers: "")`),
			"controllers must be delegated"},
		{fmt.Errorf("start check: bring lo up: %w", syscall.EPERM), "CAP_NET_ADMIN"},
		{errors.New("start check: sandbox init: mount proc: Operation not permitted"), "unmask=/proc/*"},
		{fmt.Errorf("mount the run directory: %w", syscall.EPERM), "CAP_SYS_ADMIN"},
		{fmt.Errorf("start check: new network namespace: %w", syscall.EPERM), "seccomp or AppArmor profile"},
		{fmt.Errorf("cgroup: write memory.max: %w", syscall.EACCES), "svc's cgroup is not writable"},
		// Not a container's doing: no hint.
		{fmt.Errorf("state dir: %w", syscall.ENOSPC), ""},
		{errors.New("start check: a task running true ended infrastructure_failure"), ""},
	} {
		got := withHint(tc.err).Error()
		hint := strings.TrimPrefix(got, tc.err.Error())
		switch {
		case tc.want == "" && hint != "":
			t.Errorf("%v: hint %q, want none", tc.err, hint)
		case tc.want != "" && !strings.Contains(hint, tc.want):
			t.Errorf("%v: hint %q, want one saying %q", tc.err, hint, tc.want)
		}
		if !errors.Is(withHint(tc.err), tc.err) {
			t.Errorf("%v: the hint hides the cause", tc.err)
		}
	}
	if withHint(nil) != nil {
		t.Error("withHint(nil) is not nil")
	}
}

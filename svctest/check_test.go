package svctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKernelVersion(t *testing.T) {
	for rel, want := range map[string][2]int{
		"6.1.0-18-amd64": {6, 1}, "5.12": {5, 12}, "6.18.44-fc-v669": {6, 18}, "5.15.0-1051-azure": {5, 15}, "4.19rc1": {4, 19},
	} {
		if got, ok := kernelVersion(rel); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", rel, got, ok, want)
		}
	}
	for _, rel := range []string{"", "6", "x.1", "6.x"} {
		if v, ok := kernelVersion(rel); ok {
			t.Errorf("%q: %v accepted", rel, v)
		}
	}
}

// TestCheckReasons runs check on made-up machines: each lacks one thing
// and check names it.
func TestCheckReasons(t *testing.T) {
	if os.Geteuid() != 0 {
		// check asks for root before it looks at the machine.
		if err := check(t.TempDir() + "/"); err == nil || !strings.Contains(err.Error(), "root") {
			t.Errorf("not root: %v", err)
		}
		return
	}
	type machine map[string]string // path -> content; "" makes a directory
	good := func(extra machine) machine {
		m := machine{
			"proc/sys/kernel/osrelease":         "6.1.0-18-amd64\n",
			"proc/sys/user/max_user_namespaces": "63482\n",
			"proc/self/status":                  "Name:\tx\nSeccomp:\t0\nSeccomp_filters:\t0\n",
			"sys/fs/cgroup/cgroup.controllers":  "cpuset cpu io memory pids\n",
		}
		for k, v := range extra {
			if v == "-" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	v1 := good(machine{"sys/fs/cgroup/cgroup.controllers": "-", "sys/fs/cgroup/memory": "", "sys/fs/cgroup/pids": "",
		"sys/fs/cgroup/cpu": "", "sys/fs/cgroup/cpuacct": ""})
	for name, c := range map[string]struct {
		m    machine
		want string // "" for no error
	}{
		"v2":              {good(nil), ""},
		"v1":              {v1, ""},
		"old kernel":      {good(machine{"proc/sys/kernel/osrelease": "5.10.0-28-amd64"}), "needs Linux 5.12"},
		"no userns":       {good(machine{"proc/sys/user/max_user_namespaces": "0"}), "user namespaces"},
		"no seccomp":      {good(machine{"proc/self/status": "Name:\tx\n"}), "seccomp"},
		"v2 without pids": {good(machine{"sys/fs/cgroup/cgroup.controllers": "cpu memory\n"}), "pids controller"},
		"v1 without cpuacct": {good(machine{"sys/fs/cgroup/cgroup.controllers": "-", "sys/fs/cgroup/memory": "",
			"sys/fs/cgroup/pids": "", "sys/fs/cgroup/cpu": ""}), "cpuacct"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range c.m {
				p = filepath.Join(root, p)
				if content == "" {
					os.MkdirAll(p, 0o755)
					continue
				}
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(content), 0o644)
			}
			err := check(root + "/")
			switch {
			case c.want == "" && err != nil:
				t.Errorf("unexpected: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

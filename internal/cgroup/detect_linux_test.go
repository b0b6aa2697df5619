package cgroup

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
)

// detectFixture runs detect on testdata mountinfo and /proc/self/cgroup files.
func detectFixture(t *testing.T, mounts, cg string) (*Hierarchy, error) {
	t.Helper()
	ms, err := mountinfo.GetMountsFromReader(open(t, mounts), cgroupMounts)
	if err != nil {
		t.Fatal(err)
	}
	return detect(ms, open(t, cg))
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		mounts, cgroup string
		ver            Version
		ctrls          []ctrl
		// a group Open("/a/b") has these directories
		dirs []string
	}{
		{"v1/mountinfo.hybrid", "v1/cgroup.hybrid", V1, []ctrl{
			{"memory", "/sys/fs/cgroup/memory", "/", "/process_api/bf0c42ced6d315092c48ffbc8871f3b9"},
			{"pids", "/sys/fs/cgroup/pids", "/", "/"},
			{"cpu", "/sys/fs/cgroup/cpu", "/", "/"},
			{"cpuacct", "/sys/fs/cgroup/cpuacct", "/", "/"},
		}, []string{
			"/sys/fs/cgroup/memory/a/b", "/sys/fs/cgroup/pids/a/b",
			"/sys/fs/cgroup/cpu/a/b", "/sys/fs/cgroup/cpuacct/a/b",
		}},
		{"v1/mountinfo.systemd", "v1/cgroup.systemd", V1, []ctrl{
			{"memory", "/sys/fs/cgroup/memory", "/", "/system.slice/judge.service"},
			{"pids", "/sys/fs/cgroup/pids", "/", "/system.slice/judge.service"},
			{"cpu", "/sys/fs/cgroup/cpu,cpuacct", "/", "/system.slice/judge.service"},
			{"cpuacct", "/sys/fs/cgroup/cpu,cpuacct", "/", "/system.slice/judge.service"},
		}, []string{
			"/sys/fs/cgroup/memory/a/b", "/sys/fs/cgroup/pids/a/b", "/sys/fs/cgroup/cpu,cpuacct/a/b",
		}},
		{"v1/mountinfo.docker", "v1/cgroup.docker", V1, []ctrl{
			{"memory", "/sys/fs/cgroup/memory", "/docker/4f1a", "/docker/4f1a"},
			{"pids", "/sys/fs/cgroup/pids", "/docker/4f1a", "/docker/4f1a"},
			{"cpu", "/sys/fs/cgroup/cpu,cpuacct", "/docker/4f1a", "/docker/4f1a"},
			{"cpuacct", "/sys/fs/cgroup/cpu,cpuacct", "/docker/4f1a", "/docker/4f1a"},
		}, []string{
			"/sys/fs/cgroup/memory/a/b", "/sys/fs/cgroup/pids/a/b", "/sys/fs/cgroup/cpu,cpuacct/a/b",
		}},
		{"v2/mountinfo", "v2/cgroup", V2, []ctrl{
			{"", "/sys/fs/cgroup", "/", "/system.slice/judge.service"},
		}, []string{"/sys/fs/cgroup/a/b"}},
	} {
		t.Run(tc.mounts, func(t *testing.T) {
			h, err := detectFixture(t, tc.mounts, tc.cgroup)
			if err != nil {
				t.Fatal(err)
			}
			if h.Version() != tc.ver {
				t.Errorf("Version() = %d, want %d", h.Version(), tc.ver)
			}
			if !slices.Equal(h.ctrls, tc.ctrls) {
				t.Errorf("ctrls = %+v\nwant %+v", h.ctrls, tc.ctrls)
			}
			if h.Own() != tc.ctrls[0].own {
				t.Errorf("Own() = %q, want %q", h.Own(), tc.ctrls[0].own)
			}
			g := &Group{h: h}
			for _, c := range h.ctrls {
				g.dirs = append(g.dirs, c.dir("/a/b"))
			}
			if got := g.uniq(); !slices.Equal(got, tc.dirs) {
				t.Errorf("dirs of /a/b = %q, want %q", got, tc.dirs)
			}
		})
	}
}

func TestDetectDockerPaths(t *testing.T) {
	h, err := detectFixture(t, "v1/mountinfo.docker", "v1/cgroup.docker")
	if err != nil {
		t.Fatal(err)
	}
	// The container's own cgroup is the mount's root directory.
	for rel, want := range map[string]string{
		"/docker/4f1a":       "/sys/fs/cgroup/memory",
		"/docker/4f1a/svc-1": "/sys/fs/cgroup/memory/svc-1",
		"/docker/4f1ab":      "/sys/fs/cgroup/memory/docker/4f1ab",
	} {
		if got := h.ctrls[0].dir(rel); got != want {
			t.Errorf("dir(%q) = %q, want %q", rel, got, want)
		}
	}
}

func TestDetectMissingController(t *testing.T) {
	_, err := detectFixture(t, "v1/mountinfo.nopids", "v1/cgroup.systemd")
	if err == nil || !strings.Contains(err.Error(), "pids") {
		t.Errorf("err = %v, want one naming pids", err)
	}
}

func TestDetectV2WithoutUnifiedLine(t *testing.T) {
	ms, err := mountinfo.GetMountsFromReader(open(t, "v2/mountinfo"), cgroupMounts)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := detect(ms, strings.NewReader("4:memory:/\n")); err == nil {
		t.Errorf("got %+v, want error", h)
	}
}

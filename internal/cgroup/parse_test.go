package cgroup

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestParseFlatKeyed(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[string]int64
	}{
		{"v1/cpu.stat", map[string]int64{
			"nr_periods": 412, "nr_throttled": 37, "throttled_time": 1843256001,
			"nr_bursts": 0, "burst_time": 0,
		}},
		{"v1/memory.oom_control", map[string]int64{"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 2}},
		{"v1/pids.events", map[string]int64{"max": 14}},
		{"v2/cpu.stat", map[string]int64{
			"usage_usec": 2483920, "user_usec": 1730112, "system_usec": 753808,
			"core_sched.force_idle_usec": 0, "nr_periods": 205, "nr_throttled": 31,
			"throttled_usec": 918222, "nr_bursts": 0, "burst_usec": 0,
		}},
		{"v2/memory.events", map[string]int64{
			"low": 0, "high": 0, "max": 913, "oom": 3, "oom_kill": 3, "oom_group_kill": 0,
		}},
		{"v2/memory.events.local", map[string]int64{
			"low": 0, "high": 0, "max": 0, "oom": 0, "oom_kill": 1, "oom_group_kill": 0,
		}},
		{"v2/pids.events", map[string]int64{"max": 7}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseFlatKeyed(open(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseFlatKeyedEmpty(t *testing.T) {
	got, err := ParseFlatKeyed(strings.NewReader("\n\n"))
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("got %v, %v; want empty map, nil", got, err)
	}
}

func TestParseFlatKeyedBad(t *testing.T) {
	for _, in := range []string{
		"usage_usec\n",
		"usage_usec x\n",
		"max 1\nmax max\n",
		"oom 99999999999999999999\n",
	} {
		if got, err := ParseFlatKeyed(strings.NewReader(in)); err == nil {
			t.Errorf("%q: got %v, want error", in, got)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	for _, tc := range []struct {
		file string
		v1   map[string]string
		v2   string
	}{
		{"v1/cgroup.hybrid", map[string]string{
			"name=systemd": "/", "pids": "/", "blkio": "/", "freezer": "/", "devices": "/",
			"memory": "/process_api/bf0c42ced6d315092c48ffbc8871f3b9",
			"cpuset": "/", "cpuacct": "/", "cpu": "/",
		}, "/"},
		{"v1/cgroup.systemd", map[string]string{
			"freezer": "/", "pids": "/system.slice/judge.service",
			"memory": "/system.slice/judge.service", "net_cls": "/", "net_prio": "/",
			"cpu": "/system.slice/judge.service", "cpuacct": "/system.slice/judge.service",
			"name=systemd": "/system.slice/judge.service",
		}, "/system.slice/judge.service"},
		{"v1/cgroup.docker", map[string]string{
			"pids": "/docker/4f1a", "memory": "/docker/4f1a", "cpu": "/docker/4f1a",
			"cpuacct": "/docker/4f1a", "name=systemd": "/docker/4f1a",
		}, "/system.slice/containerd.service"},
		{"v2/cgroup", map[string]string{}, "/system.slice/judge.service"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			v1, v2, err := ParseProcCgroup(open(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(v1, tc.v1) {
				t.Errorf("v1 = %v, want %v", v1, tc.v1)
			}
			if v2 != tc.v2 {
				t.Errorf("v2 = %q, want %q", v2, tc.v2)
			}
		})
	}
}

func TestParseProcCgroupColonInPath(t *testing.T) {
	v1, v2, err := ParseProcCgroup(strings.NewReader("3:memory:/a:b\n0::/x:y\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v1["memory"] != "/a:b" || v2 != "/x:y" {
		t.Errorf("got %v, %q", v1, v2)
	}
}

func TestParseProcCgroupBad(t *testing.T) {
	for _, in := range []string{"memory:/\n", "4:memory:relative\n", ":memory:/\n"} {
		if _, _, err := ParseProcCgroup(strings.NewReader(in)); err == nil {
			t.Errorf("%q: want error", in)
		}
	}
}

func TestParseUsageAll(t *testing.T) {
	user, system, err := ParseUsageAll(open(t, "v1/cpuacct.usage_all"))
	if err != nil || user != 1730112000+120000 || system != 753808000+880000 {
		t.Errorf("got %d, %d, %v; want the sums of the user and system columns", user, system, err)
	}
	for _, bad := range []string{"", "cpu user\n0 1\n", "cpu user system\n0 1\n", "cpu user system\n0 x 2\n"} {
		if _, _, err := ParseUsageAll(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Package deploy_test runs svc as operators deploy it: the image of
// deploy/Dockerfile, built by deploy/build-image.sh, in a container of
// rootful podman (runc), with the container's own cgroup namespace and
// with the host's, on this host's cgroup hierarchy; TestContainerV2Guest
// runs the same tests in the cgroup v2 guest of
// ../shared/tools/run-in-v2vm.sh.
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
)

// Environment of the tests:
//
//	SVC_TEST_IMAGE    an image already built (the v2 guest loads one);
//	                  default: deploy/build-image.sh slim builds it
//	SVC_PODMAN_FLAGS  global podman flags, space-separated (the guest's
//	                  storage: --storage-driver vfs --root ...)
var podmanFlags = append([]string{"--runtime", "runc"}, strings.Fields(os.Getenv("SVC_PODMAN_FLAGS"))...)

// runFlags are podman run's flags every container gets: the host's
// network (the test talks to 127.0.0.1), and ulimits within this
// machine kind's hard limits, which podman's defaults exceed.
var runFlags = []string{"--network", "host", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"}

// privileged is the short way to give svc what it needs.
var privileged = []string{"--privileged"}

// narrow are the narrowest privileges measured to work (TestContainerPrivileges):
// the capabilities by name, the runtime's seccomp profile as it is (it
// allows namespaces to CAP_SYS_ADMIN), /proc unmasked, and a writable
// cgroup filesystem: on cgroup v1 podman mounts it read-only, so the
// host's is bound with the host's cgroup namespace.
var narrow = []string{
	"--cap-drop", "ALL",
	"--cap-add", "SYS_ADMIN,NET_ADMIN,SETUID,SETGID,SETPCAP,CHOWN,FOWNER,DAC_OVERRIDE,KILL",
	"--security-opt", "unmask=/proc/*",
	"--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("containers of rootful podman need root")
	}
}

// requirePodman skips without podman and runc, or fails in CI, which
// installs them.
func requirePodman(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if testing.Short() {
		t.Skip("building and running an image takes minutes; skipped with -short")
	}
	for _, cmd := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(cmd); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI installs podman and runc (.ci/run): %v", err)
			}
			t.Skipf("no %s (apt-get install podman runc): %v", cmd, err)
		}
	}
}

func podman(args ...string) *exec.Cmd {
	return exec.Command("podman", append(append([]string(nil), podmanFlags...), args...)...)
}

// run runs podman with args and returns its standard output.
func run(t *testing.T, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := podman(args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

var (
	imageOnce sync.Once
	imageName string
	imageErr  error
)

// image returns the slim image: SVC_TEST_IMAGE, or built by
// deploy/build-image.sh (podman's layer cache makes a rebuild of an
// unchanged tree quick).
func image(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() {
		if imageName = os.Getenv("SVC_TEST_IMAGE"); imageName != "" {
			return
		}
		start := time.Now()
		cmd := exec.Command("./build-image.sh", "slim", "localhost/svc:test")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			imageErr = fmt.Errorf("build-image.sh slim: %v\n%s", err, stderr.Bytes())
			return
		}
		imageName = strings.TrimSpace(string(out))
		t.Logf("built %s in %v", imageName, time.Since(start).Round(time.Second))
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageName
}

// A container is one svc serve in a podman container.
type container struct {
	name    string
	url     string
	key     string
	uidBase int
	c       *client.Client
}

// uidBases hands each container a range of host ids of its own.
var uidBases = struct {
	sync.Mutex
	next int
}{next: 310_000_000 + os.Getpid()%1000*65536}

func nextUIDBase() int {
	uidBases.Lock()
	defer uidBases.Unlock()
	uidBases.next += 4096
	return uidBases.next
}

// freePort returns a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start starts svc serve in a container with flags and waits until it
// serves, or until it has exited: the second result is then its log.
func start(t *testing.T, img string, flags ...string) (*container, string) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	c := &container{
		name:    "svc-test-" + hex.EncodeToString(b),
		key:     "key-" + hex.EncodeToString(b),
		uidBase: nextUIDBase(),
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c.url = "http://" + addr
	args := append([]string{"run", "-d", "--name", c.name}, runFlags...)
	args = append(args, flags...)
	args = append(args, "-e", "LISTEN_ADDR="+addr, "-e", "API_KEYS="+c.key,
		"-e", "SANDBOX_UID_BASE="+strconv.Itoa(c.uidBase),
		// Room for gcc in the emulated guest; each test lowers them.
		"-e", "WALL_TIMEOUT_MS=300000", "-e", "CPU_TIME_LIMIT_MS=120000", "-e", "OVERALL_TIMEOUT_MS=600000", img)
	began := time.Now()
	run(t, args...)
	t.Cleanup(func() {
		if out, err := podman("rm", "-f", "-t", "0", c.name).CombinedOutput(); err != nil {
			t.Errorf("podman rm %s: %v\n%s", c.name, err, out)
		}
	})
	// Starting takes seconds in the emulated guest.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(c.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("%s: serving %v after podman run", c.name, time.Since(began).Round(time.Millisecond))
				break
			}
		}
		if state := run(t, "inspect", "-f", "{{.State.Status}}", c.name); state == "exited" {
			return nil, logs(t, c.name)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not serving after 3 minutes:\n%s", c.name, logs(t, c.name))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var err error
	if c.c, err = client.New(client.Config{URL: c.url, Key: c.key}); err != nil {
		t.Fatal(err)
	}
	return c, ""
}

func logs(t *testing.T, name string) string {
	t.Helper()
	out, _ := podman("logs", name).CombinedOutput()
	return string(out)
}

// The programs of the limit tests, compiled in the container's sandbox.
const (
	helloC = `#include <stdio.h>
int main(void) { puts("hello from the container"); return 0; }
`
	allocC = `#include <stdlib.h>
#include <string.h>
int main(void) {
	for (;;) { char *p = malloc(1 << 20); if (!p) return 3; memset(p, 1, 1 << 20); }
}
`
	forkC = `#include <unistd.h>
int main(void) { for (;;) if (fork() < 0) return 1; }
`
	spinC = `int main(void) { for (volatile unsigned long i = 0;; i++) ; }
`
)

// compile is a step that builds the limit tests' programs.
func compile() svc.Step {
	var tasks []svc.Task
	for name, src := range map[string]string{"hello": helloC, "alloc": allocC, "fork": forkC, "spin": spinC} {
		tasks = append(tasks, svc.Task{
			Cmd: "gcc", Args: []string{"-O1", "-o", name, name + ".c"},
			Files:          map[string]svc.File{name + ".c": {Content: src}},
			SandboxProfile: svc.ProfileCompileV2,
		})
	}
	return svc.Parallel(tasks...)
}

// checkServes runs, through c, a compile-and-run request, then each of
// the memory, pids, CPU-time and wall limits with its outcome.
func checkServes(t *testing.T, c *container) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	second := time.Second
	steps := []svc.Step{
		compile(),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
		svc.Single(svc.Task{Cmd: "./alloc", SandboxProfile: svc.ProfileNativeV2,
			Limits: svc.TaskLimits{MemoryMax: 64 * svc.MiB, WallTimeout: 60 * second}}),
		// Every process forks until fork fails, then exits.
		svc.Single(svc.Task{Cmd: "./fork", SandboxProfile: svc.ProfileCompileV2,
			Limits: svc.TaskLimits{PidsMax: 16, WallTimeout: 60 * second}}),
		svc.Single(svc.Task{Cmd: "./spin", SandboxProfile: svc.ProfileNativeV2,
			Limits: svc.TaskLimits{CPUTimeLimit: 500 * time.Millisecond, WallTimeout: 60 * second}}),
		svc.Single(svc.Task{Cmd: "sleep", Args: []string{"60"},
			Limits: svc.TaskLimits{WallTimeout: 1500 * time.Millisecond}}),
	}
	resp, err := c.c.Execute(ctx, &svc.Request{Steps: steps})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	for i, sr := range resp.Results[0].Results {
		if sr.Outcome != svc.OutcomeExited || sr.ExitCode != 0 {
			t.Fatalf("compile task %d: %s, exit %d: %s", i, sr.Outcome, sr.ExitCode, sr.Stderr)
		}
	}
	want := []struct {
		outcome svc.Outcome
		stdout  string
	}{
		{svc.OutcomeExited, "hello from the container\n"},
		{svc.OutcomeOutOfMemory, ""},
		{svc.OutcomePidsLimit, ""},
		{svc.OutcomeCPUTimeExceeded, ""},
		{svc.OutcomeTimedOut, ""},
	}
	for i, w := range want {
		r := resp.Results[i+1].Results[0]
		if r.Outcome != w.outcome || r.Stdout != w.stdout {
			t.Errorf("step %d (%s): outcome %s, stdout %q; want %s, %q (stderr %q, error %q)",
				i+1, steps[i+1].Tasks[0].Cmd, r.Outcome, r.Stdout, w.outcome, w.stdout, r.Stderr, r.Error)
		}
	}
	if r := resp.Results[3].Results[0]; r.Stats.PidsPeak == nil || *r.Stats.PidsPeak > 16 {
		t.Errorf("fork bomb: pids_peak %v, want at most 16", r.Stats.PidsPeak)
	}
	if r := resp.Results[4].Results[0]; r.Stats.CPUUsageUsec == nil || *r.Stats.CPUUsageUsec < 500_000 || *r.Stats.CPUUsageUsec > 3_000_000 {
		t.Errorf("spin: cpu_usage_usec %v, want 0.5 s to a few seconds", r.Stats.CPUUsageUsec)
	}
}

// hostIDProcs returns the host's processes whose real uid is in the
// container's range of sandbox ids.
func hostIDProcs(t *testing.T, c *container) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // gone
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 1 && f[0] == "Uid:" {
				if uid, _ := strconv.Atoi(f[1]); uid >= c.uidBase && uid < c.uidBase+4096 {
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// cgroupDirs returns the host directories of pid's cgroups.
func cgroupDirs(t *testing.T, pid string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat("/sys/fs/cgroup/cgroup.controllers")
	v2 := err == nil
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case v2:
			if f[0] == "0" && f[1] == "" {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", f[2]))
			}
		case f[1] == "memory" || f[1] == "pids" || f[1] == "cpu,cpuacct":
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", f[1], f[2]))
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("no cgroup of pid %s: %s", pid, b)
	}
	return dirs
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkStopLeavesNothing stops c while a task runs, and checks that no
// process of its sandboxes, no cgroup of the container and no mount of
// it is left.
func checkStopLeavesNothing(t *testing.T, c *container) {
	t.Helper()
	pid := run(t, "inspect", "-f", "{{.State.Pid}}", c.name)
	dirs := cgroupDirs(t, pid)
	for i, d := range dirs {
		// On v2 svc moved itself into a leaf of the container's cgroup.
		if filepath.Base(d) == "supervisor" {
			dirs[i] = filepath.Dir(d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.c.Execute(ctx, &svc.Request{Steps: []svc.Step{
			svc.Single(svc.Task{Cmd: "sleep", Args: []string{"300"}}),
		}})
		done <- err
	}()
	waitFor(t, "the sleep task runs as a sandbox id", func() bool { return len(hostIDProcs(t, c)) > 0 })
	// svc's own cgroups are there, below the container's.
	var below []string
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.IsDir() && strings.HasPrefix(e.Name(), "svc-") {
				below = append(below, filepath.Join(d, e.Name()))
			}
		}
	}
	if len(below) == 0 {
		t.Errorf("no svc-* cgroup below the container's %v", dirs)
	}
	run(t, "stop", "-t", "20", c.name)
	waitFor(t, "no process of the container's sandboxes", func() bool { return len(hostIDProcs(t, c)) == 0 })
	waitFor(t, "the container's cgroups removed", func() bool {
		for _, d := range append(dirs, below...) {
			if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
				return false
			}
		}
		return true
	})
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	id := run(t, "inspect", "-f", "{{.Id}}", c.name)
	if strings.Contains(string(mi), id) {
		t.Errorf("a mount of container %s is left:\n%s", id, mi)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("the request of the stopped container succeeded")
		}
	case <-time.After(time.Minute):
		t.Error("the request of the stopped container has no answer after a minute")
	}
}

// TestContainer runs svc in the image with --privileged, with the
// container's own cgroup namespace and with the host's: it starts, serves
// a compile-and-run request and every limit with its exact outcome, and
// leaves nothing behind when stopped in the middle of a task.
func TestContainer(t *testing.T) {
	requirePodman(t)
	img := image(t)
	for _, ns := range []string{"private", "host"} {
		t.Run("cgroupns="+ns, func(t *testing.T) {
			c, log := start(t, img, append(privileged, "--cgroupns", ns)...)
			if c == nil {
				t.Fatalf("svc exited at start:\n%s", log)
			}
			// The image's HEALTHCHECK (svc health) passes while it serves.
			run(t, "healthcheck", "run", c.name)
			checkServes(t, c)
			checkStopLeavesNothing(t, c)
		})
	}
}

// TestContainerPrivileges measures the privileges svc needs: with the
// narrow set it serves every limit; without each item of it, or of
// --privileged, it refuses to start and its last log line names what is
// missing and how to give it.
func TestContainerPrivileges(t *testing.T) {
	requirePodman(t)
	img := image(t)
	t.Run("narrow", func(t *testing.T) {
		c, log := start(t, img, narrow...)
		if c == nil {
			t.Fatalf("svc exited at start:\n%s", log)
		}
		checkServes(t, c)
		checkStopLeavesNothing(t, c)
	})
	without := func(drop string) []string {
		var caps []string
		for _, c := range strings.Split(narrow[3], ",") {
			if c != drop {
				caps = append(caps, c)
			}
		}
		flags := append([]string(nil), narrow...)
		flags[3] = strings.Join(caps, ",")
		return flags
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  string // in the message svc exits with
	}{
		{"default", nil, "cgroup filesystem is read-only"},
		{"no SYS_ADMIN", without("SYS_ADMIN"), "--privileged"},
		{"no NET_ADMIN", without("NET_ADMIN"), "CAP_NET_ADMIN"},
		{"no SETUID", without("SETUID"), "--privileged"},
		{"no CHOWN", without("CHOWN"), "--privileged"},
		{"masked /proc", dropFlag(narrow, "--security-opt", "unmask=/proc/*"), "unmask=/proc/*"},
		{"read-only cgroups", dropFlag(dropFlag(narrow, "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"), "--cgroupns", "host"), "cgroup filesystem is read-only"},
		{"seccomp refusing namespaces", append(append([]string(nil), narrow...), "--security-opt", "seccomp="+noNamespaces(t)), "seccomp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, log := start(t, img, tc.flags...)
			if c != nil {
				t.Fatalf("svc started with %v", tc.flags)
			}
			last := lastLine(log)
			if !strings.HasPrefix(last, "svc: sandbox: setup failed") || !strings.Contains(last, tc.want) {
				t.Errorf("svc exited with %q, want a setup failure that says %q", last, tc.want)
			}
			t.Logf("%s: %s", tc.name, last)
		})
	}
}

// dropFlag returns flags without the flag name followed by value.
func dropFlag(flags []string, name, value string) []string {
	var out []string
	for i := 0; i < len(flags); i++ {
		if flags[i] == name && i+1 < len(flags) && flags[i+1] == value {
			i++
			continue
		}
		out = append(out, flags[i])
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// noNamespaces writes a seccomp profile that refuses namespaces as a
// runtime's own profile does for a container without CAP_SYS_ADMIN:
// unshare and setns with EPERM, clone with any namespace flag with EPERM,
// clone3 with ENOSYS (so that callers fall back to clone), every other
// call allowed.
func noNamespaces(t *testing.T) string {
	t.Helper()
	const newNS = 0x7E020000 // CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
	rules := []string{
		`{"names": ["unshare", "setns"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}`,
		`{"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}`,
	}
	for bit := uint64(1); bit < 1<<32; bit <<= 1 {
		if newNS&bit != 0 {
			rules = append(rules, fmt.Sprintf(`{"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, `+
				`"args": [{"index": 0, "value": %d, "valueTwo": %d, "op": "SCMP_CMP_MASKED_EQ"}]}`, bit, bit))
		}
	}
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"], "syscalls": [
  ` + strings.Join(rules, ",\n  ") + "\n]}\n"
	p := filepath.Join(t.TempDir(), "no-namespaces.json")
	if err := os.WriteFile(p, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestContainerV2Guest is the container tests on cgroup v2: on a host
// with cgroup v1 it saves the image, boots the cgroup v2 guest of
// ../shared/tools/run-in-v2vm.sh, loads the image there into podman's
// vfs storage under the guest's /tmp, and runs TestContainer and
// TestContainerPrivileges in the guest.
// The guest is emulated: it takes minutes.
func TestContainerV2Guest(t *testing.T) {
	if os.Getenv("SVC_IN_V2_GUEST") != "" {
		t.Skip("already inside the v2 guest")
	}
	requirePodman(t)
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(b), " /sys/fs/cgroup rw") &&
		strings.Contains(string(b), " - cgroup2 ") && !strings.Contains(string(b), " - cgroup ") {
		t.Skip("the host itself has cgroup v2: TestContainer covers v2")
	}
	script, err := filepath.Abs("../../shared/tools/run-in-v2vm.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/var/lib/v2vm/kernel"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the v2 guest is not set up (.ci/run runs %s --setup): %v", script, err)
		}
		t.Skipf("the v2 guest is not set up; run %s --setup", script)
	}
	img := image(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// The guest shares the working directory.
	dir, err := os.MkdirTemp(wd, ".v2lane-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	archive := filepath.Join(dir, "image.tar")
	// docker-archive: an OCI archive drops the HEALTHCHECK.
	run(t, "save", "--format", "docker-archive", "-o", archive, img)
	bin := filepath.Join(dir, "deploy.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the test binary: %v\n%s", err, out)
	}
	storage := "--storage-driver vfs --root /tmp/podman-root --runroot /tmp/podman-run"
	guest := strings.Join([]string{
		"set -e",
		"grep -q ' /sys/fs/cgroup .* - cgroup2 ' /proc/self/mountinfo",
		"podman --runtime runc " + storage + " load -q -i " + archive + " >/dev/null",
		// In the run's own directory: conmon writes a file "oom" into its
		// working directory when a container's cgroup records an OOM kill.
		"cd " + dir,
		"SVC_TEST_IMAGE=" + img + " SVC_PODMAN_FLAGS='" + storage + "' " + bin +
			" -test.count=1 -test.v -test.timeout=25m -test.run '^(TestContainer|TestContainerPrivileges)$'",
	}, "\n")
	start := time.Now()
	cmd := exec.Command(script, "sh", "-c", guest)
	cmd.Env = append(os.Environ(), "SVC_IN_V2_GUEST=1", "V2VM_TIMEOUT=1800", "V2VM_MEM=6144")
	out, err := cmd.CombinedOutput()
	t.Logf("v2 guest (%v):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("v2 guest: %v", err)
	}
	for _, name := range []string{"TestContainer", "TestContainerPrivileges"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass in the v2 guest", name)
		}
	}
}

// TestKubernetesManifest plays the svc Deployment of
// deploy/kubernetes.yaml with podman kube play, as a cluster would run
// its pod: the image, the environment, the privileged securityContext,
// the state emptyDir, the API keys mounted read-only from a volume, the
// liveness probe. A real redis-server on loopback is its CACHE_URL.
// What podman cannot express is changed, each change checked to apply,
// and said in the manifest's comments: no Service (host network instead
// of ports), the Secret volume as a hostPath (podman 4.3 crashes on
// secret volumes), one replica.
func TestKubernetesManifest(t *testing.T) {
	requirePodman(t)
	if _, err := exec.LookPath("catatonit"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs catatonit, which podman kube play's pause container runs: %v", err)
		}
		t.Skipf("podman kube play needs catatonit (apt-get install catatonit): %v", err)
	}
	img := image(t)
	redisAddr := startRedis(t)
	b, err := os.ReadFile("kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.Contains(doc, "\nkind: Deployment\n") && strings.Contains(doc, "\n  name: svc\n") {
			spec = doc
		}
	}
	if spec == "" {
		t.Fatal("no Deployment svc in kubernetes.yaml")
	}
	port := freePort(t)
	uidBase := nextUIDBase()
	keys := t.TempDir()
	key := "kube-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(keys, "api-keys"), []byte(key+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ old, new string }{
		{"replicas: 3", "replicas: 1"},
		{"image: registry.example.com/svc:1", "image: " + img},
		{`value: "0.0.0.0:8080"`, fmt.Sprintf(`value: "127.0.0.1:%d"`, port)},
		{"redis://redis.svc.svc.cluster.local:6379/0", "redis://" + redisAddr + "/0"},
		{"          ports:\n            - name: http\n              containerPort: 8080\n", ""},
		{"port: http", fmt.Sprintf("port: %d", port)},
		{`value: "1000000"`, fmt.Sprintf(`value: "%d"`, uidBase)},
		{"          secret:\n            secretName: svc-api-keys\n            defaultMode: 0400",
			"          hostPath:\n            path: " + keys + "\n            type: Directory"},
	} {
		if !strings.Contains(spec, r.old) {
			t.Fatalf("kubernetes.yaml's svc Deployment no longer has %q: update this test", r.old)
		}
		spec = strings.ReplaceAll(spec, r.old, r.new)
	}
	dir := t.TempDir()
	yaml := filepath.Join(dir, "svc.yaml")
	if err := os.WriteFile(yaml, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	// kube play has no --ulimit: podman's defaults exceed this machine
	// kind's hard limits.
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = [\"nofile=20000:20000\", \"nproc=32768:32768\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kube := func(args ...string) (string, error) {
		cmd := podman(append([]string{"kube"}, args...)...)
		cmd.Dir = dir // kube play builds images from directories named as them
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		kube("down", yaml)
		podman("pod", "rm", "-f", "svc-pod-0").Run()
		podman("volume", "rm", "-f", "state").Run()
	})
	if out, err := kube("play", "--build=false", "--network", "host", yaml); err != nil {
		t.Fatalf("podman kube play: %v\n%s", err, out)
	}
	const ctr = "svc-pod-0-svc"
	var c *container
	deadline := time.Now().Add(3 * time.Minute)
	for c == nil {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c = &container{name: ctr}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod does not serve after 3 minutes:\n%s", logs(t, ctr))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c.c, err = client.New(client.Config{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Key: key}); err != nil {
		t.Fatal(err)
	}
	// The pod spec as podman ran it.
	for format, want := range map[string]string{
		"{{.HostConfig.Privileged}}": "true",
		`{{range .Mounts}}{{if eq .Destination "/var/lib/svc"}}{{.Type}}{{end}}{{end}}`:    "volume",
		`{{range .Mounts}}{{if eq .Destination "/run/svc-keys"}}{{.RW}}{{end}}{{end}}`:     "false",
		`{{range .Mounts}}{{if eq .Destination "/run/svc/uids"}}{{.Source}}{{end}}{{end}}`: "/run/svc/uids",
		`{{index .Config.Healthcheck.Test 0}} {{.Config.Healthcheck.Interval}}`:            "CMD-SHELL 10s",
		`{{range .Config.Env}}{{if eq . "MAX_CONCURRENCY=8"}}{{.}}{{end}}{{end}}`:          "MAX_CONCURRENCY=8",
		`{{range .Config.Env}}{{if eq . "SHUTDOWN_TIMEOUT_MS=10000"}}{{.}}{{end}}{{end}}`:  "SHUTDOWN_TIMEOUT_MS=10000",
	} {
		if got := run(t, "inspect", "-f", format, ctr); got != want {
			t.Errorf("inspect %s: %q, want %q", format, got, want)
		}
	}
	// The pod holds its range in the node's lock directory.
	if m, _ := filepath.Glob(fmt.Sprintf("/run/svc/uids/%d-*", uidBase)); len(m) != 1 {
		t.Errorf("no lock of host ids from %d in the host's /run/svc/uids", uidBase)
	}
	// A cacheable compile, twice: the second replays from the Redis of
	// CACHE_URL.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req := &svc.Request{Cache: true, Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-o", "hello", "hello.c"},
			Files: map[string]svc.File{"hello.c": {Content: helloC}}, SandboxProfile: svc.ProfileCompileV2}),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
	}}
	for i, replayed := range []int{0, 2} {
		resp, err := c.c.Execute(ctx, req)
		if err != nil {
			t.Fatalf("execute %d: %v", i, err)
		}
		if got := resp.Results[1].Results[0].Stdout; got != "hello from the container\n" {
			t.Errorf("execute %d: stdout %q", i, got)
		}
		if resp.Cache.ReplayedSteps != replayed {
			t.Errorf("execute %d: %d steps replayed, want %d (CACHE_URL redis://%s)", i, resp.Cache.ReplayedSteps, replayed, redisAddr)
		}
	}
	// Stopped as a node stops a pod: SIGTERM, then svc drains and exits
	// 0 within SHUTDOWN_TIMEOUT_MS, well inside the grace period.
	run(t, "pod", "stop", "-t", "30", "svc-pod-0")
	if log := logs(t, ctr); !strings.Contains(log, `"msg":"shutting down"`) {
		t.Errorf("svc's log has no shutting down line:\n%s", log)
	}
	if code := run(t, "inspect", "-f", "{{.State.ExitCode}}", ctr); code != "0" {
		t.Errorf("svc exited %s, want 0:\n%s", code, logs(t, ctr))
	}
}

// startRedis starts a redis-server on a loopback port for the test and
// returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs redis-server: %v", err)
		}
		t.Skipf("no redis-server: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitFor(t, "redis-server listening on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr
}

// TestFullImage runs every language of docs/languages.md in the full
// image, and checks that its Go build cache is prepared: the first go
// build in a fresh container is warm. Building the full image takes
// minutes more than CI has for it, so it runs on an image built before:
//
//	deploy/build-image.sh full
//	SVC_TEST_FULL_IMAGE=localhost/svc:full go test ./deploy -run TestFullImage -v
func TestFullImage(t *testing.T) {
	requirePodman(t)
	img := os.Getenv("SVC_TEST_FULL_IMAGE")
	if img == "" {
		t.Skip("set SVC_TEST_FULL_IMAGE to an image of deploy/build-image.sh full")
	}
	c, log := start(t, img, "--privileged", "-e", "MEMORY_MAX=512MiB", "-e", "PIDS_MAX=128")
	if c == nil {
		t.Fatalf("svc exited at start:\n%s", log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	info, err := c.c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("toolchains: %v", info.Toolchains)
	build := func(cmd string, args []string, files map[string]string) svc.Step {
		fs := map[string]svc.File{}
		for name, content := range files {
			fs[name] = svc.File{Content: content}
		}
		return svc.Single(svc.Task{Cmd: cmd, Args: args, Files: fs, SandboxProfile: svc.ProfileCompileV2})
	}
	runs := func(cmd string, args ...string) svc.Step {
		return svc.Single(svc.Task{Cmd: cmd, Args: args, SandboxProfile: svc.ProfileNativeV2})
	}
	for _, tc := range []struct {
		lang  string
		steps []svc.Step
	}{
		{"go", []svc.Step{build("go", []string{"build", "-o", "main", "."}, map[string]string{
			"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n", "go.mod": "module hello\n\ngo 1.26\n"}),
			runs("./main")}},
		{"java", []svc.Step{build("javac", []string{"Main.java"}, map[string]string{
			"Main.java": `public class Main { public static void main(String[] a) { System.out.println("hi"); } }`}),
			runs("java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData", "Main")}},
		{"rust", []svc.Step{build("rustc", []string{"--edition=2021", "-O", "-o", "main", "main.rs"}, map[string]string{
			"main.rs": `fn main() { println!("hi"); }`}), runs("./main")}},
		{"c++", []svc.Step{build("g++", []string{"-O2", "-o", "main", "main.cpp"}, map[string]string{
			"main.cpp": "#include <iostream>\nint main() { std::cout << \"hi\\n\"; }\n"}), runs("./main")}},
		{"javascript", []svc.Step{build("true", nil, map[string]string{"main.js": `console.log("hi")`}), runs("node", "main.js")}},
		{"pypy", []svc.Step{build("true", nil, map[string]string{"main.py": `print("hi")`}), runs("pypy3", "main.py")}},
		{"python", []svc.Step{build("true", nil, map[string]string{"main.py": `print("hi")`}), runs("python3", "main.py")}},
	} {
		resp, err := c.c.Execute(ctx, &svc.Request{Steps: tc.steps})
		if err != nil {
			t.Fatalf("%s: %v", tc.lang, err)
		}
		b, r := resp.Results[0].Results[0], resp.Results[1].Results[0]
		if b.Outcome != svc.OutcomeExited || b.ExitCode != 0 || r.Outcome != svc.OutcomeExited || r.Stdout != "hi\n" {
			t.Errorf("%s: build %s (exit %d, %q), run %s, stdout %q, stderr %q", tc.lang, b.Outcome, b.ExitCode, b.Stderr, r.Outcome, r.Stdout, r.Stderr)
			continue
		}
		t.Logf("%s: build %d ms wall, %d us CPU, %d bytes peak", tc.lang, b.Stats.WallTimeMs, *b.Stats.CPUUsageUsec, *b.Stats.MemoryPeakBytes)
		// The first go build of a fresh container compiles the program
		// alone: cold, it compiles the standard library too (about 8 s of
		// CPU).
		if tc.lang == "go" && *b.Stats.CPUUsageUsec > 3_000_000 {
			t.Errorf("go: the first build took %d us of CPU: the image's Go build cache is not used", *b.Stats.CPUUsageUsec)
		}
	}
}

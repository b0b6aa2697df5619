package svc_test

// The isolation tests run hostile programs that try to leave the sandbox:
// to become root, see or signal the host and other tasks, reach the
// network, write where they must not, or make the service write outside
// the workspace for them. Each attempt must fail, and each test checks how.
//
// The C programs are in testdata/hostile; probe.h, inlined into each, runs
// every attempt in a forked child and prints "<name>\t<result>", so that a
// refusal, a crash or a kill by a system-call filter is a result, not the
// end of the program. The programs run with the compile_v1 profile, a
// denylist and the most permissive profile an operator can allow: the
// attempts reach the kernel wherever a profile lets them, and what only
// the system-call filter stops is accepted as stopped by it (filtered).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/internal/runner"
)

// filtered are the results of an attempt that a system-call filter may
// refuse instead of the kernel: a kill by SIGSYS or ENOSYS. Patterns of
// such attempts end with it.
var filtered = fmt.Sprintf("|signal %d|ENOSYS", syscall.SIGSYS)

// newIsolationSandbox returns a sandbox that allows every profile and
// checks at cleanup that nothing of its requests is left on the host. A
// request in its identity slot 0 runs its init as host uid
// Config().UIDBase and its tasks as UIDBase+1.
func newIsolationSandbox(t *testing.T, cfg svc.Config) *svc.Sandbox {
	t.Helper()
	cfg.AllowedProfiles = svc.Profiles()
	sb := newSandbox(t, cfg)
	t.Cleanup(func() { assertClean(t, sb) })
	return sb
}

// hostile returns the source of testdata/hostile/<name>.c with probe.h
// inlined.
func hostile(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "hostile", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := os.ReadFile(filepath.Join("testdata", "hostile", "probe.h"))
	if err != nil {
		t.Fatal(err)
	}
	const inc = "#include \"probe.h\"\n"
	if !strings.Contains(string(src), inc) {
		t.Fatalf("%s.c does not include probe.h", name)
	}
	return strings.Replace(string(src), inc, string(h), 1)
}

// compile is a step compiling testdata/hostile/<name>.c to /svc/<name>.
func compile(t *testing.T, name string) svc.Step {
	return svc.Single(svc.Task{
		Cmd:   "gcc",
		Args:  []string{"-O1", "-Wall", "-o", name, name + ".c"},
		Files: map[string]svc.File{name + ".c": {Content: hostile(t, name)}},
	})
}

// runHostile runs a request of the compile step of the named program and
// steps, fails the test if the compile fails, and returns the results of
// steps.
func runHostile(t *testing.T, sb *svc.Sandbox, name string, steps ...svc.Step) []svc.StepResult {
	t.Helper()
	resp := run(t, sb, append([]svc.Step{compile(t, name)}, steps...)...)
	c := resp.Results[0].Results[0]
	if c.Outcome != svc.OutcomeExited || c.ExitCode != 0 {
		t.Fatalf("compile %s: %s exit %d\n%s%s", name, c.Outcome, c.ExitCode, c.Stdout, c.Stderr)
	}
	return resp.Results[1:]
}

// hostileProfile is the profile of the hostile programs: the most
// permissive one.
const hostileProfile = svc.ProfileCompileV1

// prog is a task running the compiled hostile program name with args.
func prog(name string, args ...string) svc.Task {
	return svc.Task{Cmd: "./" + name, Args: args, SandboxProfile: hostileProfile}
}

// lines are the "<key>\t<value>" lines of a hostile program's output,
// the values of each key in order.
type lines map[string][]string

func parseLines(t *testing.T, out string) lines {
	t.Helper()
	l := lines{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Errorf("output line without a tab: %q", line)
			continue
		}
		l[k] = append(l[k], v)
	}
	return l
}

// take returns the one value of key and removes it.
func (l lines) take(t *testing.T, key string) string {
	t.Helper()
	v := l[key]
	delete(l, key)
	if len(v) != 1 {
		t.Errorf("%s: got %d lines %q, want 1", key, len(v), v)
		return ""
	}
	return v[0]
}

// fields returns the values of key, each with its whitespace collapsed to
// single spaces, and removes them.
func (l lines) fields(key string) []string {
	v := l[key]
	delete(l, key)
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = strings.Join(strings.Fields(s), " ")
	}
	return out
}

// expectAll checks that every line left matches the anchored pattern of
// its key, and that every key of want has a line: no attempt goes
// unchecked and none is missing.
func (l lines) expectAll(t *testing.T, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		re := regexp.MustCompile("^(?:" + want[k] + ")$")
		v, ok := l[k]
		delete(l, k)
		switch {
		case !ok:
			t.Errorf("%s: no result", k)
		case len(v) != 1:
			t.Errorf("%s: %d results %q", k, len(v), v)
		case !re.MatchString(v[0]):
			t.Errorf("%s: got %q, want %s", k, v[0], want[k])
		}
	}
	for k, v := range l {
		t.Errorf("unexpected line %s\t%q", k, v)
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (Go 1.24)
	return hex.EncodeToString(b)
}

// hostMarkers writes a file named svc-isolation-<random> holding a random
// token in each of dirs on the host, removed at cleanup, and returns their
// paths and the token.
func hostMarkers(t *testing.T, dirs ...string) (paths []string, token string) {
	t.Helper()
	token = "svc-secret-" + randomHex(16)
	name := "svc-isolation-" + randomHex(8)
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(token+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		paths = append(paths, p)
	}
	return paths, token
}

// sandboxRoot is the sorted listing of a sandbox's "/": the system
// directories of the host's root that exist, and what the sandbox makes.
func sandboxRoot() string {
	names := []string{"dev", "proc", "svc", "tmp"}
	for _, d := range []string{"bin", "etc", "lib", "lib32", "lib64", "libx32", "opt", "sbin", "usr"} {
		if fi, err := os.Lstat("/" + d); err == nil && (fi.IsDir() || fi.Mode()&os.ModeSymlink != 0) {
			names = append(names, d)
		}
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// TestIsolationIdentity: the task is uid and gid 1000 with no groups, no
// capability in any set and no_new_privs; its user namespace maps exactly
// the two ids of its slot, setgroups is denied, and every attempt to
// change identity or gain a capability fails.
func TestIsolationIdentity(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	if os.Getenv(groupsChild) != "" {
		// Run by TestIsolationHostGroups: the groups must be there, or
		// the test below proves nothing.
		if g, err := unix.Getgroups(); err != nil || !slices.Contains(g, 4242) {
			t.Fatalf("the service process has groups %v (%v), want 0 and 4242", g, err)
		}
	}
	r := runHostile(t, sb, "identity", svc.Single(prog("identity")))[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	l := parseLines(t, r.Stdout)

	status := map[string]string{}
	for _, s := range l.fields("self") {
		k, v, _ := strings.Cut(s, " ")
		status[k] = v
	}
	for k, want := range map[string]string{
		"Uid:": "1000 1000 1000 1000", "Gid:": "1000 1000 1000 1000", "Groups:": "",
		"CapInh:": "0000000000000000", "CapPrm:": "0000000000000000", "CapEff:": "0000000000000000",
		"CapBnd:": "0000000000000000", "CapAmb:": "0000000000000000", "NoNewPrivs:": "1",
	} {
		if got, ok := status[k]; !ok || got != want {
			t.Errorf("/proc/self/status %s %q, want %q", k, got, want)
		}
	}
	// The init, root of the namespace, is invisible to the task (/proc is
	// mounted hidepid=invisible) and holds no host group either: seen
	// from the host, as the shell that ran the task waits for the next.
	if got := l.fields("init"); !slices.Equal(got, []string{"unreadable ENOENT"}) {
		t.Errorf("/proc/1/status in the sandbox: %q, want unreadable ENOENT", got)
	}
	procs := sandboxProcs(t, sb.Config().UIDBase, sb.Limits().MaxConcurrency)
	if len(procs) == 0 {
		t.Error("no sandbox init on the host to check")
	}
	for _, p := range procs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(p, "/proc/"), " ")
		st, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			continue // gone meanwhile
		}
		for _, line := range strings.Split(string(st), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Groups:" {
				t.Errorf("sandbox process %s has host groups %v", p, f[1:])
			}
		}
	}
	if got := l.fields("setgroups"); !slices.Equal(got, []string{"deny"}) {
		t.Errorf("/proc/self/setgroups %q, want deny", got)
	}
	// The request's identity slot k maps the init to base+2k and the task
	// to base+2k+1, for uid and gid alike.
	base := sb.Config().UIDBase
	uidMap := l.fields("uid_map")
	var k int
	if len(uidMap) == 2 {
		var host int
		fmt.Sscanf(uidMap[0], "0 %d 1", &host)
		k = (host - base) / 2
	}
	wantMap := []string{
		fmt.Sprintf("0 %d 1", base+2*k),
		fmt.Sprintf("1000 %d 1", base+2*k+1),
	}
	if slots := svc.IdentitySlotsForTest(sb.Limits().MaxConcurrency); k < 0 || k >= slots {
		t.Errorf("/proc/self/uid_map %q: not a slot of [%d, %d)", uidMap, base, base+2*slots)
	}
	for f, got := range map[string][]string{"uid_map": uidMap, "gid_map": l.fields("gid_map")} {
		if !slices.Equal(got, wantMap) {
			t.Errorf("/proc/self/%s %q, want %q", f, got, wantMap)
		}
	}
	if got := l.take(t, "ids"); got != "1000 1000 1000 1000 0" {
		t.Errorf("uid euid gid egid ngroups: %s", got)
	}
	l.expectAll(t, map[string]string{
		"setgroups(0, NULL)":          "EPERM" + filtered,
		"setgroups([0])":              "EPERM" + filtered,
		"setuid(0)":                   "EPERM" + filtered,
		"setgid(0)":                   "EPERM" + filtered,
		"setresuid(0, 0, 0)":          "EPERM" + filtered,
		"setresgid(0, 0, 0)":          "EPERM" + filtered,
		"setfsuid(0)":                 "EPERM" + filtered,
		"capset(all)":                 "EPERM" + filtered,
		"ambient raise CAP_SYS_ADMIN": "EPERM" + filtered,
		"clear no_new_privs":          "EINVAL" + filtered,
		"write uid_map":               "EPERM",
		"write setgroups":             "EACCES",
	})
}

// groupsChild is set in the environment of the test binary that
// TestIsolationHostGroups starts.
const groupsChild = "SVC_ISOLATION_GROUPS_CHILD"

// TestIsolationHostGroups: a service process holding supplementary groups
// (root's group 0 among them) passes none to its sandboxes. Root often has
// none, which makes TestIsolationIdentity's check of Groups vacuous; this
// test runs it again in a copy of the test binary started with the groups
// 0 and 4242.
func TestIsolationHostGroups(t *testing.T) {
	if os.Getenv(groupsChild) != "" {
		t.Skip("already the copy with groups")
	}
	requireRoot(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestIsolationIdentity$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), groupsChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Groups: []uint32{0, 4242}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestIsolationIdentity") {
		t.Fatalf("TestIsolationIdentity with groups 0 and 4242: %v\n%s", err, out)
	}
}

// TestIsolationHostInvisible: marker files on the host (its /, /root,
// /tmp, /var/tmp, /dev/shm, the state directory) can be neither found nor
// read; the task's /proc lists the task alone (pid 2); the test's pid
// names nothing and a System V segment of the host does not exist.
func TestIsolationHostInvisible(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	markers, token := hostMarkers(t, "/", "/root", "/tmp", os.TempDir(), "/var/tmp", "/dev/shm", sb.Config().StateDir)
	markers = slices.Compact(markers) // os.TempDir() is usually /tmp
	key := int(time.Now().UnixNano()&0x3fffffff) | 1
	shm, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666)
	if err != nil {
		t.Fatalf("host shm segment: %v", err)
	}
	t.Cleanup(func() { unix.SysvShmCtl(shm, unix.IPC_RMID, nil) })

	base := filepath.Base(markers[0])
	find := sh(`touch /svc/` + base + `.sanity
find / \( -path /proc -o -path /usr -o -path /opt \) -prune -o -name 'svc-isolation-*' -print 2>/dev/null
exit 0`)
	res := runHostile(t, sb, "hostview",
		svc.Single(prog("hostview", append([]string{strconv.Itoa(os.Getpid()), strconv.Itoa(key)}, markers...)...)),
		svc.Single(find))

	// find searched everything but /proc and the two largest read-only
	// system directories, /usr and /opt, where no marker was put: it
	// finds only its own file.
	f := res[1].Results[0]
	expect(t, f, svc.OutcomeExited, 0)
	if want := "/svc/" + base + ".sanity\n"; f.Stdout != want {
		t.Errorf("find: got %q, want %q", f.Stdout, want)
	}

	r := res[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	if strings.Contains(r.Stdout+r.Stderr, token) {
		t.Errorf("the task read a host marker:\n%s", r.Stdout)
	}
	l := parseLines(t, r.Stdout)
	// The init, pid 1, is invisible (hidepid=invisible): the task sees
	// its own processes alone.
	if got := l.take(t, "pids"); got != "2" {
		t.Errorf("/proc lists pids %q, want \"2\" (the task alone)", got)
	}
	if got := l.take(t, "self"); got != "2" {
		t.Errorf("the task is pid %s, want 2", got)
	}
	if got := l.fields("cmdline 1"); len(got) > 0 {
		t.Errorf("pid 1's cmdline readable: %q", got)
	}
	if got := l.take(t, "cmdline 2"); !strings.HasPrefix(got, "./hostview ") {
		t.Errorf("pid 2 is %q, want the task", got)
	}
	want := map[string]string{
		"kill(test pid, 0)": "ESRCH" + filtered,
		"shmget(host key)":  "ENOENT" + filtered,
		"stat /root":        "ENOENT",
		"stat /var":         "ENOENT",
		"stat /home":        "ENOENT",
	}
	for i := range markers {
		want[fmt.Sprintf("read marker %d", i)] = "ENOENT"
	}
	l.expectAll(t, want)
}

// startHostProcess starts `sleep 60` on the host as uid, killed and reaped
// at cleanup.
func startHostProcess(t *testing.T, uid int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), NoSetGroups: true},
		Pdeathsig:  syscall.SIGKILL,
	}
	if uid == 0 {
		cmd.SysProcAttr.Credential = nil
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start host process as uid %d: %v", uid, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// unsignalled fails unless pid is alive and has no SIGKILL pending. A
// SIGKILL sent before this call is either pending or has killed the
// process (a zombie until its parent, this test, reaps it), so the check
// needs no waiting.
func unsignalled(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return fmt.Errorf("pid %d is dead: %s", pid, v)
			}
		case "SigPnd", "ShdPnd":
			mask, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return fmt.Errorf("pid %d: %s %q: %v", pid, k, v, err)
			}
			if mask&(1<<(syscall.SIGKILL-1)) != 0 {
				return fmt.Errorf("pid %d has SIGKILL pending (%s %s)", pid, k, v)
			}
		}
	}
	return nil
}

// TestIsolationKillAll: kill(-1, SIGKILL) in the task kills only its own
// processes (its child dies, the task and its init live on) and no host
// process, not even one with the task's own host uid or the init's; host
// pids name nothing.
func TestIsolationKillAll(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	base := sb.Config().UIDBase
	hosts := []*exec.Cmd{
		startHostProcess(t, base+1), // the task's host uid
		startHostProcess(t, base),   // the init's
		startHostProcess(t, 0),
	}
	var pids []string
	for _, c := range hosts {
		pids = append(pids, strconv.Itoa(c.Process.Pid))
	}
	r := runHostile(t, sb, "killall", svc.Single(prog("killall", pids...)))[0].Results[0]
	for _, c := range hosts {
		if err := unsignalled(c.Process.Pid); err != nil {
			t.Errorf("host process %v: %v", c.SysProcAttr.Credential, err)
		}
	}
	// The host processes with sandbox ids must be gone before the
	// cleanup looks for leftovers of the sandbox.
	for _, c := range hosts {
		c.Process.Kill()
		c.Wait()
	}

	expect(t, r, svc.OutcomeExited, 0)
	l := parseLines(t, r.Stdout)
	if got := l.take(t, "alive"); got != "2" {
		t.Errorf("the task is pid %q after kill(-1), want 2", got)
	}
	want := map[string]string{
		"kill(-1, SIGKILL)": "ok", // it killed the task's child
		"child":             "signal 9",
	}
	for i := range hosts {
		want[fmt.Sprintf("kill(host pid %d, SIGKILL)", i)] = "ESRCH" + filtered
	}
	l.expectAll(t, want)
}

// TestIsolationParallelTasks: a task of a parallel step can neither see nor
// signal the other. B waits until A runs, looks for A's marker in every
// command line of its /proc, kills all it sees and kill(-1)s; A, waiting
// for B to finish, must end by itself.
func TestIsolationParallelTasks(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	marker := "svc-victim-" + randomHex(8)
	a := sh(`touch /svc/a-started
i=0
while [ ! -e /svc/done ]; do
	i=$((i+1))
	if [ $i -gt 5000 ]; then echo "no /svc/done"; exit 3; fi
	sleep 0.001
done
echo alive`)
	a.Args = append(a.Args, marker) // $0: in A's command line
	res := runHostile(t, sb, "neighbour", svc.Parallel(a, prog("neighbour", marker)))[0].Results

	expect(t, res[0], svc.OutcomeExited, 0)
	if res[0].Stdout != "alive\n" {
		t.Errorf("A: %q, want alive", res[0].Stdout)
	}
	expect(t, res[1], svc.OutcomeExited, 0)
	parseLines(t, res[1].Stdout).expectAll(t, map[string]string{
		"a-started":         "yes",
		"marker-found":      "0",
		"visible":           "1 2", // its init and itself
		"self":              "2",
		"kill(-1, SIGKILL)": "ESRCH",
	})
}

// TestIsolationNetwork: the task has only lo. A listener of the host on
// 127.0.0.1 and an abstract unix socket of the host cannot be reached (the
// test's listeners accept nothing), other addresses are unreachable, raw
// and packet sockets are refused; the task's own loopback works.
func TestIsolationNetwork(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	var listeners []net.Listener
	listen := func(network, addr string) net.Listener {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		listeners = append(listeners, ln)
		return ln
	}
	tcp := listen("tcp4", "127.0.0.1:0")
	abstract := "svc-isolation-" + randomHex(8)
	listen("unix", "@"+abstract)
	port := strconv.Itoa(tcp.Addr().(*net.TCPAddr).Port)

	args := []string{port, abstract, "192.0.2.1"} // TEST-NET-1
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			args = append(args, ip.IP.String())
		}
	}
	r := runHostile(t, sb, "network", svc.Single(prog("network", args...)))[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	l := parseLines(t, r.Stdout)
	if got := l.take(t, "interfaces"); got != "lo" {
		t.Errorf("interfaces %q, want lo", got)
	}
	want := map[string]string{
		"connect host 127.0.0.1 port":  "ECONNREFUSED",
		"connect host abstract socket": "ECONNREFUSED",
		"loopback":                     "ok",
		"raw socket":                   "EPERM|EACCES" + filtered,
		"packet socket":                "EPERM|EACCES" + filtered,
	}
	for _, a := range args[2:] {
		want["connect "+a] = "ENETUNREACH"
	}
	l.expectAll(t, want)
	// A connection that reached a listener would wait in its backlog.
	for _, ln := range listeners {
		if err := pendingConn(ln); err != nil {
			t.Error(err)
		}
	}
}

// pendingConn fails if ln has a connection waiting to be accepted. It
// makes one non-blocking accept(2): nothing waits for anything.
func pendingConn(ln net.Listener) error {
	raw, err := ln.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	var aerr error
	err = raw.Control(func(fd uintptr) {
		// The listener's fd is non-blocking (Go's poller).
		var nfd int
		nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_CLOEXEC)
		if aerr == nil {
			unix.Close(nfd)
		}
	})
	switch {
	case err != nil:
		return err
	case aerr == nil:
		return fmt.Errorf("the host listener %s accepted a connection", ln.Addr())
	case !errors.Is(aerr, unix.EAGAIN):
		return fmt.Errorf("accept on %s: %w", ln.Addr(), aerr)
	}
	return nil
}

// TestIsolationPrivileged: the read-only places cannot be written, no
// privileged operation succeeds, the init (pid 1) cannot be signalled,
// traced or looked into, and, when the kernel lets the task create a
// nested user namespace, being root there unlocks none of it.
func TestIsolationPrivileged(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	markers, token := hostMarkers(t, "/var/tmp")
	r := runHostile(t, sb, "privileged", svc.Single(prog("privileged", markers[0])))[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	if strings.Contains(r.Stdout, token) {
		t.Errorf("the task read the host marker:\n%s", r.Stdout)
	}
	// Three groups of lines, each checked by a subtest.
	attempts, flags, nested := parseLines(t, r.Stdout), lines{}, lines{}
	for k, v := range attempts {
		switch {
		case strings.HasPrefix(k, "flags "):
			flags[k] = v
			delete(attempts, k)
		case strings.HasPrefix(k, "nested"):
			nested[k] = v
			delete(attempts, k)
		}
	}

	t.Run("mount flags", func(t *testing.T) {
		for path, want := range map[string]string{
			"/":         "ro nosuid nodev noexec",
			"/usr":      "ro nosuid nodev",
			"/etc":      "ro nosuid nodev",
			"/svc":      "rw nosuid nodev",
			"/tmp":      "rw nosuid nodev",
			"/dev":      "ro nosuid nodev noexec", // a directory of the root
			"/dev/shm":  "rw nosuid nodev noexec",
			"/dev/null": "ro nosuid noexec", // written through all the same
			"/proc":     "rw nosuid nodev noexec",
			"/proc/sys": "ro nosuid nodev noexec",
		} {
			if got := flags.take(t, "flags "+path); got != want {
				t.Errorf("%s: mount flags %q, want %q", path, got, want)
			}
		}
		flags.expectAll(t, nil)
	})

	t.Run("attempts", func(t *testing.T) {
		attempts.expectAll(t, map[string]string{
			"create /usr/x": "EROFS",
			"create /etc/x": "EROFS",
			"create /x":     "EROFS",
			"create /dev/x": "EROFS",
			"mkdir /usr/x":  "EROFS",
			// Files of the host's root, which the user namespace
			// does not map: permission is denied before the
			// read-only mount is looked at.
			"write /etc/passwd":                   "EACCES",
			"write /proc/sys/kernel/hostname":     "EACCES",
			"write /proc/sys/kernel/core_pattern": "EACCES",
			"write /proc/sys/vm/drop_caches":      "EACCES",
			"mknod /svc/cdev":                     "EPERM" + filtered,
			"mknod /tmp/cdev":                     "EPERM" + filtered,
			"mknod /dev/shm/bdev":                 "EPERM" + filtered,
			"chroot /tmp":                         "EPERM" + filtered,
			"sethostname":                         "EPERM" + filtered,
			"setdomainname":                       "EPERM" + filtered,
			"mount tmpfs":                         "EPERM" + filtered,
			"mount proc":                          "EPERM" + filtered,
			"remount / rw":                        "EPERM" + filtered,
			"setattr /usr rw":                     "EPERM" + filtered,
			"umount /proc/sys":                    "EPERM" + filtered,
			"umount /proc/kallsyms":               "EPERM" + filtered,
			"pivot_root":                          "EPERM" + filtered,
			"open_tree clone /":                   "EPERM" + filtered,
			"unshare(CLONE_NEWNS)":                "EPERM" + filtered,
			"unshare(CLONE_NEWNET)":               "EPERM" + filtered,
			"open /proc/1/ns/mnt":                 "ENOENT",

			"kill(1, SIGKILL)":             "EPERM" + filtered,
			"ptrace attach 1":              "EPERM" + filtered,
			"process_vm_readv 1":           "EPERM" + filtered,
			"pidfd_getfd 1 status fd":      "EPERM" + filtered,
			"open /proc/1/root/etc/passwd": "ENOENT",
			"/proc/1/root marker":          "ENOENT",
			"/proc/1/cwd marker":           "ENOENT",
			"/proc/self/root marker":       "ENOENT",
			"readlink /proc/1/exe":         "ENOENT",
			"readlink /proc/1/cwd":         "ENOENT",
			"readlink /proc/1/root":        "ENOENT",
			"open /proc/1/exe O_WRONLY":    "ENOENT",
			"open /proc/1/environ":         "ENOENT",
			"open /proc/1/mem":             "ENOENT",
			"open /proc/1/fd/4":            "ENOENT",
			// pid 1, the init, is invisible: hidepid=invisible.

			// The kernel refuses with kernel.dmesg_restrict = 1.
			"syslog read all":     "EPERM" + filtered,
			"reboot CAD off":      "EPERM" + filtered,
			"init_module":         "EPERM" + filtered, // ENOSYS also without module support
			"clock_settime":       "EPERM" + filtered,
			"iopl(3)":             "EPERM" + filtered, // ENOSYS also without CONFIG_X86_IOPL_IOPERM
			"raise RLIMIT_NOFILE": "EPERM" + filtered,
			"setpriority -1":      "EACCES" + filtered,
		})
	})

	// Seccomp may refuse nested user namespaces; the kernel may allow
	// them. When one is made, the task is root in it, and the mounts it
	// inherits stay locked: nothing masked can be revealed, nothing
	// read-only made writable, no procfs or sysfs mounted, and escaping
	// a chroot leads back to the sandbox's root, not the host's.
	t.Run("nested user namespace", func(t *testing.T) {
		end := nested.take(t, "nested")
		created := nested["nested unshare"]
		switch {
		case end == fmt.Sprintf("signal %d", syscall.SIGSYS) && len(created) == 0:
			t.Log("the system-call filter killed the nested namespace attempt")
			nested.expectAll(t, nil)
			return
		case end != "ok":
			t.Fatalf("the nested probe ended with %q", end)
		case len(created) == 1 && created[0] != "ok":
			t.Logf("no nested user namespace: %s", created[0])
			nested.expectAll(t, map[string]string{"nested unshare": "E[A-Z0-9]+"})
			return
		}
		if got := nested.take(t, "nested escaped root"); got != sandboxRoot() {
			t.Errorf("after a chroot escape / is %q, want the sandbox's root %q", got, sandboxRoot())
		}
		if h := nested.fields("nested cgroup v1 hierarchy"); len(h) > 0 {
			t.Logf("the nested cgroup namespace mounted the cgroup v1 hierarchy %s", h)
		}
		nested.expectAll(t, map[string]string{
			"nested unshare":               "ok",
			"nested umount /proc/kallsyms": "EINVAL",
			"nested umount /proc/sys":      "EINVAL",
			"nested remount /usr rw":       "EPERM",
			"nested setattr /usr rw":       "EPERM",
			"nested remount / rw":          "EPERM",
			"nested setattr / rw":          "EPERM",
			"nested mount proc":            "EPERM",
			"nested mount sysfs":           "EPERM",
			"nested mknod /tmp/cdev":       "EPERM",
			"nested /proc/1/root marker":   "EACCES",
			"nested chroot escape":         "ENOENT",
			// Any refusal: no hierarchy to mount, or no release_agent
			// to write (CVE-2022-0492).
			"nested cgroup release_agent": "E[A-Z0-9]+",
		})
	})
}

// TestIsolationFilesRefused: a symlink (to a host file, through a magic
// link, relative and climbing, to a host directory, to the workspace
// itself), a FIFO or a unix socket left in the workspace by an earlier
// step makes a later task's file at that path an infrastructure failure
// that says why; nothing is written through the link, a FIFO does not
// hang the request, and an ordinary file is still placed.
func TestIsolationFilesRefused(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	markers, token := hostMarkers(t, "/var/tmp")
	marker := markers[0]
	hostDir, err := os.MkdirTemp("", "svc-isolation-target-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}

	setup := sh(`set -e
cd /svc
ln -s "$1" host
ln -s "/proc/self/root$1" magic
ln -s "../../../../../../../../../../../../../../..$1" rel
ln -s "$2" d
ln -s . self
mkfifo fifo
/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'
test -S sock`)
	setup.Args = append(setup.Args, "setup", marker, hostDir)
	setup.SandboxProfile = hostileProfile // mkfifo

	cases := []struct{ path, why string }{
		{"host", "symlink"},
		{"magic", "symlink"},
		{"rel", "symlink"},
		{"d/x", "symlink"},
		{"self/x", "symlink"},
		{"fifo", "not a regular file"},
		{"sock", "not a regular file"},
	}
	var tasks []svc.Task
	for _, c := range cases {
		tasks = append(tasks, svc.Task{Cmd: "true", Files: map[string]svc.File{c.path: {Content: "overwritten"}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{
		svc.Single(setup),
		svc.Parallel(tasks...),
		svc.Single(svc.Task{Cmd: "cat", Args: []string{"ok/x"}, Files: map[string]svc.File{"ok/x": {Content: "fine"}}}),
	}})
	if err != nil {
		t.Fatalf("Run: %v (did placing a file on the FIFO block?)", err)
	}
	expect(t, resp.Results[0].Results[0], svc.OutcomeExited, 0)
	for i, c := range cases {
		r := resp.Results[1].Results[i]
		want := fmt.Sprintf("files[%q]: ", c.path)
		if r.Outcome != svc.OutcomeInfrastructureFailure || !strings.HasPrefix(r.Error, want) || !strings.Contains(r.Error, c.why) {
			t.Errorf("%s: %s %q, want infrastructure_failure %q...%q", c.path, r.Outcome, r.Error, want, c.why)
		}
	}
	ok := resp.Results[2].Results[0]
	expect(t, ok, svc.OutcomeExited, 0)
	if ok.Stdout != "fine" {
		t.Errorf("an ordinary file reads %q, want fine", ok.Stdout)
	}

	if b, err := os.ReadFile(marker); err != nil || string(b) != token+"\n" {
		t.Errorf("the host marker now holds %q (%v)", b, err)
	}
	if entries, err := os.ReadDir(hostDir); err != nil || len(entries) != 0 {
		t.Errorf("the host directory holds %v (%v)", entries, err)
	}
}

// TestIsolationFilesSymlinkRace: a task swaps /svc/d between directories
// and symlinks to a host directory (absolute, relative, through
// /proc/self/root) in a tight loop, while the service places d/x and
// d/sub/y for the next task of the same parallel step, and until it is
// killed at a random moment, leaving d at a random state for the next
// step. A task of a parallel step starts before the files of the next are
// placed, and each placement first writes a large file (a/big sorts
// first), so the swapping runs during the lookups of d. Over many rounds
// each placement lands in a workspace directory or is refused, and the
// host directory stays empty.
func TestIsolationFilesSymlinkRace(t *testing.T) {
	const rounds = 24
	sb := newIsolationSandbox(t, svc.Config{
		Limits:        svc.Limits{MaxSteps: rounds + 8},
		WorkspaceSize: 2 * svc.GiB, // rounds times a/big, if sizes add up
	})
	hostDir, err := os.MkdirTemp("", "svc-isolation-target-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}

	placer := svc.Task{Cmd: "true", Files: map[string]svc.File{"d/x": {Content: "x"}, "d/sub/y": {Content: "y"}}}
	slow := svc.Task{Cmd: "true", Files: map[string]svc.File{
		"a/big": {Content: strings.Repeat("x", 32*svc.MiB)}, "d/x": {Content: "x"}, "d/sub/y": {Content: "y"},
	}}
	steps := []svc.Step{
		svc.Single(prog("swap", "link", hostDir)),
		svc.Single(placer), // d is a symlink: refused
		svc.Single(prog("swap", "dir", hostDir)),
		svc.Single(placer), // d is a directory: placed
	}
	for range rounds {
		steps = append(steps, svc.Parallel(prog("swap", "race", hostDir), slow))
	}
	res := runHostile(t, sb, "swap", steps...)

	expect(t, res[0].Results[0], svc.OutcomeExited, 0)
	expect(t, res[2].Results[0], svc.OutcomeExited, 0)
	if r := res[1].Results[0]; r.Outcome != svc.OutcomeInfrastructureFailure || !strings.HasPrefix(r.Error, `files["d/`) {
		t.Errorf("files under a symlink d: %s %q, want infrastructure_failure", r.Outcome, r.Error)
	}
	expect(t, res[3].Results[0], svc.OutcomeExited, 0)
	placed, refused := 0, 0
	for i, sr := range res[4:] {
		expect(t, sr.Results[0], svc.OutcomeExited, 0)
		switch r := sr.Results[1]; {
		case r.Outcome == svc.OutcomeExited && r.ExitCode == 0:
			placed++
		case r.Outcome == svc.OutcomeInfrastructureFailure && strings.HasPrefix(r.Error, `files["d/`) &&
			(strings.Contains(r.Error, "symlink") || strings.Contains(r.Error, "not a directory")):
			// Why exactly is TestIsolationFilesRefused's business.
			refused++
		default:
			t.Errorf("round %d: %s exit %d %q", i, r.Outcome, r.ExitCode, r.Error)
		}
	}
	t.Logf("%d rounds: placed %d, refused %d", rounds, placed, refused)
	if entries, err := os.ReadDir(hostDir); err != nil || len(entries) != 0 {
		t.Errorf("the host directory holds %v (%v)", entries, err)
	}
}

// TestIsolationWorkingDir: working directories that could lead out of the
// sandbox (runc's CVE-2024-21626 used a leaked fd's /proc/self/fd/N) fail
// to be entered, or are the sandbox's own directories; the host's root and
// its marker files are never reached.
func TestIsolationWorkingDir(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	markers, token := hostMarkers(t, "/", "/tmp", "/var/tmp", sb.Config().StateDir)
	const (
		infra = 1 << iota // infrastructure_failure: not entered
		root              // entered: the sandbox's root
		proc              // entered: the sandbox's /proc
	)
	cases := []struct {
		dir  string
		want int
	}{
		{"/proc/self/fd/3", infra},
		{"/proc/self/fd/4", infra},
		{"/proc/self/fd/5", infra},
		{"/dev/fd/4", infra},
		{"/proc/1/cwd", infra | root},
		{"/proc/1/root", infra | root},
		{"/proc/self/root", root},
		{"/proc/self/cwd", root},
		{"/proc/thread-self/root", root},
		{"/proc/self/root/../..", proc}, // cleaned to /proc
		{"/..", root},
	}
	script := `pwd -P
ls -A | tr '\n' ' '
echo
for m; do cat "./$m" "../../../../../../../../..$m"; done 2>/dev/null
exit 0`
	var steps []svc.Step
	for _, c := range cases {
		task := sh(script)
		task.Args = append(task.Args, "probe")
		task.Args = append(task.Args, markers...)
		task.WorkingDir = c.dir
		steps = append(steps, svc.Single(task))
	}
	resp := run(t, sb, steps...)
	for i, c := range cases {
		r := resp.Results[i].Results[0]
		if strings.Contains(r.Stdout+r.Stderr+r.Error, token) {
			t.Errorf("working_dir %s: the task read a host marker: %q", c.dir, r.Stdout)
		}
		got := 0
		switch {
		case r.Outcome == svc.OutcomeInfrastructureFailure && strings.Contains(r.Error, "working_dir"):
			got = infra
		case r.Outcome == svc.OutcomeExited && r.ExitCode == 0:
			out := strings.Split(r.Stdout, "\n")
			switch {
			case len(out) >= 2 && out[0] == "/" && strings.TrimSpace(out[1]) == sandboxRoot():
				got = root
			case len(out) >= 2 && out[0] == "/proc":
				got = proc
			}
		}
		if got&c.want == 0 {
			t.Errorf("working_dir %s: %s exit %d %q\nstdout: %q", c.dir, r.Outcome, r.ExitCode, r.Error, r.Stdout)
		}
	}
}

// TestIsolationFDsAndEnv: the task has exactly fds 0, 1 and 2 (pipes) and
// exactly the fixed environment plus its own env; nothing of the service's
// environment reaches it.
func TestIsolationFDsAndEnv(t *testing.T) {
	secret := "svc-secret-" + randomHex(16)
	t.Setenv("SVC_SECRET_TEST", secret)
	sb := newIsolationSandbox(t, svc.Config{})
	task := prog("fds")
	task.Env = map[string]string{"SVC_TASK": "a b=c", "ANOTHER": "1"}
	r := runHostile(t, sb, "fds", svc.Single(task))[0].Results[0]
	expect(t, r, svc.OutcomeExited, 0)
	if strings.Contains(r.Stdout, secret) {
		t.Errorf("the service's environment reached the task:\n%s", r.Stdout)
	}
	l := parseLines(t, r.Stdout)
	wantEnv := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/svc", "TMPDIR=/tmp", "LANG=C.UTF-8", "ANOTHER=1", "SVC_TASK=a b=c"}
	if got := l["env"]; !slices.Equal(got, wantEnv) {
		t.Errorf("environment:\n got %q\nwant %q", got, wantEnv)
	}
	delete(l, "env")
	l.expectAll(t, map[string]string{
		"fds":  "0 1 2",
		"fd 0": "pipe",
		"fd 1": "pipe",
		"fd 2": "pipe",
	})
}

// TestIsolationDevProcSys: /dev holds exactly the harmless devices and
// links, /sys does not exist, the host interfaces of /proc are masked
// (files read as /dev/null, directories are empty), the host and domain
// names are "svc", and the task's cgroups are the roots of its cgroup
// namespace.
func TestIsolationDevProcSys(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	maskedFiles := []string{"kcore", "keys", "key-users", "timer_list", "sched_debug", "latency_stats",
		"kallsyms", "sysrq-trigger", "kmsg", "kpagecount", "kpageflags", "kpagecgroup", "vmallocinfo",
		"slabinfo", "pagetypeinfo", "zoneinfo", "buddyinfo", "mtrr", "interrupts"}
	maskedDirs := []string{"acpi", "scsi", "bus", "fs", "irq", "driver", "tty", "sysvipc"}
	// A file in /dev/shm first: the directory masks are the root's
	// /dev/shm directory under the shm tmpfs, which must not show it.
	script := `: > /dev/shm/probe
echo "dev	$(ls -A /dev | tr '\n' ' ')"
for d in null zero full random urandom; do echo "dev $d	$(stat -c '%F %t:%T' /dev/$d)"; done
for l in fd stdin stdout stderr; do echo "dev $l	$(readlink /dev/$l)"; done
echo "dev writes	$(echo x > /dev/null && echo null) $(if echo x 2>/dev/null > /dev/full; then echo full; else echo ENOSPC; fi) $(head -c 4 /dev/zero | od -An -tx1 | tr -d ' ')"
if [ -e /sys ]; then echo "sys	$(ls -A /sys | tr '\n' ' ')"; else echo "sys	absent"; fi
for f in ` + strings.Join(maskedFiles, " ") + `; do
	if [ -e /proc/$f ]; then echo "proc $f	$(stat -c '%F %t:%T' /proc/$f) $(head -c 64 /proc/$f | wc -c)"; else echo "proc $f	absent"; fi
done
for d in ` + strings.Join(maskedDirs, " ") + `; do
	if [ -e /proc/$d ]; then echo "proc $d	$(ls -A /proc/$d | wc -l) $(touch /proc/$d/x 2>/dev/null && echo rw || echo ro)"; else echo "proc $d	absent"; fi
done
echo "hostname	$(hostname)"
echo "nodename	$(uname -n)"
echo "domainname	$(cat /proc/sys/kernel/domainname)"
echo "cgroups	$(cut -d: -f3- /proc/self/cgroup | sort -u | tr '\n' ' ')"
echo "root	$(ls -A / | tr '\n' ' ')"`
	r := one(t, sb, sh(script))
	expect(t, r, svc.OutcomeExited, 0)
	want := map[string]string{
		"dev":         regexp.QuoteMeta("fd full null random shm stderr stdin stdout urandom zero "),
		"dev null":    "character special file 1:3",
		"dev zero":    "character special file 1:5",
		"dev full":    "character special file 1:7",
		"dev random":  "character special file 1:8",
		"dev urandom": "character special file 1:9",
		"dev fd":      "/proc/self/fd",
		"dev stdin":   "/proc/self/fd/0",
		"dev stdout":  "/proc/self/fd/1",
		"dev stderr":  "/proc/self/fd/2",
		"dev writes":  "null ENOSPC 00000000",
		"sys":         "absent",
		"hostname":    "svc",
		"nodename":    "svc",
		"domainname":  "svc",
		"cgroups":     "/ ",
		"root":        regexp.QuoteMeta(sandboxRoot() + " "),
	}
	// What the host's kernel has, the sandbox's procfs has: masked.
	for _, f := range maskedFiles {
		want["proc "+f] = "absent"
		if _, err := os.Stat("/proc/" + f); err == nil {
			want["proc "+f] = "character special file 1:3 0"
		}
	}
	for _, d := range maskedDirs {
		want["proc "+d] = "absent"
		if _, err := os.Stat("/proc/" + d); err == nil {
			want["proc "+d] = "0 ro"
		}
	}
	parseLines(t, r.Stdout).expectAll(t, want)
}

// hostProcess returns the host pid and real uid of a process whose command
// line holds s, or 0.
func hostProcess(s string) (pid, uid int) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), s) {
			continue
		}
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Uid:" {
				pid, _ = strconv.Atoi(filepath.Base(d))
				uid, _ = strconv.Atoi(f[1])
				return pid, uid
			}
		}
	}
	return 0, 0
}

// TestIsolationConcurrentRequests: two requests running at the same time
// have different host identities and share nothing: request Y finds none
// of the files request X placed or wrote in its workspace, /tmp and
// /dev/shm.
func TestIsolationConcurrentRequests(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	token := "svc-secret-" + randomHex(16)
	name := "svc-isolation-" + randomHex(8)
	ready := "svc-request-x-" + randomHex(8) + "-ready"

	// X writes its files, then waits until the test cancels it, as a
	// shell whose command line holds the ready marker.
	x := sh(`echo "$1" > /tmp/` + name + ` && echo "$1" > /dev/shm/` + name + ` &&
exec sh -c 'sleep 60; :' "$0-ready"`)
	x.Args = append(x.Args, strings.TrimSuffix(ready, "-ready"), token)
	x.Files = map[string]svc.File{name: {Content: token}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	xerr := make(chan error, 1)
	go func() {
		_, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{svc.Single(x)}})
		xerr <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	pid, uid := hostProcess(ready)
	for ; pid == 0; pid, uid = hostProcess(ready) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("request X did not get ready: %v", <-xerr)
		}
		time.Sleep(2 * time.Millisecond)
	}
	base, slots := sb.Config().UIDBase, svc.IdentitySlotsForTest(sb.Limits().MaxConcurrency)
	if uid < base || uid >= base+2*slots || (uid-base)%2 != 1 {
		t.Errorf("request X's task runs as host uid %d, not a task identity of [%d, %d)", uid, base, base+2*slots)
	}

	y := one(t, sb, sh(`find / \( -path /proc -o -path /usr -o -path /opt \) -prune -o -name '`+name+`' -print 2>/dev/null
for f in /svc/`+name+` /tmp/`+name+` /dev/shm/`+name+`; do cat $f 2>/dev/null && echo "read $f"; done
echo uid_map $(cat /proc/self/uid_map)`))
	cancel()
	if err := <-xerr; !errors.Is(err, svc.ErrCancelled) {
		t.Errorf("request X: %v, want cancelled", err)
	}
	expect(t, y, svc.OutcomeExited, 0)
	var yInit, yTask int
	if n, _ := fmt.Sscanf(y.Stdout, "uid_map 0 %d 1 1000 %d 1\n", &yInit, &yTask); n != 2 || yTask != yInit+1 ||
		yInit < base || yTask >= base+2*slots {
		t.Errorf("request Y: %q, want only its uid_map, in [%d, %d)", y.Stdout, base, base+2*slots)
	}
	if yTask == uid {
		t.Errorf("requests X and Y run at the same time as host uid %d", uid)
	}
}

// TestIsolationSequentialRequests: a request leaves nothing for later
// ones, whether they take a sandbox prepared before it ran or one built
// after: not its files in /svc, /tmp and /dev/shm, not its SysV shared
// memory segment and message queue (which outlive their processes in an
// IPC namespace). Each later request makes a segment of its own, which
// it must see, so that an ipcs that sees nothing proves nothing.
func TestIsolationSequentialRequests(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	token := "svc-secret-" + randomHex(16)
	a := sh(`for d in /svc /tmp /dev/shm; do echo "$1" > $d/left-by-a; done
ipcmk -M 4096 && ipcmk -Q && ipcs -m -q | grep -c '^0x'`)
	a.Args = append(a.Args, token)
	a.SandboxProfile = svc.ProfileCompileV1
	r := one(t, sb, a)
	expect(t, r, svc.OutcomeExited, 0)
	if !strings.HasSuffix(r.Stdout, "\n2\n") {
		t.Fatalf("request A did not make its IPC objects:\n%s%s", r.Stdout, r.Stderr)
	}
	// More requests than are prepared ahead: some take a sandbox built
	// before A ran, the rest one built after.
	b := sh(`ls -A /svc /tmp /dev/shm; grep -rl "$1" /svc /tmp /dev/shm 2>/dev/null
echo ipc $(ipcs -m -q | grep -c '^0x')
ipcmk -M 4096 >/dev/null && echo own $(ipcs -m | grep -c '^0x')`)
	b.Args = append(b.Args, token)
	b.SandboxProfile = svc.ProfileCompileV1
	want := "/dev/shm:\n\n/svc:\n\n/tmp:\nipc 0\nown 1\n" // ls sorts its arguments
	for i := range 8 {
		r := one(t, sb, b)
		expect(t, r, svc.OutcomeExited, 0)
		if r.Stdout != want {
			t.Errorf("request %d after A:\n got %q\nwant %q\n%s", i+1, r.Stdout, want, r.Stderr)
		}
	}
}

// TestIsolationNetworkFresh: nothing a task does in its network namespace
// reaches a later task. Namespaces are used again only when every process
// of their cell is gone and their /proc/net reads as when they were made
// (or no process could make a socket: native tasks). Request A talks to
// itself over loopback, keeps a listener bound, sends a datagram nowhere
// and leaves an abstract unix socket in flight in a garbage cycle; every
// later task must find its /proc/net as a fresh namespace's, A's port and
// abstract name free. Some later namespaces must have been used again
// (else the test proves nothing about the check).
func TestIsolationNetworkFresh(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{})
	const state = `import socket
for f in ["dev", "snmp", "snmp6", "netstat", "tcp", "tcp6", "udp", "udp6", "unix", "igmp", "igmp6"]:
    print(f, open("/proc/net/" + f).read())
`
	fresh := one(t, sb, svc.Task{Cmd: "python3", Args: []string{"-c", state}})
	expect(t, fresh, svc.OutcomeExited, 0)

	const hostile = `import array, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 40711)); s.listen()
c = socket.create_connection(("127.0.0.1", 40711)); a, _ = s.accept()
c.sendall(b"x" * 100000); c.close()
n = 0
while n < 100000: n += len(a.recv(65536))
try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("10.9.9.9", 9))
except OSError: pass
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); u.bind("\0svc-hostile")
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
for x in (a, b, u):
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [x.fileno()]))])
print(open("/proc/net/dev").read().split("lo:")[1].split()[0])`
	// compile_v1, the widest profile (sendmsg among it).
	r := one(t, sb, svc.Task{Cmd: "python3", Args: []string{"-c", hostile}, SandboxProfile: svc.ProfileCompileV1})
	expect(t, r, svc.OutcomeExited, 0)
	if n, err := strconv.Atoi(strings.TrimSpace(r.Stdout)); err != nil || n < 100000 {
		t.Fatalf("request A's loopback received %q bytes, want at least 100000: its traffic proves nothing otherwise\n%s", r.Stdout, r.Stderr)
	}
	_, reused0, kept0, _ := runner.NetnsCounts()
	const check = `import socket
s = socket.socket(); s.bind(("127.0.0.1", 40711))
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); u.bind("\0svc-hostile")
s.close(); u.close()
`
	// Batches, so that namespaces given back reach the checks: in turn
	// one by one, a namespace could go round the native tasks only.
	for round := range 3 {
		for range 4 {
			expect(t, one(t, sb, svc.Task{Cmd: "/bin/true", SandboxProfile: svc.ProfileNativeV2}), svc.OutcomeExited, 0)
		}
		for i := range 4 {
			r := one(t, sb, svc.Task{Cmd: "python3", Args: []string{"-c", check + state}})
			expect(t, r, svc.OutcomeExited, 0)
			if r.Stdout != fresh.Stdout {
				t.Errorf("round %d, task %d after A: /proc/net differs from a fresh namespace's:\n got %s\nwant %s\n%s", round, i, r.Stdout, fresh.Stdout, r.Stderr)
			}
		}
	}
	if _, reused, kept, _ := runner.NetnsCounts(); reused == reused0 || kept == kept0 {
		t.Errorf("in 24 requests, %d network namespaces read unchanged and kept, %d used again: the check above proves nothing unless both", kept-kept0, reused-reused0)
	}
}

// shellLeaver is a hostile task for TestIsolationShellReuse: it leaves
// what it can for later requests of its identity slot. Processes (in the
// background, in a new session, stopped), files in /tmp and /dev/shm, a
// SysV shared memory segment, a POSIX message queue and an abstract unix
// socket listening; then it exits 0.
const shellLeaver = `
import ctypes, os, signal, socket, subprocess
libc = ctypes.CDLL(None, use_errno=True)
assert libc.shmget(0x5cc, 4096, 0o1000 | 0o600) >= 0, "shmget"
assert libc.mq_open(b"/svc-left", os.O_CREAT | os.O_RDWR, 0o600, None) >= 0, "mq_open"
open("/tmp/left", "w").write("x")
open("/dev/shm/left", "w").write("x")
s = socket.socket(socket.AF_UNIX); s.bind("\0svc-left"); s.listen()
subprocess.Popen(["sleep", "1000"], start_new_session=True)
p = subprocess.Popen(["sleep", "1000"]); os.kill(p.pid, signal.SIGSTOP)
if os.fork() == 0:
    signal.pause()
print(os.getpid())
`

// shellFinder reports what a task finds of an earlier one.
const shellFinder = `
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
found = []
if libc.shmget(0x5cc, 0, 0) >= 0: found.append("shm segment")
if libc.mq_open(b"/svc-left", os.O_RDWR) >= 0: found.append("message queue")
for f in ["/tmp/left", "/dev/shm/left"]:
    if os.path.exists(f): found.append(f)
s = socket.socket(socket.AF_UNIX)
try: s.bind("\0svc-left")
except OSError: found.append("abstract socket")
procs = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
print(os.getpid(), procs, found)
`

// TestIsolationShellReuse: sandboxes are shells reused from request to
// request of an identity slot (internal/runner's Shell), so a request
// must find nothing of an earlier one. With one slot, hostile requests
// (shellLeaver) alternate with requests that look (shellFinder): each of
// these must see itself as pid 2 and alone in /proc, and none of what the
// leavers left. Fewer shells than requests must have been made, or the
// test proves nothing. (internal/runner's TestShellReuse does the same
// within one shell, deterministically.)
func TestIsolationShellReuse(t *testing.T) {
	sb := newIsolationSandbox(t, svc.Config{Limits: svc.Limits{MaxConcurrency: 1, MaxParallelTasks: 1}})
	made0, cells0 := runner.ShellCounts()
	py := func(src string) svc.Task {
		return svc.Task{Cmd: "python3", Args: []string{"-c", src}, SandboxProfile: hostileProfile}
	}
	const pairs = 8
	for i := range pairs {
		l := one(t, sb, py(shellLeaver))
		expect(t, l, svc.OutcomeExited, 0)
		if got := strings.TrimSpace(l.Stdout); got != "2" {
			t.Errorf("leaver %d is pid %q, want 2", i, got)
		}
		f := one(t, sb, py(shellFinder))
		expect(t, f, svc.OutcomeExited, 0)
		if got := strings.TrimSpace(f.Stdout); got != "2 [2] []" {
			t.Errorf("request after leaver %d found: %q, want pid 2, alone in /proc, nothing left", i, got)
		}
	}
	made, cells := runner.ShellCounts()
	t.Logf("%d requests: %d shells made, %d tasks run in them", 2*pairs, made-made0, cells-cells0)
	if made-made0 >= 2*pairs/2 {
		t.Errorf("%d shells made for %d requests: shells were not reused", made-made0, 2*pairs)
	}
}

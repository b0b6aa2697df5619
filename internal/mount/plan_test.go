package mount

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var testSys = []SystemEntry{{Name: "bin", Target: "usr/bin"}, {Name: "etc"}, {Name: "usr"}}

var testParams = Params{RootFS: "/host", Skeleton: "/skel", ShmSize: 1 << 20}

// testPlan is what a task's sandbox is made of: the shell's plan, and the
// task's own mounts before its pivot_root (relative to the root, they are
// the same either side of it).
func testPlan() Plan {
	sh := ShellPlan(testParams, testSys)
	n := len(sh)
	return append(append(sh[:n-1:n-1], TaskMounts(testParams)...), sh[n-1])
}

// TestPlanOrder checks the invariants init.c relies on: private
// propagation first, the skeleton bound on itself as the root next, then a
// chdir into it, every later path in the root relative and a mount point
// in the skeleton (MakeSkeleton and ShellPlan agree), a bind source inside
// the root bound before it is used, pivot_root last.
func TestPlanOrder(t *testing.T) {
	p := testPlan()
	if p[0].Kind != Mount || p[0].Dst != "/" || p[0].Flags == 0 {
		t.Errorf("first op %+v, want the private propagation of /", p[0])
	}
	if p[1].Kind != Bind || p[1].Src != "/skel" || p[1].Dst != "/skel" || p[1].Attr != ro|nosuid|nodev|noexec {
		t.Errorf("second op %+v, want the skeleton bound on itself, read-only, nosuid, nodev, noexec", p[1])
	}
	if p[2].Kind != Chdir || p[2].Dst != "/skel" {
		t.Errorf("third op %+v, want a chdir into the bound root", p[2])
	}
	n := len(p)
	if p[n-1].Kind != Pivot || p[n-1].Dst != "." {
		t.Errorf("last op %+v, want pivot_root of the working directory", p[n-1])
	}
	skel := filepath.Join(t.TempDir(), "skel")
	if err := MakeSkeleton(skel, testSys); err != nil {
		t.Fatal(err)
	}
	bound := map[string]bool{}
	for i, op := range p[3 : n-1] {
		if filepath.IsAbs(op.Dst) || filepath.Clean(op.Dst) != op.Dst || strings.HasPrefix(op.Dst, "..") {
			t.Errorf("op %d %+v: destination not a clean path relative to the root", i+3, op)
			continue
		}
		if !strings.HasPrefix(op.Dst, "proc/") { // procfs entries exist once proc is mounted
			if _, err := os.Lstat(filepath.Join(skel, op.Dst)); err != nil {
				t.Errorf("op %d %+v: mount point not in the skeleton: %v", i+3, op, err)
			}
		}
		// A relative source is inside the root: bound before, or the
		// skeleton's own empty /dev/shm; an absolute one is on the host.
		if op.Kind == Bind && !filepath.IsAbs(op.Src) && op.Src != "dev/shm" && op.Src != op.Dst && !bound[op.Src] {
			t.Errorf("op %d %+v: source not bound before", i+3, op)
		}
		bound[op.Dst] = true
	}
}

// TestMakeSkeleton: the skeleton's entries, their kinds and modes.
func TestMakeSkeleton(t *testing.T) {
	skel := filepath.Join(t.TempDir(), "skel")
	if err := MakeSkeleton(skel, testSys); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		".": "drwxr-xr-x", "etc": "drwxr-xr-x", "usr": "drwxr-xr-x", "svc": "drwxr-xr-x",
		"tmp": "dtrwxrwxrwx", "proc": "dr-xr-xr-x", "dev": "drwxr-xr-x", "dev/shm": "dtrwxrwxrwx",
		"dev/null": "-rw-r--r--", "dev/urandom": "-rw-r--r--", "bin": "Lrwxrwxrwx", "dev/fd": "Lrwxrwxrwx",
	} {
		fi, err := os.Lstat(filepath.Join(skel, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := fi.Mode().String(); got != want {
			t.Errorf("%s: mode %s, want %s", name, got, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(skel, "bin")); err != nil || l != "usr/bin" {
		t.Errorf("bin -> %q (%v), want usr/bin", l, err)
	}
	if l, err := os.Readlink(filepath.Join(skel, "dev/stderr")); err != nil || l != "/proc/self/fd/2" {
		t.Errorf("dev/stderr -> %q (%v)", l, err)
	}
	if err := MakeSkeleton(skel, testSys); err == nil {
		t.Error("MakeSkeleton over an existing skeleton succeeded; want an error, not a silent mix")
	}
}

func TestPlanContents(t *testing.T) {
	p := testPlan()
	find := func(kind Kind, dst string) *Op {
		i := slices.IndexFunc(p, func(o Op) bool { return o.Kind == kind && o.Dst == dst })
		if i < 0 {
			t.Fatalf("no %s of %s", kind, dst)
		}
		return &p[i]
	}
	for _, d := range []string{"etc", "usr"} {
		op := find(Bind, d)
		if op.Src != filepath.Join("/host", d) || op.Attr != ro|nosuid|nodev {
			t.Errorf("system dir %s: %+v", d, op)
		}
	}
	if op := find(Attach, "svc"); op.Src != "0" || op.Attr != nosuid|nodev {
		t.Errorf("workspace: %+v, want tree 0, read-write, nosuid, nodev", op)
	}
	if op := find(Attach, "tmp"); op.Src != "1" || op.Attr != nosuid|nodev {
		t.Errorf("tmp: %+v, want tree 1, read-write, nosuid, nodev", op)
	}
	for _, d := range Devices {
		if op := find(Bind, "dev/"+d); op.Src != "/dev/"+d || op.Attr&nodev != 0 || op.Attr&(ro|nosuid|noexec) != ro|nosuid|noexec {
			t.Errorf("device %s: %+v, want read-only, nosuid, noexec and not nodev (a nodev device cannot be opened)", d, op)
		}
	}
	// /dev is a directory of the root, read-only with it.
	if slices.ContainsFunc(p, func(o Op) bool { return o.Kind == Mount && o.Dst == "dev" }) {
		t.Errorf("/dev has a mount of its own")
	}
	if op := find(Bind, "proc/sys"); op.Attr&ro == 0 {
		t.Errorf("/proc/sys not read-only: %+v", op)
	}
	// A mask takes the flags of the /dev/null it binds (checked above).
	if op := find(Bind, "proc/kcore"); op.Src != "dev/null" || !op.Optional || op.Attr != 0 {
		t.Errorf("kcore mask: %+v", op)
	}
	// A directory mask is the empty /dev/shm of the root, bound before
	// the shm tmpfs covers it, with the root's flags (checked above).
	op := find(Bind, "proc/acpi")
	if op.Src != "dev/shm" || !op.Optional || op.Attr != 0 {
		t.Errorf("acpi mask: %+v", op)
	}
	mask := slices.IndexFunc(p, func(o Op) bool { return o.Kind == Bind && o.Dst == "proc/acpi" })
	shm := slices.IndexFunc(p, func(o Op) bool { return o.Kind == Mount && o.Dst == "dev/shm" })
	if shm < 0 || p[shm].FSType != "tmpfs" || shm < mask {
		t.Errorf("the shm tmpfs (op %d) must be mounted after the masks bind its directory (op %d)", shm, mask)
	}
	for _, op := range p {
		if op.Dst == "sys" || strings.HasPrefix(op.Dst, "sys/") {
			t.Errorf("/sys must not exist in the sandbox: %+v", op)
		}
	}
}

func TestScanRootFS(t *testing.T) {
	dir := t.TempDir()
	if _, err := ScanRootFS(dir); err == nil {
		t.Error("an empty root filesystem was accepted")
	}
	sys, err := ScanRootFS("/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sys, func(e SystemEntry) bool { return e.Name == "usr" && e.Target == "" }) {
		t.Errorf("/usr not found as a directory: %+v", sys)
	}
}

// TestShellPlan: a shell's plan leaves out the task's own mounts, which
// TaskMounts gives, ends with pivot_root, and mounts /proc so that the
// init is invisible.
func TestShellPlan(t *testing.T) {
	shell, task := ShellPlan(testParams, testSys), TaskMounts(testParams)
	for _, op := range task {
		if slices.ContainsFunc(shell, func(o Op) bool { return o.Dst == op.Dst }) {
			t.Errorf("task mount %+v in the shell's plan", op)
		}
	}
	if n := len(shell); shell[n-1].Kind != Pivot {
		t.Errorf("last op %+v, want pivot_root", shell[n-1])
	}
	i := slices.IndexFunc(shell, func(o Op) bool { return o.FSType == "proc" })
	if i < 0 || shell[i].Data != "hidepid=invisible" {
		t.Errorf("shell proc mount %+v, want hidepid=invisible", shell)
	}
	for _, dst := range []string{"svc", "tmp", "dev/shm"} {
		if !slices.ContainsFunc(task, func(o Op) bool { return o.Dst == dst }) {
			t.Errorf("no task mount of %s", dst)
		}
	}
	// The shell undoes the task's mounts with one unmount of the last,
	// the others moved into it: it must be a tmpfs of the task's own.
	if last := task[len(task)-1]; last.Kind != Mount || last.FSType != "tmpfs" {
		t.Errorf("last task mount %+v, want the task's own tmpfs", last)
	}
}

// TestShellPlanFiles: /usr/local/bin and Go's go.env, when given, are
// bound read-only after /usr, which holds their mount points.
func TestShellPlanFiles(t *testing.T) {
	params := testParams
	params.LocalBin, params.GoEnv = "/run/localbin", "/run/goenv"
	p := ShellPlan(params, testSys)
	usr := slices.IndexFunc(p, func(o Op) bool { return o.Kind == Bind && o.Dst == "usr" })
	for _, b := range []struct{ src, dst string }{{"/run/localbin", "usr/local/bin"}, {"/run/goenv", GoEnvPath}} {
		i := slices.IndexFunc(p, func(o Op) bool { return o.Kind == Bind && o.Dst == b.dst })
		if i < 0 {
			t.Errorf("no bind of %s", b.dst)
			continue
		}
		if op := p[i]; op.Src != b.src || op.Attr != ro|nosuid|nodev || i < usr {
			t.Errorf("bind of %s: op %d %+v, want %s read-only, nosuid, nodev after /usr (op %d)", b.dst, i, op, b.src, usr)
		}
	}
	for _, d := range []string{"usr/local/bin", GoEnvPath} {
		if slices.ContainsFunc(ShellPlan(testParams, testSys), func(o Op) bool { return o.Dst == d }) {
			t.Errorf("%s bound with no file given", d)
		}
	}
}

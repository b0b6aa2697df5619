package mount

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testPlan() Plan {
	return Build(Params{RootFS: "/host", NewRoot: "/r", Workspace: "/ws", Tmp: "/tmp-r", ShmSize: 1 << 20},
		[]SystemEntry{{Name: "bin", Target: "usr/bin"}, {Name: "etc"}, {Name: "usr"}})
}

// TestPlanOrder checks the invariants init.c relies on: private
// propagation first, every mount point made before it is used, /dev/null
// bound before masks use it, pivot_root then a read-only root last.
func TestPlanOrder(t *testing.T) {
	p := testPlan()
	if p[0].Kind != Mount || p[0].Dst != "/" || p[0].Flags == 0 {
		t.Errorf("first op %+v, want the private propagation of /", p[0])
	}
	n := len(p)
	if p[n-2].Kind != Pivot || p[n-2].Dst != "/r" || p[n-1].Kind != SetAttr || p[n-1].Dst != "/" || p[n-1].Attr&ro == 0 {
		t.Errorf("last ops %+v %+v, want pivot then a read-only root", p[n-2], p[n-1])
	}
	made := map[string]bool{"/r": true}
	for i, op := range p[:n-2] {
		if op.Kind == Mkdir || op.Kind == Touch || op.Kind == Symlink {
			made[op.Dst] = true
			continue
		}
		if i == 0 || op.Kind == SetAttr || strings.HasPrefix(op.Dst, "/r/proc/") {
			continue // procfs entries exist once proc is mounted
		}
		if !made[op.Dst] && op.Dst != "/r" {
			t.Errorf("op %d %+v: mount point not made before", i, op)
		}
		if op.Kind == Bind && strings.HasPrefix(op.Src, "/r/") && !made[op.Src] {
			t.Errorf("op %d %+v: source not made before", i, op)
		}
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
	if op := find(Symlink, "/r/bin"); op.Src != "usr/bin" {
		t.Errorf("merged /usr symlink: %+v", op)
	}
	for _, d := range []string{"etc", "usr"} {
		op := find(Bind, filepath.Join("/r", d))
		if op.Src != filepath.Join("/host", d) || op.Attr != ro|nosuid|nodev {
			t.Errorf("system dir %s: %+v", d, op)
		}
	}
	if op := find(Bind, "/r/svc"); op.Src != "/ws" || op.Attr&ro != 0 || op.Attr&nosuid == 0 {
		t.Errorf("workspace: %+v", op)
	}
	if op := find(Bind, "/r/tmp"); op.Src != "/tmp-r" || op.Attr&ro != 0 {
		t.Errorf("tmp: %+v", op)
	}
	for _, d := range Devices {
		if op := find(Bind, "/r/dev/"+d); op.Src != "/dev/"+d || op.Attr&nodev != 0 || op.Attr&(ro|nosuid|noexec) != ro|nosuid|noexec {
			t.Errorf("device %s: %+v, want read-only, nosuid, noexec and not nodev (a nodev device cannot be opened)", d, op)
		}
	}
	// /dev is a directory of the root, read-only with it.
	if slices.ContainsFunc(p, func(o Op) bool { return o.Kind == Mount && o.Dst == "/r/dev" }) {
		t.Errorf("/dev has a mount of its own")
	}
	if op := find(SetAttr, "/"); op.Attr&ro == 0 {
		t.Errorf("root not read-only: %+v", op)
	}
	if op := find(Bind, "/r/proc/sys"); op.Attr&ro == 0 {
		t.Errorf("/proc/sys not read-only: %+v", op)
	}
	// A mask takes the flags of the /dev/null it binds (checked above).
	if op := find(Bind, "/r/proc/kcore"); op.Src != "/r/dev/null" || !op.Optional || op.Attr != 0 {
		t.Errorf("kcore mask: %+v", op)
	}
	// A directory mask is the empty /dev/shm of the root, bound read-only
	// before the shm tmpfs covers it.
	op := find(Bind, "/r/proc/acpi")
	if op.Src != "/r/dev/shm" || !op.Optional || op.Attr&ro == 0 {
		t.Errorf("acpi mask: %+v", op)
	}
	mask := slices.IndexFunc(p, func(o Op) bool { return o.Kind == Bind && o.Dst == "/r/proc/acpi" })
	shm := slices.IndexFunc(p, func(o Op) bool { return o.Kind == Mount && o.Dst == "/r/dev/shm" })
	if shm < 0 || p[shm].FSType != "tmpfs" || shm < mask {
		t.Errorf("the shm tmpfs (op %d) must be mounted after the masks bind its directory (op %d)", shm, mask)
	}
	for _, op := range p {
		if strings.HasPrefix(op.Dst, "/r/sys") {
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

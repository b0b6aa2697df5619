// Package mount plans the mount namespace of a sandbox as plain data. The
// plan is built and tested anywhere; the child side (internal/initproc)
// applies it in order inside the new mount namespace, before pivot_root.
package mount

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Kind is a mount operation. The values are the protocol strings of
// internal/initproc/proto.h.
type Kind string

// The operations the child side knows.
const (
	Mount Kind = "mount" // mount(Src, Dst, FSType, Flags, Data), then Attr
	Bind  Kind = "bind"  // recursive bind Src on Dst, then Attr on the whole tree
	// Attach moves the detached mount tree number Src ("0", "1": see
	// [WorkspaceTree]) that the init was given onto Dst, then sets Attr
	// on the whole tree.
	Attach Kind = "attach"
	Chdir  Kind = "chdir" // chdir(Dst): later relative paths start there
	Pivot  Kind = "pivot" // make Dst the root and detach the old one
)

// Op is one operation. Attr is a set of MOUNT_ATTR_* bits that are set
// (never cleared, so flags the kernel locked stay as they are).
type Op struct {
	Kind     Kind
	Src      string
	Dst      string
	FSType   string
	Data     string
	Flags    uintptr
	Attr     uint64
	Optional bool // a missing Dst (ENOENT) is skipped
}

// Plan is an ordered list of operations.
type Plan []Op

// The mount attributes (MOUNT_ATTR_*) and mount flags (MS_*) the plan
// uses, with Linux's values: the plan is data, built and tested on any
// system, and applied on Linux only. consts_linux_test.go checks them
// against those of golang.org/x/sys/unix.
const (
	ro     = 0x1 // MOUNT_ATTR_RDONLY
	nosuid = 0x2 // MOUNT_ATTR_NOSUID
	nodev  = 0x4 // MOUNT_ATTR_NODEV
	noexec = 0x8 // MOUNT_ATTR_NOEXEC

	msNosuid  = 0x2     // MS_NOSUID
	msNodev   = 0x4     // MS_NODEV
	msNoexec  = 0x8     // MS_NOEXEC
	msRec     = 0x4000  // MS_REC
	msPrivate = 0x40000 // MS_PRIVATE
)

// SystemDirs are the directories of the root filesystem bound read-only
// into every sandbox, when they exist.
var SystemDirs = []string{"bin", "etc", "lib", "lib32", "lib64", "libx32", "opt", "sbin", "usr"}

// Devices are the device nodes of /dev, bound from the host's.
var Devices = []string{"null", "zero", "full", "random", "urandom"}

// maskedProc are procfs paths that expose the host as a whole (its
// activity, hardware and configuration, kernel internals, other users'
// state) or kernel interfaces, and that real programs do not need; each is
// covered (files by a read-only bind of /dev/null, directories by a
// read-only bind of an empty directory) where the kernel has it. What
// programs read stays: cpuinfo, meminfo, stat, loadavg, uptime, version,
// filesystems, cgroups (the JVM's container detection), the task's own
// processes, mounts and network, and /proc/sys read-only but for the
// host-wide counters below. docs/security.md lists both.
var maskedProc = []struct {
	path string
	dir  bool
}{
	// Kernel memory, symbols and interfaces.
	{"kcore", false}, {"kmsg", false}, {"kallsyms", false}, {"modules", false},
	{"sysrq-trigger", false}, {"kpagecount", false}, {"kpageflags", false},
	{"kpagecgroup", false}, {"vmallocinfo", false}, {"slabinfo", false},
	{"allocinfo", false}, {"timer_list", false}, {"sched_debug", false},
	{"latency_stats", false}, {"dynamic_debug", true},
	// The host's activity: every process's, not the task's.
	{"diskstats", false}, {"vmstat", false}, {"softirqs", false},
	{"interrupts", false}, {"schedstat", false}, {"zoneinfo", false},
	{"buddyinfo", false}, {"pagetypeinfo", false}, {"pressure", true},
	{"locks", false}, {"swaps", false}, {"mdstat", false},
	// Other users' keys.
	{"keys", false}, {"key-users", false},
	// The machine: boot configuration, devices and drivers.
	{"cmdline", false}, {"config.gz", false}, {"bootconfig", false},
	{"partitions", false}, {"iomem", false}, {"ioports", false}, {"dma", false},
	{"devices", false}, {"misc", false}, {"consoles", false}, {"crypto", false},
	{"mtrr", false}, {"fb", false},
	{"acpi", true}, {"scsi", true}, {"bus", true}, {"fs", true},
	{"irq", true}, {"driver", true}, {"tty", true}, {"sysvipc", true},
	// Host-wide counters of /proc/sys (read-only in the sandbox): open
	// files, inodes and dentries, AIO events, ptys of the whole host.
	{"sys/fs/file-nr", false}, {"sys/fs/inode-nr", false},
	{"sys/fs/inode-state", false}, {"sys/fs/dentry-state", false},
	{"sys/fs/aio-nr", false}, {"sys/kernel/pty/nr", false},
}

// Params describe one sandbox's filesystem.
type Params struct {
	RootFS   string // host directory whose SystemDirs are bound read-only
	Skeleton string // host directory made by MakeSkeleton from RootFS's entries
	ShmSize  int64  // bytes of /dev/shm
	// LocalBin, if set, is a host directory bound read-only over the
	// sandbox's /usr/local/bin: RootFS's own with the commands of
	// toolchains installed off the task PATH added (see the svc package's
	// localBin).
	LocalBin string
	// GoEnv, if set, is a host file bound read-only over the sandbox's
	// /usr/local/go/go.env, the defaults of Go's configuration: RootFS's
	// own with the place of the build cache added (see the svc package's
	// Config.GoBuildCache).
	GoEnv string
}

// GoEnvPath is where Go's official distribution keeps its go.env, relative
// to the root.
const GoEnvPath = "usr/local/go/go.env"

// The detached mount trees a sandbox's init is given, in this order: the
// request's workspace, attached read-write at /svc, and its /tmp. The
// runner clones each from the service's own mount (open_tree), so the
// sandbox needs no path to them and no propagation of the service's
// mounts into its namespace.
const (
	WorkspaceTree = iota
	TmpTree
)

// SystemEntry is a system directory found in the root filesystem: a real
// directory to bind, or a symlink (merged /usr) to recreate.
type SystemEntry struct {
	Name   string
	Target string // symlink target; "" for a directory
}

// ScanRootFS lists the SystemDirs present in rootfs. Done once per
// Sandbox, not per task.
func ScanRootFS(rootfs string) ([]SystemEntry, error) {
	var out []SystemEntry
	for _, name := range SystemDirs {
		p := filepath.Join(rootfs, name)
		fi, err := os.Lstat(p)
		switch {
		case os.IsNotExist(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("scan root filesystem: %w", err)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("scan root filesystem: %w", err)
			}
			out = append(out, SystemEntry{Name: name, Target: target})
		case fi.IsDir():
			out = append(out, SystemEntry{Name: name})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("scan root filesystem %s: none of %s found", rootfs, strings.Join(SystemDirs, ", "))
	}
	return out, nil
}

// MakeSkeleton makes, in the empty or missing directory dir, the
// directories, links and empty files that every sandbox root holds: the
// system directories of sys (or their merged-/usr links), the mount
// points of /svc, /tmp, /proc and /dev/shm, and /dev with its device bind
// targets and links. ShellPlan binds it read-only as the root of every
// sandbox, so no sandbox makes them again. Done once per Sandbox; dir
// must be searchable by the sandbox identities.
func MakeSkeleton(dir string, sys []SystemEntry) error {
	type entry struct {
		name, target string // target: a symlink
		mode         os.FileMode
		file         bool
	}
	var ents []entry
	for _, e := range sys {
		ents = append(ents, entry{name: e.Name, target: e.Target, mode: 0o755})
	}
	ents = append(ents,
		entry{name: "svc", mode: 0o755}, entry{name: "tmp", mode: os.ModeSticky | 0o777},
		entry{name: "proc", mode: 0o555}, entry{name: "dev", mode: 0o755},
		entry{name: "dev/shm", mode: os.ModeSticky | 0o777})
	for _, d := range Devices {
		ents = append(ents, entry{name: "dev/" + d, mode: 0o644, file: true})
	}
	for _, l := range devLinks {
		ents = append(ents, entry{name: "dev/" + l[0], target: l[1]})
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return fmt.Errorf("sandbox root skeleton: %w", err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.name)
		var err error
		switch {
		case e.target != "":
			err = os.Symlink(e.target, p)
		case e.file:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, e.mode); err == nil {
				err = f.Close()
			}
		default:
			if err = os.Mkdir(p, e.mode); err == nil {
				err = os.Chmod(p, e.mode) // past the umask, with the sticky bit
			}
		}
		if err != nil {
			return fmt.Errorf("sandbox root skeleton: %w", err)
		}
	}
	return os.Chmod(dir, 0o755)
}

// devLinks are the symbolic links of /dev: name, target.
var devLinks = [][2]string{
	{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
}

// ShellPlan returns the plan of a shell's mount namespace, which serves one
// task after another: a private propagation, the skeleton (see
// [MakeSkeleton]) bound on itself as the root with the system directories
// read-only in it, a procfs of the shell's PID namespace mounted
// hidepid=invisible (a task sees its own processes, not the shell's init)
// with host interfaces masked, a minimal /dev, no /sys, then pivot_root.
// Each task's own mounts ([TaskMounts]) come after it, and go with the
// task. The skeleton's directories are the mount points: the plan makes no
// file, and the root is read-only from its first bind (a mount point needs
// no write access).
//
// Once the root is bound, the plan works in it: a chdir, and every later
// path inside the root is relative, so the kernel walks two components
// instead of the state directory's eight or so for each of some forty
// operations.
func ShellPlan(p Params, sys []SystemEntry) Plan {
	plan := Plan{
		// Nothing we mount propagates back to the host.
		{Kind: Mount, Dst: "/", Flags: msRec | msPrivate},
		// The root: shared by every sandbox and read-only in each, so
		// none can change it for another. Bound on itself, so no
		// sandbox needs a directory of its own to build on.
		{Kind: Bind, Src: p.Skeleton, Dst: p.Skeleton, Attr: ro | nosuid | nodev | noexec},
		// After the bind, so the working directory is the bound root.
		{Kind: Chdir, Dst: p.Skeleton},
	}
	for _, e := range sys {
		if e.Target == "" {
			plan = append(plan, Op{Kind: Bind, Src: filepath.Join(p.RootFS, e.Name), Dst: e.Name, Attr: ro | nosuid | nodev})
		}
	}
	if p.LocalBin != "" {
		plan = append(plan, Op{Kind: Bind, Src: p.LocalBin, Dst: "usr/local/bin", Attr: ro | nosuid | nodev})
	}
	if p.GoEnv != "" {
		plan = append(plan, Op{Kind: Bind, Src: p.GoEnv, Dst: GoEnvPath, Attr: ro | nosuid | nodev})
	}

	// /dev: a directory of the root with the harmless devices bound from
	// the host. A device bind is read-only: a device node is written
	// through on a read-only mount, and the /proc masks bound from
	// /dev/null take its flags.
	for _, d := range Devices {
		plan = append(plan, Op{Kind: Bind, Src: filepath.Join("/dev", d), Dst: filepath.Join("dev", d), Attr: ro | nosuid | noexec})
	}
	const shm = "dev/shm"

	// /proc of the task's own PID namespace.
	plan = append(plan,
		Op{Kind: Mount, Src: "proc", Dst: "proc", FSType: "proc", Data: "hidepid=invisible",
			Flags: msNosuid | msNodev | msNoexec},
		Op{Kind: Bind, Src: "proc/sys", Dst: "proc/sys", Attr: ro | nosuid | nodev | noexec},
	)
	for _, m := range maskedProc {
		dst := filepath.Join("proc", m.path)
		if m.dir {
			// The empty /dev/shm directory of the root, before its tmpfs
			// covers it: no superblock of its own, and the root's flags
			// (read-only, nosuid, nodev, noexec) with no mount_setattr.
			plan = append(plan, Op{Kind: Bind, Src: shm, Dst: dst, Optional: true})
		} else {
			// Read-only, nosuid and noexec like the /dev/null it binds:
			// no mount_setattr each.
			plan = append(plan, Op{Kind: Bind, Src: "dev/null", Dst: dst, Optional: true})
		}
	}

	// The masks bind the empty /dev/shm: its tmpfs comes with the task's
	// mounts, after them.
	return append(plan, Op{Kind: Pivot, Dst: "."})
}

// TaskMounts are the mounts of one task, relative to the sandbox's root
// (its working directory before and after pivot_root): the workspace and
// /tmp trees, attached read-write at /svc and /tmp, and a fresh /dev/shm.
// The last is the task's own tmpfs: after the task, the shell moves the
// others into it and unmounts them all at once (one RCU grace period
// instead of three).
func TaskMounts(p Params) Plan {
	return Plan{
		{Kind: Attach, Src: strconv.Itoa(WorkspaceTree), Dst: "svc", Attr: nosuid | nodev},
		{Kind: Attach, Src: strconv.Itoa(TmpTree), Dst: "tmp", Attr: nosuid | nodev},
		{Kind: Mount, Src: "svc-shm", Dst: "dev/shm", FSType: "tmpfs",
			Flags: msNosuid | msNodev | msNoexec,
			Data:  fmt.Sprintf("size=%d,nr_inodes=1024,mode=1777", p.ShmSize)},
	}
}

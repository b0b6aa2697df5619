package seccomp

import (
	"embed"
	"fmt"
	"slices"
	"sync"
)

// The profile names (spec 2.1, 9).
const (
	CompileV2 = "compile_v2"
	NativeV2  = "native_v2"
	CompileV1 = "compile_v1"
	NativeV1  = "native_v1"
)

// Action is what a filter does with a system call.
type Action int

// The actions of the profiles.
const (
	// Allow lets the call through.
	Allow Action = iota
	// ENOSYS fails the call with ENOSYS; the task goes on. libc and the
	// Go runtime treat ENOSYS as "this kernel lacks the call" and fall
	// back (clone3 to clone, for instance).
	ENOSYS
	// Kill kills the whole task with SIGSYS (SECCOMP_RET_KILL_PROCESS): no
	// handler runs, every thread dies.
	Kill
	// Notify stops the call until the filter's listener has been told
	// (SECCOMP_RET_USER_NOTIF), which lets it through as Allow would
	// (SECCOMP_USER_NOTIF_FLAG_CONTINUE); with no listener the call fails
	// with ENOSYS. Only [Watched] profiles have it.
	Notify
	// EACCES fails the call with EACCES: a rule's refusal of a call the
	// policy forbids where trying must not kill (glibc's user lookups
	// try nscd's unix socket first, and fall back to /etc/passwd).
	EACCES
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case ENOSYS:
		return "ENOSYS"
	case Kill:
		return "kill"
	case Notify:
		return "notify"
	case EACCES:
		return "EACCES"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Cond is a condition on the first argument: (arg0 & Mask) == Value, or
// with Ne, arg0 != Value in any of its 64 bits (Mask unused). Masks stay
// within the low 32 bits, like the kernel, which reads the clone flags and
// socket domains these conditions test as 32-bit values: high bits a
// caller sets cannot steer a call past a rule. The one exception is a
// pair that splits a call's every value in two, Mask all 64 bits with
// Value v, and Ne with v: high bits make a value unequal and select the
// Ne rule, which is the stricter one.
type Cond struct {
	Mask, Value uint64
	Ne          bool
}

// Holds reports whether the condition holds for arg0.
func (c *Cond) Holds(arg0 uint64) bool {
	if c.Ne {
		return arg0 != c.Value
	}
	return arg0&c.Mask == c.Value
}

// Rule gives the action for a system call, when its condition (if any)
// holds. Several rules for one call are alternatives; the rules of a call
// must never overlap with different actions. A call no rule matches gets the
// profile's default (allowlisted calls are Allow rules).
type Rule struct {
	Syscall string
	Action  Action
	Arg0    *Cond
}

// Profile is one system-call policy, as data; Build turns it into a
// filter. The profiles Lookup returns are shared: read them from any
// goroutine, never modify them.
type Profile struct {
	Name string
	// Default is the action for calls that no rule matches: ENOSYS for an
	// allowlist (v2), Allow for a denylist (v1).
	Default Action
	// Rules of the profile: the dangerous set, the process and socket
	// rules, and for v2 the allowlist table.
	Rules []Rule
	// Table is the allowlist of a v2 profile, as read from its file; nil
	// for v1.
	Table *Table
}

// Dangerous is the set killed in every profile (the "dangerous set" of the
// profiles' issue), grouped by what it reaches.
var Dangerous = []Group{
	{Comment: []string{"Namespaces and mounts: a task stays in the namespaces and the root it was given."},
		Names: names("unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
			"fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr")},
	{Comment: []string{"Other processes' memory, files and state."},
		Names: names("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd")},
	{Comment: []string{"Large kernel attack surfaces: BPF, perf, userfaultfd, io_uring."},
		Names: names("bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register")},
	{Comment: []string{"Kernel keyrings."},
		Names: names("keyctl", "add_key", "request_key")},
	{Comment: []string{"Administration of the machine: kexec, modules, reboot, swap, accounting, quotas, the kernel log."},
		Names: names("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
			"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog")},
	{Comment: []string{"File handles (open any inode by handle) and filesystem-wide notification."},
		Names: names("name_to_handle_at", "open_by_handle_at", "fanotify_init")},
}

// HostWide are the calls every profile refuses with ENOSYS because what
// they make is counted host-wide, with no limit a sandbox could set below
// the host's: one task would take it from root and every other request
// until it ended. The v2 allowlist does not list them (refused_v2.txt says
// why), so the listener counts them in denied_syscalls; under the v1
// profiles a rule refuses them. docs/security.md has the table of the
// kernel's counters and how each is bounded.
var HostWide = []Group{
	{Comment: []string{"Linux AIO contexts: their events count against fs.aio-max-nr (65536 by default), one",
		"host-wide limit that no namespace, rlimit or cgroup divides. glibc's POSIX AIO uses threads."},
		Names: names("io_setup")},
}

// Clone flags and socket domains the rules test (linux/sched.h, socket.h).
const (
	cloneVM     = 0x00000100
	cloneThread = 0x00010000
	// Every CLONE_NEW* flag clone(2) reads. CLONE_NEWTIME (0x80) is
	// not among them: in clone(2) that bit is part of the exit signal,
	// and only clone3, which every profile refuses, takes it.
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
	cloneNewAny    = cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	afUnix  = 1
	afInet  = 2
	afInet6 = 10
)

// commonRules are in every profile.
func commonRules() []Rule {
	var r []Rule
	for _, g := range Dangerous {
		for _, n := range g.Names {
			r = append(r, Rule{Syscall: n.Syscall, Action: Kill})
		}
	}
	// Under an allowlist these say what its default says, and go.
	for _, g := range HostWide {
		for _, n := range g.Names {
			r = append(r, Rule{Syscall: n.Syscall, Action: ENOSYS})
		}
	}
	// clone with any namespace flag: one rule per flag, since a
	// condition can only test for equality under a mask.
	for _, f := range []uint64{cloneNewNS, cloneNewCgroup, cloneNewUTS, cloneNewIPC, cloneNewUser, cloneNewPID, cloneNewNet} {
		r = append(r, Rule{Syscall: "clone", Action: Kill, Arg0: &Cond{Mask: f, Value: f}})
	}
	// clone3 passes its flags in memory a filter cannot read: refuse it,
	// and libc falls back to clone, whose flags the rules check.
	return append(r, refusedByRule()...)
}

// refusedByRule are the calls every profile refuses with ENOSYS by a rule
// of its own, whatever its default: not refusals a listener counts.
func refusedByRule() []Rule { return []Rule{{Syscall: "clone3", Action: ENOSYS}} }

// compileRules: compilers, interpreters and build tools may create
// processes (clone without namespace flags) and sockets of the families a
// toolchain uses; the network namespace is empty, so INET reaches nothing
// but loopback. Under v1 the Allow rules are the default, and dropped.
func compileRules() []Rule {
	r := []Rule{
		{Syscall: "fork", Action: Allow},
		{Syscall: "vfork", Action: Allow},
		{Syscall: "clone", Action: Allow, Arg0: &Cond{Mask: cloneNewAny, Value: 0}},
		{Syscall: "socketpair", Action: Allow},
	}
	for _, af := range []uint64{afUnix, afInet, afInet6} {
		r = append(r, Rule{Syscall: "socket", Action: Allow, Arg0: &Cond{Mask: 0xffffffff, Value: af}})
	}
	return r
}

// nativeRules: a compiled submission makes no processes and no sockets;
// it may make threads (CLONE_THREAD|CLONE_VM, no namespace flag). A unix
// socket fails with EACCES instead of killing: glibc's getpwuid and
// getgrgid ask nscd through one before they read /etc/passwd, and the JVM
// looks its user up as it starts; refused, they fall back. Every other
// socket kills.
// pidfd_open fails with ENOSYS, whatever the allowlist says: the Go
// runtime (1.23 and later) probes with it before it uses pidfds, and the
// probe's last step clones a process, which would kill the task; refused,
// Go falls back to plain signals.
func nativeRules() []Rule {
	return []Rule{
		{Syscall: "pidfd_open", Action: ENOSYS},
		{Syscall: "fork", Action: Kill},
		{Syscall: "vfork", Action: Kill},
		{Syscall: "socket", Action: EACCES, Arg0: &Cond{Mask: ^uint64(0), Value: afUnix}},
		{Syscall: "socket", Action: Kill, Arg0: &Cond{Ne: true, Value: afUnix}},
		{Syscall: "socketpair", Action: Kill},
		{Syscall: "clone", Action: Allow, Arg0: &Cond{Mask: cloneThread | cloneVM | cloneNewAny, Value: cloneThread | cloneVM}},
		{Syscall: "clone", Action: Kill, Arg0: &Cond{Mask: cloneThread, Value: 0}},
		{Syscall: "clone", Action: Kill, Arg0: &Cond{Mask: cloneVM, Value: 0}},
	}
}

// personalityRules: an allowlist lets a process query its execution
// domain and set the ordinary Linux one, with or without address-space
// randomization (setarch -R, debuggers) and with uname reporting 2.6
// (PER_LINUX, UNAME26, ADDR_NO_RANDOMIZE, and 0xffffffff, the query), as
// the containers' default profile does; other personalities (other ABIs,
// READ_IMPLIES_EXEC) get the default.
func personalityRules() []Rule {
	var r []Rule
	for _, v := range []uint64{0x0, 0x0008, 0x20000, 0x20008, 0xffffffff} {
		r = append(r, Rule{Syscall: "personality", Action: Allow, Arg0: &Cond{Mask: 0xffffffff, Value: v}})
	}
	return r
}

// Ruled returns the calls the rules of a profile kind decide, which an
// allowlist table must not name: the conditional and process calls.
func Ruled() []string {
	return []string{"clone", "clone3", "fork", "vfork", "socket", "socketpair", "personality"}
}

//go:embed allow_v2.txt refused_v2.txt
var tables embed.FS

// The files, in this package's directory, holding the allowlist both v2
// profiles share and the calls it refuses on purpose, with the reasons.
const (
	AllowFile   = "allow_v2.txt"
	RefusedFile = "refused_v2.txt"
)

// readTable parses one of the embedded tables.
func readTable(name string) (*Table, error) {
	f, err := tables.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTable(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// Refused returns the table of refused_v2.txt: calls the containers'
// default profile allows that the v2 allowlist refuses, grouped by reason.
func Refused() (*Table, error) { return readTable(RefusedFile) }

var profiles = sync.OnceValues(func() (map[string]*Profile, error) {
	m := make(map[string]*Profile)
	for _, p := range []struct {
		name      string
		allowlist bool
		compile   bool
	}{
		{CompileV2, true, true}, {NativeV2, true, false},
		{CompileV1, false, true}, {NativeV1, false, false},
	} {
		prof := &Profile{Name: p.name, Default: Allow, Rules: commonRules()}
		if p.compile {
			prof.Rules = append(prof.Rules, compileRules()...)
		} else {
			prof.Rules = append(prof.Rules, nativeRules()...)
		}
		if p.allowlist {
			prof.Default = ENOSYS
			prof.Rules = append(prof.Rules, personalityRules()...)
			var err error
			if prof.Table, err = readTable(AllowFile); err != nil {
				return nil, err
			}
			// The kind's rules decide a call before the table.
			for _, n := range prof.Table.Syscalls() {
				if !slices.ContainsFunc(prof.Rules, func(r Rule) bool { return r.Syscall == n }) {
					prof.Rules = append(prof.Rules, Rule{Syscall: n, Action: Allow})
				}
			}
		}
		// A rule that says what the default says is no rule (v1's
		// Allow rules).
		prof.Rules = slices.DeleteFunc(prof.Rules, func(r Rule) bool { return r.Action == prof.Default })
		m[p.name] = prof
	}
	return m, nil
})

// Names returns the profile names, v2 first.
func Names() []string { return []string{CompileV2, NativeV2, CompileV1, NativeV1} }

// Lookup returns the named profile. The Profile is shared: do not modify it.
func Lookup(name string) (*Profile, error) {
	m, err := profiles()
	if err != nil {
		return nil, err
	}
	p, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("seccomp: unknown profile %q (known: %v)", name, Names())
	}
	return p, nil
}

// RefusesSockets reports whether the profile refuses socket and
// socketpair whatever their arguments: a task under it can make no socket,
// so it can change nothing in its network namespace.
func (p *Profile) RefusesSockets() bool {
	for _, call := range SocketCalls {
		if slices.ContainsFunc(p.rulesOf(call), func(r Rule) bool { return r.Action == Allow }) {
			return false // for some arguments at least
		}
		if p.Default == Allow && (len(p.rulesOf(call)) == 0 || !p.decidesAll(call)) {
			return false
		}
	}
	return true
}

// SocketCalls are the calls that make sockets. A task whose processes
// made none left its network namespace as it found it: accept needs a
// socket made by them first, and io_uring, which could make one too, is
// killed in every profile ([Dangerous]).
var SocketCalls = []string{"socket", "socketpair"}

// Watched returns the profile p with a listener in mind: the calls that
// make sockets ([SocketCalls]) notify the filter's listener where p
// allows them (each of their Allow rules becomes a Notify rule with the
// same condition, and under a default of Allow (v1) a call with no rule
// gets an unconditional one), and under a default of ENOSYS (v2) every
// call p leaves to its default notifies too. The listener lets the
// socket calls through and answers the others with ENOSYS (see
// [Profile.Decider]), so every call is decided as under p, while the
// listener learns of each socket made (a task that made none needs no
// look at its network namespace) and of each call the allowlist refused
// (the task's denied_syscalls). It is an error if p leaves a socket call
// to a default of Allow for some arguments only (a Notify rule could not
// cover the rest); no profile here does.
func Watched(p *Profile) (*Profile, error) {
	w := &Profile{Name: p.Name + "+watched", Default: p.Default, Table: p.Table, Rules: slices.Clone(p.Rules)}
	if w.Default == ENOSYS {
		// The rules' own refusals stay refusals: p dropped them as
		// saying what its default says.
		w.Default = Notify
		w.Rules = append(w.Rules, refusedByRule()...)
	}
	for _, call := range SocketCalls {
		ruled, conditional := false, false
		for i, r := range w.Rules {
			if r.Syscall != call {
				continue
			}
			ruled = true
			conditional = conditional || r.Arg0 != nil
			if r.Action == Allow {
				w.Rules[i].Action = Notify
			}
		}
		switch {
		case p.Default != Allow:
		case !ruled:
			w.Rules = append(w.Rules, Rule{Syscall: call, Action: Notify})
		case conditional && !p.decidesAll(call):
			return nil, fmt.Errorf("seccomp: %s: %s is allowed by default for some arguments only: no rule can watch it", p.Name, call)
		}
	}
	return w, nil
}

// Notifies reports whether the profile's [Watched] form ever notifies:
// it has an allowlist's default, or allows a socket call.
func (p *Profile) Notifies() bool { return p.Default == ENOSYS || !p.RefusesSockets() }

// AllowsAlways reports whether the profile lets each of calls through
// whatever its arguments: no rule of the call does anything else, and
// under an allowlist one allows it without a condition.
func (p *Profile) AllowsAlways(calls ...string) bool {
	for _, call := range calls {
		always := p.Default == Allow
		for _, r := range p.Rules {
			if r.Syscall != call {
				continue
			}
			if r.Action != Allow {
				return false
			}
			if r.Arg0 == nil {
				always = true
			}
		}
		if !always {
			return false
		}
	}
	return true
}

// Syscalls returns the calls of the profile's rules, sorted, without
// duplicates.
func (p *Profile) Syscalls() []string {
	var s []string
	for _, r := range p.Rules {
		s = append(s, r.Syscall)
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// Allowed returns the calls the profile lets through in some case: the
// allowlist and the calls allowed by a rule (with or without a condition).
// For a v1 profile it is nil: everything not killed is allowed.
func (p *Profile) Allowed() []string {
	if p.Default == Allow {
		return nil
	}
	var s []string
	for _, r := range p.Rules {
		if r.Action == Allow {
			s = append(s, r.Syscall)
		}
	}
	slices.Sort(s)
	return slices.Compact(s)
}

func names(s ...string) []Name {
	n := make([]Name, len(s))
	for i, x := range s {
		n[i] = Name{Syscall: x}
	}
	return n
}

package seccomp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc/internal/initproc"
)

// The programs are run here on an interpreter of classic BPF over struct
// seccomp_data, so the profiles' decisions are tested without a sandbox;
// seccomp_test.go at the module root tests them on the kernel.

const (
	auditArchX8664 = 0xc000003e
	auditArchI386  = 0x40000003
	auditArchARM64 = 0xc00000b7
	x32Bit         = 0x40000000

	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retUserNotif   = 0x7fc00000
	retAllow       = 0x7fff0000
)

type call struct {
	arch uint32
	nr   int32
	args [6]uint64
}

// run interprets prog (struct sock_filter[]) on the call's seccomp_data.
func run(t *testing.T, prog []byte, c call) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[0:], uint32(c.nr))
	binary.LittleEndian.PutUint32(data[4:], c.arch)
	for i, a := range c.args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var a, x uint32
	var mem [16]uint32
	n := len(prog) / 8
	for pc := 0; pc < n; pc++ {
		ins := prog[8*pc:]
		code := binary.LittleEndian.Uint16(ins)
		jt, jf := int(ins[2]), int(ins[3])
		k := binary.LittleEndian.Uint32(ins[4:])
		src := k
		if code&0x08 != 0 {
			src = x
		}
		switch code {
		case 0x20: // ld [k]
			if k%4 != 0 || k+4 > uint32(len(data)) {
				t.Fatalf("pc %d: load at %d", pc, k)
			}
			a = binary.LittleEndian.Uint32(data[k:])
		case 0x00: // ld #k
			a = k
		case 0x01: // ldx #k
			x = k
		case 0x60: // ld M[k]
			a = mem[k]
		case 0x61: // ldx M[k]
			x = mem[k]
		case 0x02: // st M[k]
			mem[k] = a
		case 0x03: // stx M[k]
			mem[k] = x
		case 0x04, 0x0c:
			a += src
		case 0x14, 0x1c:
			a -= src
		case 0x44, 0x4c:
			a |= src
		case 0x54, 0x5c:
			a &= src
		case 0x64, 0x6c:
			a <<= src
		case 0x74, 0x7c:
			a >>= src
		case 0xa4, 0xac:
			a ^= src
		case 0x05: // ja
			pc += int(k)
		case 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x3d, 0x45, 0x4d:
			var ok bool
			switch code & 0xf0 {
			case 0x10:
				ok = a == src
			case 0x20:
				ok = a > src
			case 0x30:
				ok = a >= src
			case 0x40:
				ok = a&src != 0
			}
			if ok {
				pc += jt
			} else {
				pc += jf
			}
		case 0x06: // ret #k
			return k
		case 0x16: // ret a
			return a
		case 0x07: // tax
			x = a
		case 0x87: // txa
			a = x
		default:
			t.Fatalf("pc %d: opcode %#x not interpreted", pc, code)
		}
	}
	t.Fatal("program ran off its end")
	return 0
}

func nr(t *testing.T, name string) int32 {
	t.Helper()
	s, err := Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return int32(s)
}

func want(a Action) uint32 {
	switch a {
	case Allow:
		return retAllow
	case ENOSYS:
		return retErrno | uint32(unix.ENOSYS)
	case Notify:
		return retUserNotif
	case EACCES:
		return retErrno | uint32(unix.EACCES)
	}
	return retKillProcess
}

// pick returns the action for the profile from per-kind answers.
func pick(profile string, compileV2, nativeV2, compileV1, nativeV1 Action) Action {
	return map[string]Action{CompileV2: compileV2, NativeV2: nativeV2, CompileV1: compileV1, NativeV1: nativeV1}[profile]
}

func TestProgram(t *testing.T) {
	for _, name := range Names() {
		prog, err := Program(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(prog) == 0 || len(prog)%8 != 0 || len(prog)/8 > unix.BPF_MAXINSNS {
			t.Fatalf("%s: %d bytes", name, len(prog))
		}
		t.Logf("%s: %d instructions", name, len(prog)/8)
		again, _ := Program(name)
		if !bytes.Equal(prog, again) {
			t.Errorf("%s: a second Program differs", name)
		}
		prog[0] ^= 0xff // a copy: the cache is not changed
		if again2, _ := Program(name); !bytes.Equal(again, again2) {
			t.Errorf("%s: Program returned the cached slice", name)
		}
	}
	if _, err := Program("native_v3"); err == nil {
		t.Error("unknown profile: no error")
	}
	if _, err := Program(""); err == nil {
		t.Error("empty profile: no error")
	}
}

func TestProgramConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		for _, name := range Names() {
			wg.Go(func() {
				if _, err := Program(name); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
}

func TestResolveAll(t *testing.T) {
	for _, name := range Names() {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Syscalls() {
			if _, err := Resolve(s); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}

// TestDecisions runs each profile's program, and its watched form's, on
// the calls the profiles are about. The watched form decides every call as
// the profile does, but notifies where it allows socket or socketpair.
func TestDecisions(t *testing.T) {
	const (
		cloneThreadFlags = 0x003d0f00 // glibc's pthread_create: VM FS FILES SIGHAND THREAD SYSVSEM SETTLS PARENT_SETTID CHILD_CLEARTID
		goThreadFlags    = 0x00050f00 // the Go runtime's newosproc
		forkFlags        = 0x01200011 // glibc's fork: CHILD_SETTID CHILD_CLEARTID SIGCHLD
		vforkFlags       = 0x00004111 // posix_spawn: VM VFORK SIGCHLD
	)
	for _, watched := range []bool{false, true} {
		for _, name := range Names() {
			t.Run(fmt.Sprintf("%s/watched=%v", name, watched), func(t *testing.T) {
				prog, err := Program(name)
				if watched {
					prog, err = WatchedProgram(name)
				}
				if err != nil {
					t.Fatal(err)
				}
				p, _ := Lookup(name)
				v2 := p.Default == ENOSYS
				check := func(desc string, c call, a Action) {
					t.Helper()
					if watched && a == Allow && (c.nr == nr(t, "socket") || c.nr == nr(t, "socketpair")) {
						a = Notify
					}
					// An allowlist's refusals notify, for the listener to
					// count; clone3's rule is no allowlist's.
					if watched && v2 && a == ENOSYS && c.nr != nr(t, "clone3") {
						a = Notify
					}
					if got := run(t, prog, c); got != want(a) {
						t.Errorf("%s: got %#x, want %v (%#x)", desc, got, a, want(a))
					}
				}
				sys := func(s string, args ...uint64) call {
					c := call{arch: auditArchX8664, nr: nr(t, s)}
					copy(c.args[:], args)
					return c
				}

				// The dangerous set, in every profile, whatever the
				// arguments.
				for _, g := range Dangerous {
					for _, n := range g.Names {
						check(n.Syscall, sys(n.Syscall), Kill)
						check(n.Syscall+" with args", sys(n.Syscall, 1, 2, 3, 4, 5, 6), Kill)
					}
				}
				// Other architectures and the x32 ABI.
				check("x32 getpid", call{arch: auditArchX8664, nr: x32Bit | nr(t, "getpid")}, Kill)
				check("x32 write", call{arch: auditArchX8664, nr: x32Bit | 1}, Kill)
				check("x32 execve", call{arch: auditArchX8664, nr: x32Bit | 520}, Kill)
				check("i386 getpid (int 0x80)", call{arch: auditArchI386, nr: 20}, Kill)
				check("i386 write", call{arch: auditArchI386, nr: 4}, Kill)
				check("arm64 getpid", call{arch: auditArchARM64, nr: 172}, Kill)
				// Numbers outside every table: the default.
				check("number 1000", call{arch: auditArchX8664, nr: 1000}, p.Default)
				check("number -1", call{arch: auditArchX8664, nr: -1}, p.Default)

				// What the child needs after the filter, in every profile.
				for _, s := range []string{"execve", "write", "exit_group"} {
					check(s, sys(s), Allow)
				}
				// The allowlist; a harmless call on neither list.
				for _, s := range p.Allowed() {
					if s != "clone" && s != "socket" {
						check(s, sys(s), Allow)
					}
				}
				check("io_pgetevents (unlisted)", sys("io_pgetevents"), p.Default)
				// Host-wide counters, whatever the profile's default.
				for _, g := range HostWide {
					for _, n := range g.Names {
						check(n.Syscall+" (host-wide)", sys(n.Syscall, 1), ENOSYS)
					}
				}
				check("modify_ldt (refused with a reason)", sys("modify_ldt"), p.Default)
				// personality: the query and the ordinary Linux domains;
				// READ_IMPLIES_EXEC and other ABIs get the default.
				check("personality(query)", sys("personality", 0xffffffff), Allow)
				check("personality(ADDR_NO_RANDOMIZE)", sys("personality", 0x20000), Allow)
				check("personality(READ_IMPLIES_EXEC)", sys("personality", 0x400000), p.Default)
				check("personality(PER_SVR4)", sys("personality", 0x04100002), p.Default)
				check("clone3", sys("clone3"), ENOSYS)
				// pidfd_open: Go's probe that ends in a clone of a
				// process; refused to the native profiles.
				check("pidfd_open", sys("pidfd_open"), pick(name, Allow, ENOSYS, Allow, ENOSYS))

				// Processes.
				proc := pick(name, Allow, Kill, Allow, Kill)
				check("fork", sys("fork"), proc)
				check("vfork", sys("vfork"), proc)
				check("clone (fork)", sys("clone", forkFlags), proc)
				check("clone (posix_spawn)", sys("clone", vforkFlags), proc)
				check("clone (CLONE_VM only)", sys("clone", 0x100|0x11), proc)
				check("clone (CLONE_THREAD without CLONE_VM)", sys("clone", 0x10000), proc)
				check("clone (pthread)", sys("clone", cloneThreadFlags), Allow)
				check("clone (go thread)", sys("clone", goThreadFlags), Allow)
				check("clone (pthread, high bits set)", sys("clone", 0xffffffff00000000|cloneThreadFlags), Allow)
				for _, ns := range []uint64{cloneNewNS, cloneNewCgroup, cloneNewUTS, cloneNewIPC, cloneNewUser, cloneNewPID, cloneNewNet} {
					check(fmt.Sprintf("clone (fork|%#x)", ns), sys("clone", forkFlags|ns), Kill)
					check(fmt.Sprintf("clone (pthread|%#x)", ns), sys("clone", cloneThreadFlags|ns), Kill)
					check(fmt.Sprintf("clone (%#x, high bits)", ns), sys("clone", 0xffffffff00000000|ns|0x11), Kill)
				}
				// clone(2) ignores bit 0x80 (CLONE_NEWTIME elsewhere): it is
				// part of the exit signal.
				check("clone (fork|0x80)", sys("clone", forkFlags|0x80), proc)

				// Sockets.
				// A unix socket is refused to the native profiles (glibc's
				// nscd lookups), every other socket kills; high bits make
				// a domain another one there.
				for _, af := range []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6} {
					native := Kill
					if af == unix.AF_UNIX {
						native = EACCES
					}
					check(fmt.Sprintf("socket(%d)", af), sys("socket", af, unix.SOCK_STREAM), pick(name, Allow, native, Allow, native))
					check(fmt.Sprintf("socket(%d), high bits", af), sys("socket", 1<<40|af, unix.SOCK_STREAM), pick(name, Allow, Kill, Allow, Kill))
				}
				for _, af := range []uint64{unix.AF_NETLINK, unix.AF_PACKET, unix.AF_VSOCK, unix.AF_ALG, 0} {
					other := pick(name, ENOSYS, Kill, Allow, Kill)
					check(fmt.Sprintf("socket(%d)", af), sys("socket", af, unix.SOCK_RAW), other)
				}
				check("socketpair", sys("socketpair", unix.AF_UNIX, unix.SOCK_STREAM), pick(name, Allow, Kill, Allow, Kill))

				if !v2 {
					// A denylist lets through what it does not name.
					check("uname", sys("uname"), Allow)
					check("io_submit", sys("io_submit"), Allow)
				}
			})
		}
	}
}

// TestAllowsAlways: what a task process does before its execve
// (initproc.PreExecCalls) is allowed by every profile; calls with a
// condition or a kill rule are never "always".
func TestAllowsAlways(t *testing.T) {
	pre := initproc.PreExecCalls
	for _, c := range []struct {
		profile string
		calls   []string
		want    bool
	}{
		{CompileV2, pre, true},
		{NativeV2, pre, true},
		{CompileV1, pre, true},
		{NativeV1, pre, true},
		{CompileV2, []string{"socket"}, false}, // allowed for some families only
		{CompileV1, []string{"mount"}, false},  // killed
		{NativeV2, []string{"clone"}, false},   // threads only
	} {
		p, err := Lookup(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.AllowsAlways(c.calls...); got != c.want {
			t.Errorf("%s AllowsAlways(%v) = %v, want %v", c.profile, c.calls, got, c.want)
		}
	}
}

// decisionCalls are the calls the decision tests run: every system call
// number from -1 to 599 and, for the calls with conditions, every
// combination of the clone flag bits the rules test and every socket
// domain; and calls of other architectures.
func decisionCalls(t *testing.T) []call {
	// Every clone flag a rule tests, in every combination, over a fork's
	// and a thread's other flags.
	flagBits := []uint64{cloneThread, cloneVM, cloneNewNS, cloneNewCgroup, cloneNewUTS, cloneNewIPC, cloneNewUser, cloneNewPID, cloneNewNet}
	var arg0s []uint64
	for m := 0; m < 1<<len(flagBits); m++ {
		var v uint64
		for i, b := range flagBits {
			if m&(1<<i) != 0 {
				v |= b
			}
		}
		arg0s = append(arg0s, v|0x11, v|0x003d0f00&^(cloneThread|cloneVM)|0x11)
	}
	for af := uint64(0); af < 64; af++ {
		arg0s = append(arg0s, af, 1<<40|af)
	}
	var calls []call
	for nr := int32(-1); nr < 600; nr++ {
		calls = append(calls, call{arch: auditArchX8664, nr: nr})
	}
	for _, s := range []string{"clone", "socket", "socketpair", "mount", "unshare"} {
		for _, a := range arg0s {
			calls = append(calls, call{arch: auditArchX8664, nr: nr(t, s), args: [6]uint64{a, 1, 2}})
		}
	}
	return append(calls,
		call{arch: auditArchX8664, nr: x32Bit | 1}, call{arch: auditArchX8664, nr: 1000},
		call{arch: auditArchI386, nr: 4}, call{arch: auditArchARM64, nr: 172})
}

// The Decider of each profile decides every call of the native
// architecture as its program does: a listener's answers agree with the
// filter.
func TestDecider(t *testing.T) {
	for _, name := range Names() {
		p, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := Program(name)
		if err != nil {
			t.Fatal(err)
		}
		decide, err := p.Decider()
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, c := range decisionCalls(t) {
			if c.arch != auditArchX8664 || c.nr&x32Bit != 0 {
				continue
			}
			if got, want := want(decide(c.nr, c.args[0])), run(t, prog, c); got != want && bad < 10 {
				bad++
				t.Errorf("%s: call %d(%#x): decider %#x, program %#x", name, c.nr, c.args[0], got, want)
			}
		}
	}
	if got := CallName(1); got != "write" {
		t.Errorf("CallName(1) = %q", got)
	}
	if got := CallName(99999); got != "syscall_99999" {
		t.Errorf("CallName(99999) = %q", got)
	}
}

// TestLayers runs a shell's base filter and each profile's residual
// together, the stricter answer winning as in the kernel, on every system
// call number and, for the calls with conditions, every combination of
// the flag bits they test and every socket domain: they must decide each
// as the profile's own program does, watched or not.
func TestLayers(t *testing.T) {
	sets := [][]string{
		{CompileV2, NativeV2}, {CompileV2}, {NativeV2},
		{CompileV1, NativeV1}, {CompileV1}, {NativeV1},
	}
	calls := decisionCalls(t)
	// stricter is the kernel's choice between the residual's answer, of
	// the filter installed last, and the base's.
	stricter := func(res, base uint32) uint32 {
		if int32(res&0xffff0000) <= int32(base&0xffff0000) {
			return res
		}
		return base
	}
	for _, set := range sets {
		var profiles []*Profile
		for _, name := range set {
			p, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			profiles = append(profiles, p)
		}
		l, err := NewLayers(profiles, initproc.ShellCalls)
		if err != nil {
			t.Fatalf("%v: %v", set, err)
		}
		wl, err := l.Watched()
		if err != nil {
			t.Fatalf("%v: %v", set, err)
		}
		for _, p := range profiles {
			decide, err := p.Decider()
			if err != nil {
				t.Fatal(err)
			}
			for _, watched := range []bool{false, true} {
				// Watched, the shell's base has the listener, which
				// answers what it is notified of as the profile decides
				// (eff): the residual, of the task process, can have no
				// listener, and refuses nothing a listener should count.
				full, err := Program(p.Name)
				layers := l
				eff := func(c call, ret uint32) uint32 { return ret }
				if watched {
					full, err = WatchedProgram(p.Name)
					layers = wl
					eff = func(c call, ret uint32) uint32 {
						if ret == want(Notify) && decide(c.nr, c.args[0]) == Allow {
							return want(Allow)
						}
						return ret
					}
					for _, r := range wl.Residual[p.Name].Rules {
						if p.Default == ENOSYS && r.Action == ENOSYS && r.Syscall != "clone3" {
							t.Errorf("%v, %s: the watched residual refuses %s", set, p.Name, r.Syscall)
						}
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				base, err := Build(layers.Base)
				if err != nil {
					t.Fatal(err)
				}
				res := layers.Residual[p.Name]
				resProg, err := Build(res)
				if err != nil {
					t.Fatal(err)
				}
				decides := func(prog []byte, c call) bool {
					return eff(c, stricter(run(t, prog, c), run(t, base, c))) == eff(c, run(t, full, c))
				}
				bad := 0
				for _, c := range calls {
					if !decides(resProg, c) && bad < 10 {
						bad++
						t.Errorf("%v, %s watched=%v: call %d(%#x) on %#x: layers %#x, the profile %#x", set, p.Name, watched,
							c.nr, c.args[0], c.arch, stricter(run(t, resProg, c), run(t, base, c)), run(t, full, c))
					}
				}
				t.Logf("%v, %s watched=%v: %d calls; residual %d instructions, the profile %d, the base %d",
					set, p.Name, watched, len(calls), len(resProg)/8, len(full)/8, len(base)/8)
				// Every rule of the residual counts: without any one of
				// them, some call is decided otherwise.
				for i := range res.Rules {
					less := &Profile{Name: res.Name, Default: res.Default, Rules: slices.Delete(slices.Clone(res.Rules), i, i+1)}
					prog, err := Build(less)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.ContainsFunc(calls, func(c call) bool { return !decides(prog, c) }) {
						t.Errorf("%v, %s watched=%v: the residual's rule %+v changes nothing", set, p.Name, watched, res.Rules[i])
					}
				}
			}
		}
	}
	// Profiles of different defaults have no common base.
	c1, _ := Lookup(CompileV1)
	c2, _ := Lookup(CompileV2)
	if _, err := NewLayers([]*Profile{c1, c2}, initproc.ShellCalls); err == nil {
		t.Error("layers of compile_v1 and compile_v2: no error")
	}
}

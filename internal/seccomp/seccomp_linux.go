package seccomp

import (
	"fmt"
	"io"
	"os"
	"sync"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Program returns the BPF program of the named profile: the raw
// struct sock_filter array that seccomp(SECCOMP_SET_MODE_FILTER) takes.
// Each profile is compiled once per process; Program is safe for
// concurrent use and returns a fresh copy each time. An unknown profile
// is an error.
func Program(profile string) ([]byte, error) { return program(programs, profile) }

// WatchedProgram is Program for the profile's [Watched] form, which must
// be installed with SECCOMP_FILTER_FLAG_NEW_LISTENER and its listener
// served: without one, the calls that make sockets fail with ENOSYS.
func WatchedProgram(profile string) ([]byte, error) { return program(watchedPrograms, profile) }

func program(m map[string]func() ([]byte, error), profile string) ([]byte, error) {
	build, ok := m[profile]
	if !ok {
		return nil, fmt.Errorf("seccomp: unknown profile %q (known: %v)", profile, Names())
	}
	prog, err := build()
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), prog...), nil
}

// programs and watchedPrograms compile each profile on first use.
var programs, watchedPrograms = compileOnce(false), compileOnce(true)

func compileOnce(watched bool) map[string]func() ([]byte, error) {
	m := make(map[string]func() ([]byte, error))
	for _, name := range Names() {
		m[name] = sync.OnceValues(func() ([]byte, error) {
			p, err := Lookup(name)
			if err == nil && watched {
				p, err = Watched(p)
			}
			if err != nil {
				return nil, err
			}
			return Build(p)
		})
	}
	return m
}

// newer are calls newer than the libseccomp this package may be built
// against (2.5.4, in Debian 12, names the calls up to Linux 6.7), by number.
var newer = map[string]int{
	"open_tree_attr": unix.SYS_OPEN_TREE_ATTR,
}

// Resolve returns the number of a system call on the native architecture.
func Resolve(name string) (libseccomp.ScmpSyscall, error) {
	if nr, ok := newer[name]; ok {
		return libseccomp.ScmpSyscall(nr), nil
	}
	s, err := libseccomp.GetSyscallFromName(name)
	if err != nil {
		return 0, fmt.Errorf("seccomp: system call %q: %w", name, err)
	}
	return s, nil
}

// buildMu serializes filter builds: libseccomp keeps no global state a
// build changes, but nothing promises that either.
var buildMu sync.Mutex

// Build compiles a profile with libseccomp to a BPF program for the native
// architecture only. Another architecture's calls (int 0x80 on x86_64,
// AUDIT_ARCH_I386) fail the architecture check, and libseccomp sends x32
// calls (number with bit 0x40000000 set, on the x86_64 architecture token)
// to the same bad-architecture action when x32 is not in the filter: both
// kill the task. The filter does not set no_new_privs; the child does.
func Build(p *Profile) ([]byte, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	def := action(p.Default)
	f, err := libseccomp.NewFilter(def)
	if err != nil {
		return nil, fmt.Errorf("seccomp: %s: new filter: %w", p.Name, err)
	}
	defer f.Release()
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("seccomp: %s: bad arch action: %w", p.Name, err)
	}
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp: %s: no_new_privs bit: %w", p.Name, err)
	}
	// A binary tree of syscall numbers instead of a list: a call is
	// decided in about log2(rules) comparisons, and installing the filter
	// is faster in proportion, since the kernel runs the filter for every
	// syscall number to build its cache of always-allowed calls.
	if err := f.SetOptimize(2); err != nil {
		return nil, fmt.Errorf("seccomp: %s: optimize: %w", p.Name, err)
	}
	for _, r := range p.Rules {
		// A rule that says what the default says adds nothing, and
		// libseccomp refuses it.
		if r.Action == p.Default {
			continue
		}
		sys, err := Resolve(r.Syscall)
		if err != nil {
			return nil, fmt.Errorf("seccomp: %s: %w", p.Name, err)
		}
		if r.Arg0 == nil {
			err = f.AddRule(sys, action(r.Action))
		} else {
			var c libseccomp.ScmpCondition
			if r.Arg0.Ne {
				c, err = libseccomp.MakeCondition(0, libseccomp.CompareNotEqual, r.Arg0.Value)
			} else {
				c, err = libseccomp.MakeCondition(0, libseccomp.CompareMaskedEqual, r.Arg0.Mask, r.Arg0.Value)
			}
			if err == nil {
				err = f.AddRuleConditional(sys, action(r.Action), []libseccomp.ScmpCondition{c})
			}
		}
		if err != nil {
			return nil, fmt.Errorf("seccomp: %s: rule %s %s: %w", p.Name, r.Syscall, r.Action, err)
		}
	}
	return export(f)
}

func action(a Action) libseccomp.ScmpAction {
	switch a {
	case Allow:
		return libseccomp.ActAllow
	case ENOSYS:
		return libseccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))
	case Notify:
		return libseccomp.ActNotify
	case EACCES:
		return libseccomp.ActErrno.SetReturnCode(int16(unix.EACCES))
	default:
		return libseccomp.ActKillProcess
	}
}

// export returns the filter's BPF program, written through a memfd
// (libseccomp 2.5 exports only to a file descriptor).
func export(f *libseccomp.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("seccomp-bpf", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	file := os.NewFile(uintptr(fd), "seccomp-bpf")
	defer file.Close()
	if err := f.ExportBPF(file); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	prog, err := io.ReadAll(file)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if len(prog) == 0 || len(prog)%8 != 0 {
		return nil, fmt.Errorf("seccomp: export: %d bytes is not a BPF program", len(prog))
	}
	return prog, nil
}

// Decider returns a function that decides a call as the profile does,
// from its number and first argument: the action of the call's rule whose
// condition holds, or the default. A listener of a [Watched] filter asks
// it what a notified call gets. Safe for concurrent use.
func (p *Profile) Decider() (func(nr int32, arg0 uint64) Action, error) {
	byNr := make(map[int32][]Rule)
	for _, r := range p.Rules {
		nr, err := Resolve(r.Syscall)
		if err != nil {
			return nil, fmt.Errorf("seccomp: %s: %w", p.Name, err)
		}
		byNr[int32(nr)] = append(byNr[int32(nr)], r)
	}
	def := p.Default
	return func(nr int32, arg0 uint64) Action {
		for _, r := range byNr[nr] {
			if r.Arg0 == nil || r.Arg0.Holds(arg0) {
				return r.Action
			}
		}
		return def
	}, nil
}

// CallName returns the name of the native system call nr, or "syscall_<nr>"
// for a number libseccomp does not know.
func CallName(nr int32) string {
	for name, n := range newer {
		if int32(n) == nr {
			return name
		}
	}
	if name, err := libseccomp.ScmpSyscall(nr).GetName(); err == nil {
		return name
	}
	return fmt.Sprintf("syscall_%d", nr)
}

// Package seccomp holds the sandbox's system-call profiles as data and
// compiles them with libseccomp to the BPF programs that the child side
// (internal/initproc) installs last, right before execve.
//
// # Profiles
//
// Four profiles (spec 2.1, 9), chosen per task:
//
//	            unlisted call   processes, sockets
//	compile_v2  ENOSYS          fork, vfork, clone without CLONE_NEW*; AF_UNIX, AF_INET, AF_INET6, socketpair
//	native_v2   ENOSYS          threads only (clone with CLONE_THREAD|CLONE_VM); fork, vfork, socket, socketpair kill, but a unix socket fails with EACCES
//	compile_v1  allowed         as compile_v2, any socket family
//	native_v1   allowed         as native_v2
//
// The v2 profiles allow the same calls otherwise (allow_v2.txt), and
// personality only for the ordinary Linux domains and its query.
//
// In every profile the dangerous set ([Dangerous]: namespaces and mounts,
// ptrace and other processes' memory, bpf, perf, userfaultfd, io_uring,
// keys, kexec and modules, reboot, swap, acct, quotas, syslog, file
// handles, fanotify), clone with any CLONE_NEW* flag, every call of another
// architecture (int 0x80 on x86_64) and every x32 call kill the whole task
// with SIGSYS (SECCOMP_RET_KILL_PROCESS: no handler runs). clone3 fails
// with ENOSYS in every profile: its flags are in memory a filter cannot
// read, and libc and the Go runtime fall back to clone, whose flags the
// rules check. io_setup fails with ENOSYS in every profile too ([HostWide]):
// its contexts count against one host-wide limit that nothing divides
// among sandboxes. The child itself needs execve, write and exit_group
// after the filter (its PATH search), which every profile allows.
//
// # Allowlists
//
// Both v2 profiles share one allowlist, allow_v2.txt (embedded; format in
// [Table]): they differ only by the process and socket rules. It is
// grounded in what real programs call and in a reference. The trace tool
// runs real toolchains and programs under strace and checks and rewrites
// the file:
//
//	go run ./internal/seccomp/trace [-v] [-write]
//
// and the module's conformance suite runs some two hundred programs on the
// host and in the sandbox and fails on any difference or refused call.
// The containers' default seccomp profile is the yardstick: every call it
// allows on x86_64 is allowed, killed, decided by a rule, or listed in
// refused_v2.txt ([Refused]) with the reason (TestContainersProfile).
//
// # Building
//
// [Program] compiles a profile once per process with libseccomp
// (default action, rules, KILL_PROCESS for a bad architecture, no
// no_new_privs bit since the child sets it) and returns the raw
// struct sock_filter array. [WatchedProgram] compiles a profile's
// [Watched] form, which decides every call as the profile does but has
// the kernel notify the filter's listener of each socket and socketpair
// call the profile allows (SECCOMP_RET_USER_NOTIF), so the parent knows
// whether a task made a socket. [Profile], [Rule] and [Table] are plain data;
// the package's tests run the compiled programs on a BPF interpreter, and
// the module's seccomp_test.go runs hostile probes and toolchains under
// them on the kernel.
//
// # Layers
//
// Installing a filter costs its conversion, its JIT and the kernel's cache
// of always-allowed calls, each in proportion to its length: about 0.1 ms
// for a v2 profile. [NewLayers] splits a set of profiles that share a
// default into a base, which a sandbox shell's init installs once and
// every task process inherits, and a residual per profile, installed by
// each task process (45 instructions for compile_v2 instead of 251). The
// kernel runs every filter and keeps the strictest answer; the base
// decides each call no more strictly than any profile of the set and
// allows the calls the shell itself makes after it, and a residual holds
// its profile's rules where the base is less strict. The tests run base
// and residual together on the interpreter, on every call number and
// every combination of the flags the rules test, against the profile's
// own program, and show every rule of each residual is needed.
package seccomp

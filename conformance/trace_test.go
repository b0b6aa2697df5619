package conformance_test

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/internal/seccomp"
)

// traceArgv wraps argv in strace, counting the system calls of the whole
// process tree into out (SVC_CONFORMANCE_STRACE=1).
func traceArgv(argv []string, out string) []string {
	return append([]string{"strace", "-f", "-qq", "-c", "-U", "name", "-o", out, "--"}, argv...)
}

// callName is what a system call's name looks like.
var callName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// readTrace returns the call names of a strace -c -U name summary, sorted.
func readTrace(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var calls []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name := strings.TrimSpace(sc.Text())
		// strace -c also writes what it saw of processes that went
		// ("<detached ...>"): only call names count.
		if !callName.MatchString(name) || name == "syscall" || name == "total" {
			continue
		}
		calls = append(calls, name)
	}
	slices.Sort(calls)
	return calls, sc.Err()
}

// outsideAllowlist returns the calls that profile p's allowlist does not
// list and its rules do not decide (clone, fork, socket, ...): those a v2
// sandbox refuses with ENOSYS. v1 profiles refuse none of them.
func outsideAllowlist(calls []string, p svc.Profile) ([]string, error) {
	prof, err := seccomp.Lookup(string(p))
	if err != nil {
		return nil, err
	}
	if prof.Table == nil {
		return nil, nil
	}
	var out []string
	for _, c := range calls {
		if listed, _ := prof.Table.Has(c); !listed && !slices.Contains(seccomp.Ruled(), c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// traceNote describes the traced calls of a host run that profile p
// would refuse, for a log line or a failure.
func traceNote(what string, calls []string, p svc.Profile) string {
	if calls == nil {
		return ""
	}
	out, err := outsideAllowlist(calls, p)
	if err != nil {
		return fmt.Sprintf("\n%s: %v", what, err)
	}
	if len(out) == 0 {
		return fmt.Sprintf("\nhost %s (strace): every call is on the %s allowlist", what, p)
	}
	return fmt.Sprintf("\nhost %s (strace): calls outside the %s allowlist: %s", what, p, strings.Join(out, " "))
}

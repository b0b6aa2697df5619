package conformance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// TestParseCase checks the case format of README.md, without root.
func TestParseCase(t *testing.T) {
	c, err := parseCase(strings.NewReader(`# a comment
build: gcc -O2 -o prog main.c

run: ./prog
expect native_v2: policy_violation native_v2 makes no processes
normalize: [0-9]+ ms
normalize: 0x[0-9a-f]+
denied-ok: sched_setaffinity libgomp pins threads when it can
timeout: 5
needs: /usr/lib/*/libc.a gcc
`), "c", "x")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Build, " ") != "gcc -O2 -o prog main.c" || strings.Join(c.Run, " ") != "./prog" {
		t.Errorf("build %q, run %q", c.Build, c.Run)
	}
	if len(c.Profiles) != 2 || c.Profiles[0] != svc.ProfileCompileV2 || c.Profiles[1] != svc.ProfileNativeV2 {
		t.Errorf("profiles %v, want the submission default", c.Profiles)
	}
	if e := c.Expect[svc.ProfileNativeV2]; e.Outcome != svc.OutcomePolicyViolation || e.Reason != "native_v2 makes no processes" {
		t.Errorf("expect %+v", e)
	}
	if len(c.Normalize) != 2 || normalize("took 12 ms at 0xbeef", c.Normalize) != "took <N> at <N>" {
		t.Errorf("normalize %v", c.Normalize)
	}
	if c.DeniedOK["sched_setaffinity"] == "" || c.Timeout != 5*time.Second || len(c.Needs) != 2 {
		t.Errorf("denied-ok %v, timeout %v, needs %v", c.DeniedOK, c.Timeout, c.Needs)
	}

	sh, err := parseCase(strings.NewReader("run: sh x.sh\n"), "shell", "x")
	if err != nil || len(sh.Profiles) != 1 || sh.Profiles[0] != svc.ProfileCompileV2 || sh.Timeout != maxTimeout {
		t.Errorf("shell default: %+v, %v", sh, err)
	}

	for _, bad := range []struct{ lang, text, want string }{
		{"c", "build: gcc x.c\n", "run: required"},
		{"c", "run: ./a\nrun: ./b\n", "given twice"},
		{"c", "run: ./a\ncolour: blue\n", "unknown key"},
		{"c", "run: ./a\nthis line has no key\n", "key: value"},
		{"c", "run:\n", "empty command"},
		{"c", "run: ./a\nexpect native_v2: policy_violation\n", "reason is required"},
		{"c", "run: ./a\nexpect native_v2: crashed because\n", "unknown outcome"},
		{"c", "run: ./a\nexpect native_v3: exited x\n", "unknown profile"},
		{"shell", "run: sh a\nexpect native_v2: exited x\n", "does not run under"},
		{"c", "run: ./a\ndenied-ok: poll\n", "<syscall> <reason>"},
		{"c", "run: ./a\ntimeout: 61\n", "whole seconds"},
		{"c", "run: ./a\nnormalize: a*\n", "empty string"},
		{"c", "run: ./a\nnormalize: (\n", "missing closing"},
		{"c", "run: ./a\nprofiles: compile_v2 native\n", "unknown profile"},
		{"c", "run: ./a\nstdin: ../x\n", "a file of the case"},
		{"c", "run: ./a\nstdin: in\nstdin-gen: sh gen\n", "give one"},
		{"cobol", "run: ./a\n", "no default profiles"},
	} {
		_, err := parseCase(strings.NewReader(bad.text), bad.lang, "x")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want one with %q", bad.text, err, bad.want)
		}
	}
}

package svc_test

import (
	"strings"
	"testing"

	"github.com/svc-sandbox/svc"
)

// toolchainCommands are the commands a toolchain of DetectImage's list
// (by its name before the version) is called by, each with the argument
// that makes it print its version.
var toolchainCommands = map[string][][]string{
	"gcc":    {{"gcc-%s", "--version"}},
	"g++":    {{"g++-%s", "--version"}},
	"python": {{"python%s", "--version"}},
	"pypy":   {{"pypy3", "--version"}},
	"java":   {{"java", "-version"}, {"javac", "-version"}},
	"rustc":  {{"rustc", "--version"}},
	"node":   {{"node", "--version"}},
	"go":     {{"go", "version"}},
}

// Every toolchain the root filesystem's detection lists (what /info says)
// runs by its name in a task, under compile_v2, with the task's own
// environment.
func TestToolchainsByName(t *testing.T) {
	requireRoot(t)
	_, toolchains, err := svc.DetectImage("/")
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, svc.Config{})
	var tasks []svc.Task
	var names []string
	for _, tc := range toolchains {
		name, version, _ := strings.Cut(tc, "-")
		cmds, ok := toolchainCommands[name]
		if !ok {
			t.Errorf("%s: no command known for this toolchain", tc)
			continue
		}
		for _, c := range cmds {
			cmd := strings.ReplaceAll(c[0], "%s", version)
			tasks = append(tasks, svc.Task{Cmd: cmd, Args: c[1:]})
			names = append(names, tc+": "+cmd)
		}
	}
	t.Logf("toolchains: %v", toolchains)
	var steps []svc.Step
	for i := 0; i < len(tasks); i += 4 {
		steps = append(steps, svc.Parallel(tasks[i:min(i+4, len(tasks))]...))
	}
	resp := run(t, sb, steps...)
	for i, name := range names {
		r := resp.Results[i/4].Results[i%4]
		if r.Outcome != svc.OutcomeExited || r.ExitCode != 0 || len(r.Stats.DeniedSyscalls) > 0 {
			t.Errorf("%s: %s exit %d, refused %v\nstdout: %s\nstderr: %s", name, r.Outcome, r.ExitCode,
				r.Stats.DeniedSyscalls, clip(r.Stdout), clip(r.Stderr))
		}
	}
}

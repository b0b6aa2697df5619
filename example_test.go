package svc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/svc-sandbox/svc"
)

// The examples that make a Sandbox need root, namespaces and cgroups, and
// go test cannot skip an example: it runs every one with an Output
// comment, as any user, and fails it on a different output. So those are
// compile-only (no Output comment), and the tests show what they do on a
// real sandbox (TestEndToEndNative, TestOutputsCollected,
// TestLimitTaskMemory); the examples that need no sandbox are checked.

// A Sandbox for a judge: tighter limits than the defaults, the v2
// profiles only, logs to the default logger. One state directory serves
// one Sandbox at a time; a Sandbox serves many requests at once, and is
// closed when the program is done with it. (Compile-only: it needs root.)
func ExampleNew() {
	sb, err := svc.New(svc.Config{
		StateDir: "/var/lib/judge/svc",
		Limits: svc.Limits{
			MemoryMax:    512 * svc.MiB,
			CPUTimeLimit: 2 * time.Second,
			WallTimeout:  5 * time.Second,
		},
		AllowedProfiles: []svc.Profile{svc.ProfileCompileV2, svc.ProfileNativeV2},
		Logger:          slog.Default(),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())
	first, n := sb.HostIDs()
	fmt.Printf("cgroup v%d, %d task slots, host ids %d..%d\n",
		sb.CgroupVersion(), sb.Limits().MaxConcurrency, first, first+n-1)
}

// Compile a C program with gcc (compile_v2, the default profile) and run
// it on an input under native_v2, the profile of a submission: a failed
// task is an outcome in its result, an error means the request was
// refused or did not run. (Compile-only: it needs root.)
func ExampleSandbox_Run() {
	sb, err := svc.New(svc.Config{StateDir: "/var/lib/judge/svc"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	src := "#include <stdio.h>\nint main(void) { long a, b; scanf(\"%ld %ld\", &a, &b); printf(\"%ld\\n\", a + b); }\n"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := sb.Run(ctx, &svc.Request{
		Steps: []svc.Step{
			svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "main", "main.c"},
				Files: map[string]svc.File{"main.c": {Content: src}}}),
			svc.Single(svc.Task{Cmd: "./main", Stdin: "1 2\n", SandboxProfile: svc.ProfileNativeV2}),
		},
		StopOnFailure: true, // no run after a compile error
	})
	switch {
	case errors.Is(err, svc.ErrCapacityExhausted):
		log.Fatal("busy: try again later")
	case err != nil:
		log.Fatal(err) // an *svc.Error; its Msg names the field at fault
	}

	build, prog := resp.Results[0].Results[0], resp.Results[1].Results[0]
	if build.Outcome != svc.OutcomeExited || build.ExitCode != 0 {
		log.Fatalf("compile error:\n%s", build.Stderr)
	}
	switch prog.Outcome {
	case svc.OutcomeExited:
		fmt.Printf("exit %d, stdout %q\n", prog.ExitCode, prog.Stdout)
	case svc.OutcomePolicyViolation:
		fmt.Println("a forbidden system call")
	default: // timed_out, cpu_time_exceeded, out_of_memory, signaled, ...
		fmt.Println(prog.Outcome)
	}
	// A statistic the kernel does not provide is nil, never a made-up 0.
	if s := prog.Stats; s.CPUUsageUsec != nil && s.MemoryPeakBytes != nil {
		fmt.Printf("%d µs of CPU, %d bytes of memory at the peak, %d ms\n", *s.CPUUsageUsec, *s.MemoryPeakBytes, s.WallTimeMs)
	}
	// The calls native_v2 refused with ENOSYS, by name: a program that
	// failed because of one says so here.
	for name, n := range prog.Stats.DeniedSyscalls {
		fmt.Printf("denied %s %d times\n", name, n)
	}
}

// A parallel step: the program built once, then run on several inputs at
// once, each run in a sandbox of its own sharing the workspace; the
// results come back in the order of the tasks. (Compile-only: it needs
// root.)
func ExampleSandbox_Run_parallel() {
	sb, err := svc.New(svc.Config{StateDir: "/var/lib/judge/svc"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	src := "#include <stdio.h>\nint main(void) { long a, b; scanf(\"%ld %ld\", &a, &b); printf(\"%ld\\n\", a + b); }\n"
	inputs := []string{"1 2\n", "40 2\n", "-1 1\n"}
	runs := make([]svc.Task, len(inputs))
	for i, in := range inputs {
		runs[i] = svc.Task{Cmd: "./main", Stdin: in, SandboxProfile: svc.ProfileNativeV2}
	}
	resp, err := sb.Run(context.Background(), &svc.Request{
		Steps: []svc.Step{
			svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "main", "main.c"},
				Files: map[string]svc.File{"main.c": {Content: src}}}),
			svc.Parallel(runs...),
		},
		StopOnFailure: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	for i, r := range resp.Results[1].Results {
		fmt.Printf("input %d: %s, stdout %q\n", i, r.Outcome, r.Stdout)
	}
}

// A task's output files (Task.Outputs) come back as stored files of the
// Sandbox's file store, exact bytes: here a checker writes its verdict
// to a file. A path names no file, or not a regular one, or one too
// large, and its entry says so. (Compile-only: it needs root.)
func ExampleTask_outputs() {
	files, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: "/var/lib/judge/files"})
	if err != nil {
		log.Fatal(err)
	}
	defer files.Close()
	sb, err := svc.New(svc.Config{StateDir: "/var/lib/judge/svc", Files: files})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{
			Cmd:     "sh",
			Args:    []string{"-c", "mkdir -p check && echo accepted > check/verdict.txt"},
			Outputs: []string{"check/verdict.txt", "check/log.txt"},
		}),
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []string{"check/verdict.txt", "check/log.txt"} {
		o := resp.Results[0].Results[0].Outputs[p]
		if o.Error != "" {
			fmt.Printf("%s: %s\n", p, o.Error) // check/log.txt: not_found
			continue
		}
		f, _, err := files.Open(o.FileID)
		if err != nil {
			log.Fatal(err) // expired or deleted since
		}
		b, _ := io.ReadAll(f)
		f.Close()
		fmt.Printf("%s: %d bytes: %q\n", p, o.Size, b)
	}
}

// A judge's run under a problem's limits (Task.Limits): 1 s of CPU time
// and 64 MiB for the submission, while its compile has the Sandbox's
// (256 MiB and 5 s by default). A task may only lower a limit: a higher
// one is limits_exceeded, naming the field and the Sandbox's value.
// (Compile-only: it needs root.)
func ExampleTask_limits() {
	sb, err := svc.New(svc.Config{StateDir: "/var/lib/judge/svc"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(context.Background())

	src := "#include <stdlib.h>\nint main(void) { char *p = malloc(128 << 20); for (int i = 0; i < 128 << 20; i += 4096) p[i] = 1; }\n"
	resp, err := sb.Run(context.Background(), &svc.Request{
		Steps: []svc.Step{
			svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "main", "main.c"},
				Files: map[string]svc.File{"main.c": {Content: src}}}),
			svc.Single(svc.Task{Cmd: "./main", SandboxProfile: svc.ProfileNativeV2,
				Limits: svc.TaskLimits{CPUTimeLimit: time.Second, MemoryMax: 64 * svc.MiB}}),
		},
		StopOnFailure: true,
	})
	if err != nil {
		log.Fatal(err) // e.g. steps[1].limits.memory_max_bytes: 536870912 exceeds the service's 268435456
	}
	fmt.Println(resp.Results[1].Results[0].Outcome) // out_of_memory: 128 MiB is over the task's 64
}

// A request as a client sends it, decoded and checked: a mistake is
// refused with a message naming the field, which a server answers with
// 400 and code invalid_request.
func ExampleDecodeRequest() {
	req, err := svc.DecodeRequest(strings.NewReader(`{"steps": [{"cmd": "gcc", "args": ["-o", "main", "main.c"]}, [{"cmd": "./main"}, {"cmd": 7}]]}`))
	fmt.Println(req == nil, err)
	req, err = svc.DecodeRequest(strings.NewReader(`[{"cmd": "echo", "args": ["hi"], "sandbox_profile": "native_v2"}]`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(req.Steps), req.Steps[0].Tasks[0].Cmd, req.Steps[0].Tasks[0].SandboxProfile)
	// Output:
	// true steps[1][1].cmd: expected a string
	// 1 echo native_v2
}

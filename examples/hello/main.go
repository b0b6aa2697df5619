// Command hello compiles a C program with gcc in a sandbox and runs it in
// a second one: the svc library in a few lines. Run it as root:
//
//	go run ./examples/hello
//
// It prints "hello from the sandbox". -uid-base picks the host ids of the
// sandbox identities (svc.Config.UIDBase) when the default range is taken.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/svc-sandbox/svc"
)

const src = `#include <stdio.h>
int main(void) { puts("hello from the sandbox"); return 0; }
`

func main() {
	uidBase := flag.Int("uid-base", 0, "first host uid and gid of the sandbox identities; 0 is the library's default")
	flag.Parse()
	if err := run(*uidBase); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run(uidBase int) error {
	// A state directory of its own: the default, /var/lib/svc, belongs to
	// a running svc serve, and one directory serves one Sandbox at a time.
	dir, err := os.MkdirTemp("", "svc-hello-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	sb, err := svc.New(svc.Config{StateDir: dir, UIDBase: uidBase})
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())

	resp, err := sb.Run(context.Background(), &svc.Request{Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "hello", "hello.c"},
			Files: map[string]svc.File{"hello.c": {Content: src}}}),
		svc.Single(svc.Task{Cmd: "./hello", SandboxProfile: svc.ProfileNativeV2}),
	}, StopOnFailure: true})
	if err != nil {
		return err // refused or not run: an *svc.Error with a Code
	}
	for _, step := range resp.Results { // a failed task is an outcome, not an error
		if r := step.Results[0]; r.Outcome != svc.OutcomeExited || r.ExitCode != 0 {
			return fmt.Errorf("a step ended with %s, exit code %d: %s", r.Outcome, r.ExitCode, r.Stderr+r.Error)
		}
	}
	fmt.Print(resp.Results[1].Results[0].Stdout)
	return nil
}

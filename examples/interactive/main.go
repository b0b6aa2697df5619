// Command interactive judges an interactive problem, a guessing game, on
// the svc library: the solution asks "? x" and the interactor, which
// knows the secret, answers "<", ">" or "=". Both are compiled once (a
// parallel step marked cacheable), then every game is a pair of tasks of
// one parallel step that feed each other: the interactor's stdout is the
// solution's stdin (stdin_from) and the solution's stdout the
// interactor's. Each runs in a sandbox of its own, the solution under
// native_v2, the interactor under compile_v2; the service relays the
// bytes and returns what each wrote as its stdout. The interactor's exit
// status decides. Run it as root:
//
//	go run ./examples/interactive
//
// The interactor (problem/interactor.c) and the solution
// (problem/solution.c) are built into the program.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svc-sandbox/svc"
)

//go:embed problem/interactor.c
var interactorSrc string

//go:embed problem/solution.c
var solutionSrc string

// secrets are the games: one secret each.
var secrets = []int{1, 271828, 1000000}

func main() {
	uidBase := flag.Int("uid-base", 0, "first host uid and gid of the sandbox identities; 0 is the library's default")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *uidBase); err != nil {
		fmt.Fprintln(os.Stderr, "interactive:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, uidBase int) error {
	dir, err := os.MkdirTemp("", "svc-interactive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sb, err := svc.New(svc.Config{StateDir: dir, UIDBase: uidBase, Limits: svc.Limits{
		CPUTimeLimit: time.Second, WallTimeout: 5 * time.Second,
	}})
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())

	cache := true
	compile := svc.Parallel(
		svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "interactor", "interactor.c"},
			Files: map[string]svc.File{"interactor.c": {Content: interactorSrc}}, Cache: &cache},
		svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "solution", "solution.c"},
			Files: map[string]svc.File{"solution.c": {Content: solutionSrc}}, Cache: &cache},
	)
	// Game g is tasks 2g (the interactor) and 2g+1 (the solution), each
	// reading what the other writes.
	var games []svc.Task
	for g, secret := range secrets {
		inter, sol := 2*g, 2*g+1
		games = append(games,
			svc.Task{Cmd: "./interactor", Args: []string{strconv.Itoa(secret)},
				StdinFrom: &sol, SandboxProfile: svc.ProfileCompileV2},
			svc.Task{Cmd: "./solution",
				StdinFrom: &inter, SandboxProfile: svc.ProfileNativeV2},
		)
	}
	resp, err := sb.Run(ctx, &svc.Request{
		Steps:         []svc.Step{compile, svc.Parallel(games...)},
		StopOnFailure: true,
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "guessing game: %d games of solution.c against interactor.c\n", len(secrets))
	for _, c := range resp.Results[0].Results {
		if c.Outcome != svc.OutcomeExited || c.ExitCode != 0 {
			fmt.Fprintf(w, "compilation error (%s, exit code %d):\n%s", c.Outcome, c.ExitCode, c.Stderr)
			return nil
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "game\tsecret\tverdict\tquestions\tsolution\tinteractor says")
	results := resp.Results[1].Results
	for g, secret := range secrets {
		inter, sol := results[2*g], results[2*g+1]
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s\n", g+1, secret, verdict(sol, inter),
			strings.Count(sol.Stdout, "?"), wall(sol), strings.TrimSpace(inter.Stderr))
	}
	tw.Flush()
	inter, sol := results[2], results[3]
	fmt.Fprintln(w, "game 2 as each side wrote it:")
	fmt.Fprintf(w, "  interactor: %s\n", lines(inter.Stdout, 8))
	fmt.Fprintf(w, "  solution:   %s\n", lines(sol.Stdout, 8))
	return nil
}

// verdict judges one game: the solution's own failures first, then the
// interactor's word.
func verdict(sol, inter svc.Result) string {
	switch {
	case sol.Outcome == svc.OutcomeTimedOut || sol.Outcome == svc.OutcomeCPUTimeExceeded:
		return "time limit exceeded"
	case sol.Outcome == svc.OutcomeOutOfMemory:
		return "memory limit exceeded"
	case inter.Outcome == svc.OutcomeExited && inter.ExitCode == 1:
		return "wrong answer"
	case sol.Outcome != svc.OutcomeExited || sol.ExitCode != 0:
		return "runtime error"
	case inter.Outcome == svc.OutcomeExited && inter.ExitCode == 0:
		return "accepted"
	}
	return "judge error: the interactor " + string(inter.Outcome)
}

// lines returns the first n lines of s on one line, "|" between them.
func lines(s string, n int) string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(l) > n {
		return strings.Join(l[:n], " | ") + fmt.Sprintf(" | ... (%d lines)", len(l))
	}
	return strings.Join(l, " | ")
}

// wall is the wall time of a task.
func wall(r svc.Result) string { return fmt.Sprintf("%d ms", r.Stats.WallTimeMs) }

package svc_test

// Interactive tasks (stdin_from) on real sandboxes: an interactor and a
// solution that talk to each other, each in its own sandbox.

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
)

// guessInteractor is the interactor of a guessing game: a secret in [1,
// n] (argv[1]); it writes n, then answers each question "? x" with "<"
// (the secret is smaller), ">" or "=" (found, the end), 20 questions at
// most. It exits 0 once the secret is found, 1 (a wrong answer) on
// anything else, with a word on stderr, as testlib's interactors do. It
// ignores SIGPIPE: a solution that stops reading is a wrong answer, not
// the interactor's crash. Its first stderr line says what it is: its PID
// and whether it may fork.
const guessInteractor = `#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int wrong(const char *why) {
	fprintf(stderr, "wrong answer: %s\n", why);
	return 1;
}

int main(int argc, char **argv) {
	signal(SIGPIPE, SIG_IGN);
	long n = 1000000, secret = atol(argv[1]);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	fprintf(stderr, "pid %d, fork %s\n", (int)getpid(), child > 0 && waitpid(child, NULL, 0) == child ? "ok" : "refused");
	if (printf("%ld\n", n) < 0 || fflush(stdout) != 0)
		return wrong("the solution stopped reading");
	char line[64];
	for (int q = 1;; q++) {
		if (!fgets(line, sizeof line, stdin))
			return wrong("the solution stopped before it found the secret");
		long x;
		char nl;
		if (sscanf(line, "? %ld%c", &x, &nl) != 2 || nl != '\n')
			return wrong("not a question");
		if (q > 20)
			return wrong("more than 20 questions");
		const char *a = secret < x ? "<" : secret > x ? ">" : "=";
		if (printf("%s\n", a) < 0 || fflush(stdout) != 0)
			return wrong("the solution stopped reading");
		if (*a == '=') {
			fprintf(stderr, "ok: found %ld in %d questions\n", secret, q);
			return 0;
		}
	}
}
`

// guessSolution plays the game by bisection (argv[1] "ok", holding 64
// MiB meanwhile) or misbehaves as argv[1] says. Its first stderr line
// gives its PID.
const guessSolution = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	const char *mode = argv[1];
	fprintf(stderr, "pid %d\n", (int)getpid());
	if (!strcmp(mode, "fork"))
		fork();
	if (!strcmp(mode, "exit"))
		return 0;
	if (!strcmp(mode, "close")) {
		close(0);
		printf("? 1\n");
		fflush(stdout);
		return 0;
	}
	if (!strcmp(mode, "silent"))
		for (;;)
			pause();
	if (!strcmp(mode, "spin")) {
		volatile unsigned long x = 0;
		for (;;)
			x++;
	}
	if (!strcmp(mode, "flood"))
		for (;;)
			printf("? 1\n");
	long n;
	if (scanf("%ld", &n) != 1)
		return 2;
	if (!strcmp(mode, "ok")) {
		size_t size = 64 << 20;
		char *p = malloc(size);
		memset(p, 1, size);
	}
	for (long lo = 1, hi = n; lo <= hi;) {
		long mid = !strcmp(mode, "wrong") ? 1 : lo + (hi - lo) / 2;
		printf("? %ld\n", mid);
		fflush(stdout);
		char a[8];
		if (scanf("%7s", a) != 1)
			return 3;
		if (a[0] == '=')
			return 0;
		if (a[0] == '<')
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return 4;
}
`

// guessBuild compiles the interactor and the solution, a step the cache
// replays.
func guessBuild() svc.Step {
	yes := true
	return svc.Parallel(
		svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "interactor", "interactor.c"},
			Files: map[string]svc.File{"interactor.c": {Content: guessInteractor}}, Cache: &yes},
		svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "solution", "solution.c"},
			Files: map[string]svc.File{"solution.c": {Content: guessSolution}}, Cache: &yes},
	)
}

// guessGame is the step of one game: the interactor (compile_v2) and the
// solution (native_v2) feeding each other.
func guessGame(secret int, mode string) svc.Step {
	zero, one := 0, 1
	return svc.Parallel(
		svc.Task{Cmd: "./interactor", Args: []string{strconv.Itoa(secret)}, StdinFrom: &one, SandboxProfile: svc.ProfileCompileV2},
		svc.Task{Cmd: "./solution", Args: []string{mode}, StdinFrom: &zero, SandboxProfile: svc.ProfileNativeV2},
	)
}

// bisect returns the transcripts of a game won by bisection: what the
// interactor and the solution write.
func bisect(n, secret int) (interactor, solution string) {
	var in, sol strings.Builder
	fmt.Fprintf(&in, "%d\n", n)
	for lo, hi := 1, n; lo <= hi; {
		mid := lo + (hi-lo)/2
		fmt.Fprintf(&sol, "? %d\n", mid)
		switch {
		case secret < mid:
			in.WriteString("<\n")
			hi = mid - 1
		case secret > mid:
			in.WriteString(">\n")
			lo = mid + 1
		default:
			in.WriteString("=\n")
			return in.String(), sol.String()
		}
	}
	return in.String(), sol.String()
}

// pipeSandbox is a sandbox with a step cache (the build is replayed)
// and a judge's limits.
func pipeSandbox(t *testing.T) *svc.Sandbox {
	return newCacheSandbox(t, newCache(t, svc.CacheConfig{}), svc.Config{Limits: svc.Limits{
		CPUTimeLimit: time.Second, WallTimeout: 3 * time.Second,
	}})
}

// playGuess runs the build and one game and returns the interactor's and
// the solution's results.
func playGuess(t *testing.T, sb *svc.Sandbox, secret int, mode string) (inter, sol svc.Result) {
	t.Helper()
	resp := runReq(t, sb, &svc.Request{Steps: []svc.Step{guessBuild(), guessGame(secret, mode)}, StopOnFailure: true})
	for _, b := range resp.Results[0].Results {
		expect(t, b, svc.OutcomeExited, 0)
	}
	g := resp.Results[1].Results
	return g[0], g[1]
}

// TestPipeInteractive: an interactor and a solution play a game through
// the service's relays, each in a sandbox of its own: its own PID
// namespace (each is PID 2), profile (the interactor may fork:
// compile_v2), cgroup (only the solution's holds its 64 MiB), and the
// transcripts are exactly what each wrote.
func TestPipeInteractive(t *testing.T) {
	sb := pipeSandbox(t)
	const secret = 271828
	inter, sol := playGuess(t, sb, secret, "ok")
	expect(t, inter, svc.OutcomeExited, 0)
	expect(t, sol, svc.OutcomeExited, 0)
	wantInter, wantSol := bisect(1000000, secret)
	if inter.Stdout != wantInter || sol.Stdout != wantSol || inter.StdoutTruncated || sol.StdoutTruncated {
		t.Errorf("transcripts:\ninteractor %q\nwant       %q\nsolution   %q\nwant       %q", inter.Stdout, wantInter, sol.Stdout, wantSol)
	}
	if want := fmt.Sprintf("pid 2, fork ok\nok: found %d in %d questions\n", secret, strings.Count(wantSol, "?")); inter.Stderr != want {
		t.Errorf("interactor stderr %q, want %q", inter.Stderr, want)
	}
	if sol.Stderr != "pid 2\n" {
		t.Errorf("solution stderr %q", sol.Stderr)
	}
	if s, i := *sol.Stats.MemoryPeakBytes, *inter.Stats.MemoryPeakBytes; s < 64*svc.MiB || i > 32*svc.MiB {
		t.Errorf("memory peaks: solution %d, interactor %d bytes", s, i)
	}
}

// TestPipeMisbehave: a solution that stops reading, never writes, floods,
// closes its stdin early, exits early or breaks its profile's rules ends
// with the outcome its conduct earns, the interactor with its own, and
// the step ends.
func TestPipeMisbehave(t *testing.T) {
	sb := pipeSandbox(t)
	type want struct {
		outcome svc.Outcome
		exit    int
	}
	sigpipe := want{svc.OutcomeSignaled, 128 + int(syscall.SIGPIPE)}
	for _, tc := range []struct {
		mode     string
		sol      []want // any of them
		inter    []want
		interErr string
	}{
		// Asks 21 questions: the interactor says no and ends; the
		// solution reads the end of its stdin.
		{"wrong", []want{{svc.OutcomeExited, 3}}, []want{{svc.OutcomeExited, 1}}, "more than 20 questions"},
		// Never reads an answer, asks on: the interactor's answers wait in
		// the pipes until it ends at the 21st question, and the
		// solution's next question fails with EPIPE.
		{"flood", []want{sigpipe}, []want{{svc.OutcomeExited, 1}}, "more than 20 questions"},
		// Never writes, burns CPU: its CPU limit ends it, then the
		// interactor reads end-of-file (on a loaded machine the wall
		// limits may come first).
		{"spin", []want{{svc.OutcomeCPUTimeExceeded, 137}, {svc.OutcomeTimedOut, 137}}, []want{{svc.OutcomeExited, 1}, {svc.OutcomeTimedOut, 137}}, ""},
		// Never writes, sleeps: the wall limits end both, the solution
		// first or at once.
		{"silent", []want{{svc.OutcomeTimedOut, 137}}, []want{{svc.OutcomeExited, 1}, {svc.OutcomeTimedOut, 137}}, ""},
		// Closes its stdin, asks, exits: the interactor's answer finds no
		// reader.
		{"close", []want{{svc.OutcomeExited, 0}}, []want{{svc.OutcomeExited, 1}}, ""},
		{"exit", []want{{svc.OutcomeExited, 0}}, []want{{svc.OutcomeExited, 1}}, ""},
		// Forks, which its profile (native_v2) does not allow: the
		// solution is killed, the interactor reads end-of-file.
		{"fork", []want{{svc.OutcomePolicyViolation, 159}}, []want{{svc.OutcomeExited, 1}}, "wrong answer"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			inter, sol := playGuess(t, sb, 5, tc.mode)
			is := func(r svc.Result, ws []want) bool {
				for _, w := range ws {
					if r.Outcome == w.outcome && r.ExitCode == w.exit {
						return true
					}
				}
				return false
			}
			if !is(sol, tc.sol) {
				t.Errorf("solution: %s exit %d, want one of %v; stderr %q", sol.Outcome, sol.ExitCode, tc.sol, clip(sol.Stderr))
			}
			if !is(inter, tc.inter) || !strings.Contains(inter.Stderr, tc.interErr) {
				t.Errorf("interactor: %s exit %d, want one of %v; stderr %q, want %q", inter.Outcome, inter.ExitCode, tc.inter, clip(inter.Stderr), tc.interErr)
			}
			if sol.Stats.WallTimeMs > 5000 || inter.Stats.WallTimeMs > 5000 {
				t.Errorf("wall times %d and %d ms, past the wall limits", sol.Stats.WallTimeMs, inter.Stats.WallTimeMs)
			}
		})
	}
}

// TestPipeTranscript: a stream past the output limit through the pipe:
// the transcript is the first bytes exactly, cut with stdout_truncated,
// while every byte reaches the consumer and the producer exits normally
// (never output_limit); the request's output budget, and the producer's
// own lower limit (Task.Limits), cut it the same way.
func TestPipeTranscript(t *testing.T) {
	const total = 3_000_000
	src := "seq 1 1000000 | head -c " + strconv.Itoa(total)
	for _, tc := range []struct {
		name   string
		limits svc.Limits
		task   svc.TaskLimits // the producer's own
		want   int
	}{
		{"output limit", svc.Limits{OutputLimit: svc.MiB}, svc.TaskLimits{}, svc.MiB},
		{"request output budget", svc.Limits{OutputLimit: svc.MiB, RequestOutputLimit: 100 * svc.KiB}, svc.TaskLimits{}, 100 * svc.KiB},
		{"the producer's own output limit", svc.Limits{OutputLimit: svc.MiB}, svc.TaskLimits{OutputLimit: 10 * svc.KiB}, 10 * svc.KiB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t, svc.Config{Limits: tc.limits})
			zero := 0
			prod := sh(src)
			prod.Limits = tc.task
			resp := run(t, sb,
				svc.Single(sh(src+" > want")),
				// cmp exits 0 if it read every byte, and writes nothing:
				// the budget's rest, if any, is the consumer's.
				svc.Parallel(prod, svc.Task{Cmd: "cmp", Args: []string{"-s", "-", "want"}, StdinFrom: &zero}),
			)
			pr, cons := resp.Results[1].Results[0], resp.Results[1].Results[1]
			expect(t, pr, svc.OutcomeExited, 0)
			expect(t, cons, svc.OutcomeExited, 0)
			full, err := exec.Command("sh", "-c", src).Output()
			if err != nil {
				t.Fatal(err)
			}
			want := string(full[:tc.want])
			if len(full) != total || pr.Stdout != want || !pr.StdoutTruncated {
				t.Errorf("transcript %d bytes (the first ones: %v), truncated %v; want %d", len(pr.Stdout), strings.HasPrefix(want, pr.Stdout), pr.StdoutTruncated, tc.want)
			}
		})
	}
}

// TestPipeCache: a piped step of deterministic tasks is stored and
// replayed like any other, with the same transcripts.
func TestPipeCache(t *testing.T) {
	sb := pipeSandbox(t)
	zero := 0
	yes := true
	game := guessGame(4242, "ok")
	for i := range game.Tasks {
		game.Tasks[i].Cache = &yes
	}
	req := &svc.Request{Steps: []svc.Step{guessBuild(), game}}
	first := runReq(t, sb, req)
	wantSummary(t, first, 0, 2)
	second := runReq(t, sb, req)
	wantSummary(t, second, 2, 0)
	wantReplayed(t, second, true, true)
	sameResults(t, first, second)
	wantInter, wantSol := bisect(1000000, 4242)
	if g := second.Results[1].Results; g[0].Stdout != wantInter || g[1].Stdout != wantSol {
		t.Errorf("replayed transcripts %q, %q", g[0].Stdout, g[1].Stdout)
	}
	// Which task feeds which is part of the key: the same tasks piped
	// the other way miss.
	game.Tasks[0].StdinFrom, game.Tasks[1].StdinFrom = nil, &zero
	third := runReq(t, sb, &svc.Request{Steps: []svc.Step{guessBuild(), game}})
	wantSummary(t, third, 1, 1)
}

// TestPipeCancel: cancelling a request ends both sides of a pipe that
// would otherwise wait on each other until their wall limits.
func TestPipeCancel(t *testing.T) {
	sb := newSandbox(t, svc.Config{})
	zero, one := 0, 1
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.Run(ctx, &svc.Request{Steps: []svc.Step{svc.Parallel(
		svc.Task{Cmd: "cat", StdinFrom: &one}, svc.Task{Cmd: "cat", StdinFrom: &zero})}})
	if err == nil || svc.CodeOf(err) != svc.CodeCancelled && svc.CodeOf(err) != svc.CodeDeadlineExceeded {
		t.Fatalf("Run: %v, want cancelled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Run returned after %v", d)
	}
}

// Command judgefiles is a judge over HTTP at scale: its tests live in
// the server's file store, uploaded once; a submission's request names
// them by id, each run reads its test as stdin_path and writes its
// output to a stdout_path file, a checker compares in the sandbox, and
// only verdicts come back. The compile commands come from GET
// /languages. Against a server:
//
//	go run ./cmd/svc serve                   # logs the generated API key
//	go run ./examples/judgefiles -key <that key>
//
// It generates a problem (print the sum of the integers of the input)
// with -tests tests of about -size bytes each, uploads them, judges a
// right and a wrong C++ solution, and prints each verdict with what the
// requests and responses of a submission weighed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/client"
)

const right = `#include <cstdio>
int main() { long long s = 0, x; while (scanf("%lld", &x) == 1) s += x; printf("%lld\n", s); }
`

// wrong forgets the last number of a test whose sum is odd.
const wrong = `#include <cstdio>
int main() { long long s = 0, x, last = 0; while (scanf("%lld", &x) == 1) { s += x; last = x; } if (s % 2) s -= last; printf("%lld\n", s); }
`

// checker compares whitespace-separated tokens, testlib's convention:
// checker input output answer; exit 0 accepted, 1 wrong answer.
const checker = `#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
	if (argc != 4) return 3;
	FILE *o = fopen(argv[2], "r"), *a = fopen(argv[3], "r");
	if (!o || !a) return 3;
	char x[256], y[256];
	for (int k = 1;; k++) {
		int ho = fscanf(o, "%255s", x) == 1, ha = fscanf(a, "%255s", y) == 1;
		if (!ho && !ha) return 0;
		if (ho != ha || strcmp(x, y)) { fprintf(stderr, "token %d differs\n", k); return 1; }
	}
}
`

func main() {
	url := flag.String("url", envOr("SVC_URL", "http://127.0.0.1:8080"), "the server's base URL")
	key := flag.String("key", os.Getenv("SVC_KEY"), "the server's API key")
	n := flag.Int("tests", 12, "number of tests")
	size := flag.Int("size", 64<<10, "bytes of input per test, about")
	flag.Parse()
	c, err := client.New(client.Config{URL: *url, Key: *key})
	if err != nil {
		fmt.Fprintln(os.Stderr, "judgefiles:", err)
		os.Exit(1)
	}
	if err := run(context.Background(), os.Stdout, c, *n, *size); err != nil {
		fmt.Fprintln(os.Stderr, "judgefiles:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// test is a stored test: the file ids of its input and its answer.
type test struct{ in, ans string }

func run(ctx context.Context, w io.Writer, c *client.Client, n, size int) error {
	langs, err := c.Languages(ctx)
	if err != nil {
		return err
	}
	recipe := func(name string) (svc.Language, error) {
		for _, l := range langs {
			if l.Name == name {
				return l, nil
			}
		}
		return svc.Language{}, fmt.Errorf("the server's image has no %s toolchain", name)
	}
	cpp, err := recipe("cpp")
	if err != nil {
		return err
	}
	cc, err := recipe("c")
	if err != nil {
		return err
	}
	// Once: the tests into the file store. A judge keeps the ids.
	tests, err := upload(ctx, c, n, size)
	if err != nil {
		return err
	}
	for _, sub := range []struct{ name, src string }{{"right", right}, {"wrong", wrong}} {
		req := submission(cpp, cc, sub.src, tests)
		body, _ := json.Marshal(req)
		resp, err := c.Execute(ctx, req)
		if err != nil {
			return err
		}
		back, _ := json.Marshal(resp)
		verdicts := verdictsOf(resp, len(tests))
		accepted := strings.Count(strings.Join(verdicts, " "), "accepted")
		fmt.Fprintf(w, "%s: %d of %d accepted; request %d bytes, response %d bytes\n", sub.name, accepted, len(tests), len(body), len(back))
		fmt.Fprintf(w, "  %s\n", strings.Join(verdicts, " "))
	}
	return nil
}

// upload generates and stores n tests of about size bytes of input.
func upload(ctx context.Context, c *client.Client, n, size int) ([]test, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ts []test
	for i := range n {
		var in bytes.Buffer
		var sum int64
		for in.Len() < size {
			x := rng.Int64N(2_000_000) - 1_000_000
			sum += x
			in.WriteString(strconv.FormatInt(x, 10))
			in.WriteByte('\n')
		}
		upIn, err := c.UploadBytes(ctx, fmt.Sprintf("%d.in", i+1), in.Bytes())
		if err != nil {
			return nil, err
		}
		upAns, err := c.UploadBytes(ctx, fmt.Sprintf("%d.ans", i+1), []byte(strconv.FormatInt(sum, 10)+"\n"))
		if err != nil {
			return nil, err
		}
		ts = append(ts, test{upIn.FileID, upAns.FileID})
	}
	return ts, nil
}

// width is the tests a parallel step runs at once.
const width = 8

// submission is the request that judges src on tests: the solution's and
// the checker's builds (cached: replayed on the next submission with the
// same source), a parallel step per width tests, each run reading its
// test from stdin_path and writing stdout_path, then a parallel step of
// checkers, each comparing its share and printing "N status".
func submission(cpp, cc svc.Language, src string, tests []test) *svc.Request {
	cache := true
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: cpp.Build[0], Args: cpp.Build[1:], SandboxProfile: cpp.BuildProfile, Cache: &cache,
			Files: map[string]svc.File{cpp.Source: {Content: src}}}),
		svc.Single(svc.Task{Cmd: cc.Build[0], Args: cc.Build[1:], SandboxProfile: cc.BuildProfile, Cache: &cache,
			WorkingDir: "/svc/checker", Files: map[string]svc.File{"checker/" + cc.Source: {Content: checker}}}),
	}}
	for i := 0; i < len(tests); i += width {
		var runs []svc.Task
		for j := i; j < min(i+width, len(tests)); j++ {
			in := fmt.Sprintf("t/%d.in", j+1)
			runs = append(runs, svc.Task{Cmd: cpp.Run[0], Args: cpp.Run[1:], SandboxProfile: cpp.RunProfile,
				Files: map[string]svc.File{in: {FileID: tests[j].in}}, StdinPath: in, StdoutPath: fmt.Sprintf("t/%d.out", j+1)})
		}
		req.Steps = append(req.Steps, svc.Parallel(runs...))
	}
	checks := make([]svc.Task, min(width, len(tests)))
	var scripts = make([]string, len(checks))
	for j, t := range tests {
		k := j % len(checks)
		if checks[k].Files == nil {
			checks[k].Files = map[string]svc.File{}
		}
		checks[k].Files[fmt.Sprintf("t/%d.ans", j+1)] = svc.File{FileID: t.ans}
		scripts[k] += fmt.Sprintf("./checker/%s t/%d.in t/%d.out t/%d.ans; echo %d $?\n", cc.Run[0][2:], j+1, j+1, j+1, j+1)
	}
	for k := range checks {
		checks[k].Cmd, checks[k].Args, checks[k].SandboxProfile = "sh", []string{"-c", scripts[k]}, svc.ProfileCompileV2
	}
	req.Steps = append(req.Steps, svc.Parallel(checks...))
	return req
}

// verdictsOf reads the verdict of each test: the run's outcome, then the
// checker's status.
func verdictsOf(resp *svc.Response, n int) []string {
	v := make([]string, n)
	build := resp.Results[0].Results[0]
	if build.Outcome != svc.OutcomeExited || build.ExitCode != 0 {
		for i := range v {
			v[i] = "compilation-error"
		}
		return v
	}
	runs := resp.Results[2 : len(resp.Results)-1]
	status := map[int]int{}
	for _, r := range resp.Results[len(resp.Results)-1].Results {
		for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			var j, s int
			if _, err := fmt.Sscan(line, &j, &s); err == nil {
				status[j-1] = s
			}
		}
	}
	for j := range v {
		r := runs[j/width].Results[j%width]
		switch s, ok := status[j]; {
		case r.Outcome != svc.OutcomeExited || r.ExitCode != 0:
			v[j] = string(r.Outcome)
		case !ok || s > 1:
			v[j] = "judge-error"
		case s == 0:
			v[j] = "accepted"
		default:
			v[j] = "wrong-answer"
		}
	}
	return v
}

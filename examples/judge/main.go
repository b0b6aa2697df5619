// Command judge is a small online judge on the svc library. It uploads a
// C++ solution and its tests to a file store, compiles the solution once
// (a step marked cacheable, which a sandbox with a step cache replays),
// runs every test as one parallel step, collects the output file each
// run writes (Task.Outputs), compares it with the expected one and prints
// a verdict table with the time and memory of each test. Run it as root:
//
//	go run ./examples/judge
//
// The solution (problem/solution.cpp) and the tests (problem/tests/N.in
// and N.out) are built into the program. The problem reads input.txt and
// writes output.txt, olympiad style: a task's standard input is a string
// of the request, while a file can be a stored file, uploaded once and
// used by every submission; and an output file comes back as a stored
// file, its bytes exact (standard output is text: bytes that are not
// UTF-8 would be replaced).
package main

import (
	"bytes"
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svc-sandbox/svc"
)

//go:embed problem/solution.cpp
var solution []byte

//go:embed problem/tests
var tests embed.FS

// limits are the judge's limits. A Sandbox's limits hold for every task,
// the compiler's included: 1 s of CPU time is plenty for g++ on one file.
var limits = svc.Limits{
	CPUTimeLimit: time.Second,
	WallTimeout:  5 * time.Second,
	MemoryMax:    256 * svc.MiB,
}

func main() {
	uidBase := flag.Int("uid-base", 0, "first host uid and gid of the sandbox identities; 0 is the library's default")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *uidBase); err != nil {
		fmt.Fprintln(os.Stderr, "judge:", err)
		os.Exit(1)
	}
}

// test is one test: its name, the stored input and the expected output.
type test struct {
	name   string
	fileID string
	want   string
}

func run(ctx context.Context, w io.Writer, uidBase int) error {
	dir, err := os.MkdirTemp("", "svc-judge-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The file store keeps each content once, under its SHA-256: a real
	// judge uploads its tests once and every submission refers to them.
	store, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: filepath.Join(dir, "files")})
	if err != nil {
		return err
	}
	defer store.Close()
	sb, err := svc.New(svc.Config{StateDir: dir, UIDBase: uidBase, Files: store, Limits: limits})
	if err != nil {
		return err
	}
	defer sb.Close(context.Background())

	src, _, err := store.Put(ctx, bytes.NewReader(solution), "solution.cpp", "text/x-c++src")
	if err != nil {
		return err
	}
	ts, err := upload(ctx, store)
	if err != nil {
		return err
	}

	// Step 1 compiles, step 2 runs every test at once, each in its own
	// directory of the shared workspace, under the native profile (no
	// processes, no sockets). stop_on_failure skips step 2 when the
	// compilation fails.
	cache := true
	compile := svc.Task{
		Cmd:   "g++",
		Args:  []string{"-O2", "-std=gnu++17", "-o", "solution", "solution.cpp"},
		Files: map[string]svc.File{"solution.cpp": {FileID: src.ID}},
		Cache: &cache, // deterministic: replayed from the step cache when there is one
	}
	var runs []svc.Task
	for _, t := range ts {
		dir := "tests/" + t.name + "/"
		runs = append(runs, svc.Task{
			Cmd:            "/svc/solution",
			WorkingDir:     "/svc/" + dir,
			Files:          map[string]svc.File{dir + "input.txt": {FileID: t.fileID}},
			SandboxProfile: svc.ProfileNativeV2,
			// Workspace-relative, whatever the working dir.
			Outputs: []string{dir + "output.txt"},
		})
	}
	resp, err := sb.Run(ctx, &svc.Request{
		Steps:         []svc.Step{svc.Single(compile), svc.Parallel(runs...)},
		StopOnFailure: true,
	})
	if err != nil {
		return err
	}

	c := resp.Results[0].Results[0]
	fmt.Fprintf(w, "judging solution.cpp on %d tests\n", len(ts))
	if c.Outcome != svc.OutcomeExited || c.ExitCode != 0 {
		fmt.Fprintf(w, "compilation error (%s, exit code %d):\n%s", c.Outcome, c.ExitCode, c.Stderr)
		return nil
	}
	fmt.Fprintf(w, "compiled in %s\n", cpu(c))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\tverdict\ttime\tmemory")
	accepted := 0
	for i, t := range ts {
		r := resp.Results[1].Results[i]
		out, err := output(store, r, "tests/"+t.name+"/output.txt")
		if err != nil {
			return err
		}
		v := verdict(r, out, t.want)
		if v == "accepted" {
			accepted++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.name, v, cpu(r), mem(r))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d tests accepted\n", accepted, len(ts))
	return nil
}

// upload stores the input of every test and returns the tests in order.
func upload(ctx context.Context, store *svc.FileStore) ([]test, error) {
	entries, err := tests.ReadDir("problem/tests")
	if err != nil {
		return nil, err
	}
	var ts []test
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".in")
		if !ok {
			continue
		}
		in, err := tests.ReadFile("problem/tests/" + name + ".in")
		if err != nil {
			return nil, err
		}
		want, err := tests.ReadFile("problem/tests/" + name + ".out")
		if err != nil {
			return nil, err
		}
		sf, _, err := store.Put(ctx, bytes.NewReader(in), name+".in", "text/plain")
		if err != nil {
			return nil, err
		}
		ts = append(ts, test{name: name, fileID: sf.ID, want: string(want)})
	}
	slices.SortFunc(ts, func(a, b test) int {
		x, _ := strconv.Atoi(a.name)
		y, _ := strconv.Atoi(b.name)
		return x - y
	})
	return ts, nil
}

// output returns the content of the output file p of the run r: "" when
// the run left none (it failed, or wrote nothing).
func output(store *svc.FileStore, r svc.Result, p string) (string, error) {
	o := r.Outputs[p]
	if o.FileID == "" {
		return "", nil // o.Error says why: not_found, too_large, ...
	}
	f, _, err := store.Open(o.FileID)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// verdict judges one run: the outcome first, then the output file,
// compared token by token (whitespace does not matter).
func verdict(r svc.Result, out, want string) string {
	switch r.Outcome {
	case svc.OutcomeExited:
		switch {
		case r.ExitCode != 0:
			return "runtime error"
		case slices.Equal(strings.Fields(out), strings.Fields(want)):
			return "accepted"
		}
		return "wrong answer"
	case svc.OutcomeTimedOut, svc.OutcomeCPUTimeExceeded:
		return "time limit exceeded"
	case svc.OutcomeOutOfMemory:
		return "memory limit exceeded"
	case svc.OutcomeOutputLimit:
		return "output limit exceeded"
	case svc.OutcomeSignaled, svc.OutcomePolicyViolation, svc.OutcomePidsLimit:
		return "runtime error"
	}
	return "judge error: " + string(r.Outcome) // not run: judge it again
}

// cpu is the CPU time of a task.
func cpu(r svc.Result) string {
	if r.Stats.CPUUsageUsec == nil {
		return "-"
	}
	return fmt.Sprintf("%d ms", *r.Stats.CPUUsageUsec/1000)
}

// mem is the peak memory of a task.
func mem(r svc.Result) string {
	if r.Stats.MemoryPeakBytes == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(*r.Stats.MemoryPeakBytes)/svc.MiB)
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/svc-sandbox/svc"
)

// The judged-files figure: 48 tests of 1 MiB, stored once.
const (
	filesTestSize = 1 << 20
	stdinFileSize = 256 << 20
)

// sumCPP sums the integers of its input, with a judge's fast input.
const sumCPP = `#include <cstdio>
static char buf[1 << 16];
int main() {
	long long s = 0, x = 0; bool in = false, neg = false;
	for (size_t n; (n = fread(buf, 1, sizeof buf, stdin)) > 0;)
		for (size_t i = 0; i < n; i++) {
			char c = buf[i];
			if (c == '-') neg = true;
			else if (c >= '0' && c <= '9') { x = x * 10 + (c - '0'); in = true; }
			else { if (in) s += neg ? -x : x; x = 0; in = neg = false; }
		}
	if (in) s += neg ? -x : x;
	printf("%lld\n", s);
}
`

// tokenChecker compares tokens, testlib's convention.
const tokenChecker = `#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
	if (argc != 4) return 3;
	FILE *o = fopen(argv[2], "r"), *a = fopen(argv[3], "r");
	if (!o || !a) return 3;
	char x[256], y[256];
	for (;;) {
		int ho = fscanf(o, "%255s", x) == 1, ha = fscanf(a, "%255s", y) == 1;
		if (!ho && !ha) return 0;
		if (ho != ha || strcmp(x, y)) return 1;
	}
}
`

// filesTest returns test i: about 1 MiB of integers, and their sum.
func filesTest(i int) (in []byte, answer string) {
	var b bytes.Buffer
	var sum int64
	x := int64(i*7919 + 1)
	for b.Len() < filesTestSize-16 {
		x = (x*1103515245 + 12345) % 2147483648
		v := x%2_000_001 - 1_000_000
		sum += v
		b.WriteString(strconv.FormatInt(v, 10))
		b.WriteByte('\n')
	}
	return b.Bytes(), strconv.FormatInt(sum, 10) + "\n"
}

// selfCPU is the CPU time, user and system, this process has used: the
// service's, for a Sandbox in it.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// judgedFiles measures a judged submission whose tests are stored files:
// the solution's and the checker's builds replayed from a step cache, 48
// tests of 1 MiB read as stdin_path and written to stdout_path in six
// parallel steps of 8 under native_v2, and a token checker comparing in
// the sandbox (eight checker tasks of six tests). Its baselines: bare
// fork+exec of the same solution and checker on the host, 8 at a time,
// each test's input and output files; and the same judging with each
// test's 1 MiB as inline stdin and the outputs compared here (in the
// library: over HTTP its 48 MiB of body would pass
// EXECUTE_BODY_LIMIT_BYTES). It adds the bytes of a submission's request
// and response, as JSON, and the service's own CPU per test.
func (b *bench) judgedFiles() error {
	dir, err := os.MkdirTemp(b.dir, "judged-files-")
	if err != nil {
		return err
	}
	ins := make([][]byte, judgedTests)
	answers := make([]string, judgedTests)
	for i := range ins {
		ins[i], answers[i] = filesTest(i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.in", i)), ins[i], 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.ans", i)), []byte(answers[i]), 0o644); err != nil {
			return err
		}
	}
	for name, src := range map[string]string{"sol.cpp": sumCPP, "checker.c": tokenChecker} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"g++", "-O2", "-o", "sol", "sol.cpp"}, {"gcc", "-O2", "-o", "checker", "checker.c"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s on the host: %w: %s", args[0], err, out)
		}
	}
	host := func() (struct{}, error) {
		for s := 0; s < judgedTests; s += judgedWidth {
			var wg sync.WaitGroup
			errs := make([]error, judgedWidth)
			for j := range judgedWidth {
				wg.Go(func() { errs[j] = hostTest(dir, s+j) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	}

	files, err := svc.OpenFileStore(svc.FileStoreConfig{Dir: filepath.Join(dir, "files")})
	if err != nil {
		return err
	}
	defer files.Close()
	cache, err := svc.OpenCache(svc.CacheConfig{URL: "dir://" + dir + "/cache"})
	if err != nil {
		return fmt.Errorf("step cache: %w", err)
	}
	defer cache.Close()
	sb, err := b.newSandbox("judged-files", svc.Config{Cache: cache, Files: files})
	if err != nil {
		return err
	}
	defer closeSandbox(sb)
	inIDs, ansIDs := make([]string, judgedTests), make([]string, judgedTests)
	for i := range ins {
		in, _, err := files.Put(b.ctx, bytes.NewReader(ins[i]), "in", "")
		if err != nil {
			return err
		}
		ans, _, err := files.Put(b.ctx, strings.NewReader(answers[i]), "ans", "")
		if err != nil {
			return err
		}
		inIDs[i], ansIDs[i] = in.ID, ans.ID
	}
	req := storedJudgeRequest(inIDs, ansIDs)
	check := func(resp *svc.Response) error {
		if err := exitedOK(len(req.Steps))(resp); err != nil {
			return err
		}
		if resp.Cache.ReplayedSteps != 2 {
			return fmt.Errorf("the builds were not replayed: %+v", resp.Cache)
		}
		seen := 0
		for _, r := range resp.Results[len(resp.Results)-1].Results {
			for _, line := range strings.Fields(r.Stdout) {
				if line != "0" {
					return fmt.Errorf("checker statuses %q, want all 0", r.Stdout)
				}
				seen++
			}
		}
		if seen != judgedTests {
			return fmt.Errorf("%d tests checked, want %d", seen, judgedTests)
		}
		return nil
	}
	// The builds stored, whatever --warmup says.
	if _, err := b.runOp(sb, req)(); err != nil {
		return err
	}
	var service []time.Duration
	op := b.runOp(sb, req)
	measured := func() (*svc.Response, error) {
		before := selfCPU()
		resp, err := op()
		service = append(service, (selfCPU()-before)/judgedTests)
		return resp, err
	}
	hostDs, ds, hostCPU, cpu, err := measurePair(b, b.f.heavyRuns, host, noCheck[struct{}], measured, check)
	if err != nil {
		return err
	}
	b.cpu = hostCPU
	base := b.add("judged-files", "judged-files: 48 x 1 MiB tests + checker, host fork+exec", hostDs, nil, target{})
	b.cpu = cpu
	b.add("judged-files", "judged-files: builds replayed + 48 stored tests (stdin_path, stdout_path) + checker in the sandbox", ds, base, ratioAtMost(1.2))
	b.cpu = 0
	b.add("judged-files", "judged-files: the service's own CPU per test (getrusage of this process)", service[len(service)-len(ds):], nil, target{})

	resp, err := op()
	if err != nil {
		return err
	}
	reqJSON, _ := json.Marshal(req)
	respJSON, _ := json.Marshal(resp)
	n := len(reqJSON) + len(respJSON)
	bytesRow := b.add("judged-files", fmt.Sprintf("judged-files: bytes per submission: %d (request %d + response %d)", n, len(reqJSON), len(respJSON)),
		nil, nil, target{text: "<= 64 KiB", ok: func(*row) bool { return n <= 64<<10 }})
	_ = bytesRow

	if err := b.judgedFilesParts(sb, req, inIDs); err != nil {
		return err
	}

	// (a) Inline stdin, outputs compared here.
	inline := &svc.Request{StopOnFailure: true, Steps: []svc.Step{req.Steps[0]}}
	for s := 0; s < judgedTests; s += judgedWidth {
		tasks := make([]svc.Task, judgedWidth)
		for j := range tasks {
			tasks[j] = svc.Task{Cmd: "./sol", Stdin: string(ins[s+j]), SandboxProfile: svc.ProfileNativeV2}
		}
		inline.Steps = append(inline.Steps, svc.Parallel(tasks...))
	}
	checkInline := func(resp *svc.Response) error {
		if err := exitedOK(len(inline.Steps))(resp); err != nil {
			return err
		}
		for s, sr := range resp.Results[1:] {
			for j, r := range sr.Results {
				if strings.Fields(r.Stdout)[0] != strings.TrimSpace(answers[s*judgedWidth+j]) {
					return fmt.Errorf("inline test %d: %q", s*judgedWidth+j, r.Stdout)
				}
			}
		}
		return nil
	}
	ds, err = measure(b, b.f.heavyRuns, b.runOp(sb, inline), checkInline)
	if err != nil {
		return err
	}
	b.add("judged-files", "judged-files (a): the same with 1 MiB inline stdin each, compared here (library; 48 MiB is over HTTP's body limit)", ds, base, target{})
	return nil
}

// judgedFilesParts measures where a judged-from-files submission's time
// goes beyond the host's: the same six steps of 8 tasks running true,
// each with its test's input placed by file_id and without, next to 48
// true by fork+exec on the host, 8 at a time. The first is the cost of a
// task of the sandbox; the second, less the first, of placing 1 MiB.
func (b *bench) judgedFilesParts(sb *svc.Sandbox, req *svc.Request, inIDs []string) error {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		return err
	}
	host := func() (struct{}, error) {
		for s := 0; s < judgedTests; s += judgedWidth {
			var wg sync.WaitGroup
			errs := make([]error, judgedWidth)
			for j := range judgedWidth {
				wg.Go(func() { errs[j] = exec.Command(trueBin).Run() })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	}
	steps := func(placed bool) *svc.Request {
		r := &svc.Request{StopOnFailure: true}
		for s := 0; s < judgedTests; s += judgedWidth {
			tasks := make([]svc.Task, judgedWidth)
			for j := range tasks {
				tasks[j] = svc.Task{Cmd: "true", SandboxProfile: svc.ProfileNativeV2}
				if placed {
					in := "t/" + strconv.Itoa(s+j) + ".in"
					tasks[j].Files = map[string]svc.File{in: {FileID: inIDs[s+j]}}
				}
			}
			r.Steps = append(r.Steps, svc.Parallel(tasks...))
		}
		return r
	}
	bare, placed := steps(false), steps(true)
	hostDs, ds, _, _, err := measurePair(b, b.f.heavyRuns, host, noCheck[struct{}], b.runOp(sb, bare), exitedOK(len(bare.Steps)))
	if err != nil {
		return err
	}
	base := b.add("judged-files", "judged-files, where the time goes: 48 true, host fork+exec, 8 at a time", hostDs, nil, target{})
	b.add("judged-files", "judged-files, where the time goes: the same in six parallel steps of 8 (native_v2)", ds, base, target{})
	ds, err = measure(b, b.f.heavyRuns, b.runOp(sb, placed), exitedOK(len(placed.Steps)))
	if err != nil {
		return err
	}
	b.add("judged-files", "judged-files, where the time goes: the same, each task's 1 MiB input placed by file_id", ds, base, target{})
	return nil
}

// hostTest runs the solution on test i from its file to a file, then the
// checker on them, both by fork+exec.
func hostTest(dir string, i int) error {
	in, err := os.Open(filepath.Join(dir, fmt.Sprintf("%d.in", i)))
	if err != nil {
		return err
	}
	defer in.Close()
	outPath := filepath.Join(dir, fmt.Sprintf("%d.out", i))
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	sol := exec.Command("./sol")
	sol.Dir, sol.Stdin, sol.Stdout = dir, in, out
	err = sol.Run()
	out.Close()
	if err != nil {
		return fmt.Errorf("host test %d: %w", i, err)
	}
	ck := exec.Command("./checker", fmt.Sprintf("%d.in", i), fmt.Sprintf("%d.out", i), fmt.Sprintf("%d.ans", i))
	ck.Dir = dir
	if err := ck.Run(); err != nil {
		return fmt.Errorf("host check %d: %w", i, err)
	}
	return nil
}

// storedJudgeRequest is the judged-files submission: the builds
// (cacheable), six parallel steps of 8 runs reading their stored test by
// stdin_path and writing stdout_path, and eight checker tasks of six
// tests each, printing one status a test.
func storedJudgeRequest(ins, answers []string) *svc.Request {
	yes := true
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{
		svc.Single(svc.Task{Cmd: "g++", Args: []string{"-O2", "-o", "sol", "sol.cpp"},
			Files: map[string]svc.File{"sol.cpp": {Content: sumCPP}}, Cache: &yes}),
		svc.Single(svc.Task{Cmd: "gcc", Args: []string{"-O2", "-o", "checker", "checker.c"},
			Files: map[string]svc.File{"checker.c": {Content: tokenChecker}}, Cache: &yes}),
	}}
	for s := 0; s < len(ins); s += judgedWidth {
		tasks := make([]svc.Task, 0, judgedWidth)
		for i := s; i < min(s+judgedWidth, len(ins)); i++ {
			in := "t/" + strconv.Itoa(i) + ".in"
			tasks = append(tasks, svc.Task{Cmd: "./sol", Files: map[string]svc.File{in: {FileID: ins[i]}},
				StdinPath: in, StdoutPath: "t/" + strconv.Itoa(i) + ".out", SandboxProfile: svc.ProfileNativeV2})
		}
		req.Steps = append(req.Steps, svc.Parallel(tasks...))
	}
	checks := make([]svc.Task, judgedWidth)
	scripts := make([]string, judgedWidth)
	for i, a := range answers {
		k := i % judgedWidth
		if checks[k].Files == nil {
			checks[k].Files = map[string]svc.File{}
		}
		t := "t/" + strconv.Itoa(i)
		checks[k].Files[t+".ans"] = svc.File{FileID: a}
		scripts[k] += fmt.Sprintf("./checker %[1]s.in %[1]s.out %[1]s.ans; echo $?\n", t)
	}
	for k := range checks {
		checks[k].Cmd, checks[k].Args = "sh", []string{"-c", scripts[k]}
	}
	req.Steps = append(req.Steps, svc.Parallel(checks...))
	return req
}

// stdinFile measures what a 256 MiB stdin_path costs the service: the
// service's own CPU (getrusage of this process) for a request that reads
// the file as stdin, next to one whose task reads it by its path; both
// make the file in a first step, by the task itself. wc -c takes the size from fstat, wc -l
// reads every byte.
func (b *bench) stdinFile() error {
	// The task makes the file itself: the service does no work for it.
	mk := svc.Single(svc.Task{Cmd: "sh", Args: []string{"-c", "head -c " + strconv.Itoa(stdinFileSize) + " /dev/zero > big"}})
	// The tmpfs pages the task writes are charged to its memory.
	sb, err := b.newSandbox("stdin-file", svc.Config{WorkspaceSize: stdinFileSize + 16*svc.MiB, Limits: svc.Limits{MemoryMax: 2 * stdinFileSize}})
	if err != nil {
		return err
	}
	defer closeSandbox(sb)
	want := strconv.Itoa(stdinFileSize) + "\n"
	for _, c := range []struct {
		name string
		task svc.Task
		want string
	}{
		{"256 MiB by path, wc -l big", svc.Task{Cmd: "wc", Args: []string{"-l", "big"}}, "0 big\n"},
		{"256 MiB stdin_path, wc -l", svc.Task{Cmd: "wc", Args: []string{"-l"}, StdinPath: "big"}, "0\n"},
		{"256 MiB stdin_path, wc -c", svc.Task{Cmd: "wc", Args: []string{"-c"}, StdinPath: "big"}, want},
	} {
		c.task.SandboxProfile = svc.ProfileNativeV2
		req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{mk, svc.Single(c.task)}}
		op := b.runOp(sb, req)
		var service []time.Duration
		measured := func() (*svc.Response, error) {
			before := selfCPU()
			resp, err := op()
			service = append(service, selfCPU()-before)
			return resp, err
		}
		ds, err := measure(b, b.f.heavyRuns, measured, func(resp *svc.Response) error {
			if err := exitedOK(2)(resp); err != nil {
				return err
			}
			if got := resp.Results[1].Results[0].Stdout; got != c.want {
				return fmt.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
			return nil
		})
		if err != nil {
			return err
		}
		b.add("stdin-file", "stdin-file: "+c.name+": request wall time", ds, nil, target{})
		b.cpu = 0
		b.add("stdin-file", "stdin-file: "+c.name+": the service's own CPU per request", service[len(service)-len(ds):], nil, target{})
	}
	return nil
}

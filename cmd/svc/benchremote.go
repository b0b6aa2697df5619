package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/svc-sandbox/svc"
)

// The remote figure: what an operator sees, measured from another process.
// svc bench starts itself as a load client (the hidden command
// benchClientCmd), which sends the requests, or fork+execs /bin/true as
// the baseline, from n goroutines for a timed window and reports every
// latency. The server's process then spends its CPU on serving alone, as
// in production, and the client's share shows in the machine's CPU.

// benchClientCmd is the hidden command of the load client.
const benchClientCmd = "bench-client"

// benchKeyEnv passes the API key to the load client: not in its argv,
// which every user of the machine can read.
const benchKeyEnv = "SVC_BENCH_KEY"

// clientReport is what the load client prints: each call's latency, the
// timed window's length and the machine's busy CPU time in it (-1 when
// unknown).
type clientReport struct {
	Latencies []time.Duration `json:"latencies_ns"`
	Elapsed   time.Duration   `json:"elapsed_ns"`
	Busy      time.Duration   `json:"busy_ns"`
}

// benchClient is the load client: with --url it posts trueBody to
// /execute with the key of $SVC_BENCH_KEY, without it fork+execs
// /bin/true; from --clients goroutines, --warmup calls each untimed, then
// for --duration. It prints a clientReport.
func benchClient(args []string, stdout io.Writer) error {
	fs := pflag.NewFlagSet("svc "+benchClientCmd, pflag.ContinueOnError)
	url := fs.String("url", "", "base URL of the server; empty: fork+exec /bin/true")
	clients := fs.Int("clients", 1, "concurrent clients")
	warmup := fs.Int("warmup", 5, "untimed calls per client")
	duration := fs.Duration("duration", 3*time.Second, "timed window")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *clients < 1 || *warmup < 0 || *duration <= 0 {
		return errors.New("bench-client: --clients and --duration must be positive, --warmup not negative")
	}
	op := func() error { _, err := execTrue(); return err }
	if *url != "" {
		op = postTrue(*url+"/execute", os.Getenv(benchKeyEnv), *clients)
	}
	var (
		mu  sync.Mutex // guards rep
		rep clientReport
	)
	run := func(more func(i int) bool, keep bool) error {
		var wg sync.WaitGroup
		errs := make([]error, *clients)
		for c := range *clients {
			wg.Go(func() {
				var ds []time.Duration
				for i := 0; more(i); i++ {
					start := time.Now()
					if err := op(); err != nil {
						errs[c] = err
						return
					}
					ds = append(ds, time.Since(start))
				}
				if keep {
					mu.Lock()
					rep.Latencies = append(rep.Latencies, ds...)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := run(func(i int) bool { return i < *warmup }, false); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	start, busy := time.Now(), busyCPU()
	deadline := start.Add(*duration)
	if err := run(func(int) bool { return time.Now().Before(deadline) }, true); err != nil {
		return err
	}
	rep.Elapsed, rep.Busy = time.Since(start), -1
	if now := busyCPU(); busy >= 0 && now >= 0 {
		rep.Busy = now - busy
	}
	return json.NewEncoder(stdout).Encode(rep)
}

// postTrue returns a call that posts trueBody to url with key and checks
// the answer, over a keep-alive client for n goroutines.
func postTrue(url, key string, n int) func() error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}}
	return func() error {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(trueBody))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		return answerOK(answer{resp.StatusCode, body})
	}
}

// remote adds, for 1, 2 and 8 clients, a row of the load client's fork+exec
// of /bin/true and one of its requests, compared with it: the 1-client row
// by median latency, the others by rate.
func (b *bench) remote() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for _, n := range []int{1, 2, 8} {
		bare, err := b.clientRow(exe, fmt.Sprintf("bare, %d goroutines, another process", n), n, "", nil, target{})
		if err != nil {
			return err
		}
		t := ratioAtLeast(0.45)
		if n == 1 {
			t = ratioAtMost(2.0)
		}
		if _, err := b.clientRow(exe, fmt.Sprintf("http, %d clients, another process", n), n, b.url, bare, t); err != nil {
			return err
		}
	}
	return nil
}

// clientRow runs the load client with n clients against url (fork+exec
// when "") and adds its row. With one client the row compares medians,
// with more it is a rate.
func (b *bench) clientRow(exe, name string, n int, url string, base *row, t target) (*row, error) {
	args := []string{benchClientCmd, "--clients", fmt.Sprint(n), "--warmup", fmt.Sprint(b.f.warmup),
		"--duration", b.f.duration.String()}
	if url != "" {
		args = append(args, "--url", url)
	}
	cmd := exec.CommandContext(b.ctx, exe, args...)
	cmd.Env = append(os.Environ(), benchKeyEnv+"="+b.key)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: load client: %w: %s", name, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var rep clientReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("%s: load client's report: %w", name, err)
	}
	if len(rep.Latencies) == 0 || rep.Elapsed <= 0 {
		return nil, fmt.Errorf("%s: the load client made no call in %s", name, b.f.duration)
	}
	b.cpu = 0
	if rep.Busy >= 0 {
		b.cpu = rep.Busy / time.Duration(len(rep.Latencies))
	}
	r := b.add("remote", name, rep.Latencies, base, t)
	if n > 1 {
		r.PerSecond = float64(len(rep.Latencies)) / rep.Elapsed.Seconds()
	}
	return r, nil
}

// solutionCPP is the solution of the judged figure: it reads n and prints
// the sum of 1..n, with the fast I/O judges' C++ solutions use.
const solutionCPP = `#include <bits/stdc++.h>
int main() {
	std::ios::sync_with_stdio(false);
	std::cin.tie(nullptr);
	long long n;
	std::cin >> n;
	std::cout << n * (n + 1) / 2 << '\n';
}
`

// The judged submission: 48 tests as 6 parallel steps of 8.
const (
	judgedTests = 48
	judgedWidth = 8
)

// judgedAnswer is the expected output of test i.
func judgedAnswer(i int) string {
	n := int64(1000 + i)
	return fmt.Sprintf("%d\n", n*(n+1)/2)
}

// judged measures a judged submission end to end: one request that
// compiles a C++ solution (g++ -O2, a cacheable step, replayed from a
// dir:// step cache after the first) and runs it on 48 tests as six
// parallel steps of 8 under native_v2; next to the same tests on the host,
// the solution compiled once, run by fork+exec from 8 goroutines a step at
// a time.
func (b *bench) judged() error {
	dir, err := os.MkdirTemp(b.dir, "host-judged-")
	if err != nil {
		return err
	}
	if err := os.WriteFile(dir+"/sol.cpp", []byte(solutionCPP), 0o644); err != nil {
		return err
	}
	gxx := exec.Command("g++", "-O2", "-o", "sol", "sol.cpp")
	gxx.Dir = dir
	if out, err := gxx.CombinedOutput(); err != nil {
		return fmt.Errorf("g++ on the host: %w: %s", err, out)
	}
	host := func() ([]string, error) {
		outs := make([]string, judgedTests)
		for s := 0; s < judgedTests; s += judgedWidth {
			var wg sync.WaitGroup
			errs := make([]error, judgedWidth)
			for j := range judgedWidth {
				wg.Go(func() {
					i := s + j
					cmd := exec.Command("./sol")
					cmd.Dir, cmd.Stdin = dir, strings.NewReader(fmt.Sprint(1000+i))
					out, err := cmd.Output()
					outs[i], errs[j] = string(out), err
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
		}
		return outs, nil
	}
	hostCheck := func(outs []string) error {
		for i, out := range outs {
			if out != judgedAnswer(i) {
				return fmt.Errorf("host test %d: wrote %q, want %q", i, out, judgedAnswer(i))
			}
		}
		return nil
	}

	cache, err := svc.OpenCache(svc.CacheConfig{URL: "dir://" + dir + "/cache"})
	if err != nil {
		return fmt.Errorf("step cache: %w", err)
	}
	defer cache.Close()
	sb, err := b.newSandbox("judged", svc.Config{Cache: cache})
	if err != nil {
		return err
	}
	defer closeSandbox(sb)
	yes := true
	req := &svc.Request{StopOnFailure: true, Steps: []svc.Step{svc.Single(svc.Task{
		Cmd: "g++", Args: []string{"-O2", "-o", "sol", "sol.cpp"},
		Files: map[string]svc.File{"sol.cpp": {Content: solutionCPP}}, Cache: &yes,
	})}}
	for s := 0; s < judgedTests; s += judgedWidth {
		tasks := make([]svc.Task, judgedWidth)
		for j := range tasks {
			tasks[j] = svc.Task{Cmd: "./sol", Stdin: fmt.Sprint(1000 + s + j), SandboxProfile: svc.ProfileNativeV2}
		}
		req.Steps = append(req.Steps, svc.Parallel(tasks...))
	}
	check := func(resp *svc.Response) error {
		if err := exitedOK(len(req.Steps))(resp); err != nil {
			return err
		}
		for s, sr := range resp.Results[1:] {
			for j, r := range sr.Results {
				if i := s*judgedWidth + j; r.Stdout != judgedAnswer(i) {
					return fmt.Errorf("test %d: wrote %q, want %q", i, r.Stdout, judgedAnswer(i))
				}
			}
		}
		return nil
	}
	// The first compile, stored, whatever --warmup says.
	if _, err := timed(b.runOp(sb, req), check); err != nil {
		return err
	}
	replayed := func(resp *svc.Response) error {
		if resp.Cache.ReplayedSteps != 1 {
			return fmt.Errorf("the compile step was not replayed: %+v", resp.Cache)
		}
		return check(resp)
	}
	hostDs, ds, hostCPU, cpu, err := measurePair(b, b.f.heavyRuns, host, hostCheck, b.runOp(sb, req), replayed)
	if err != nil {
		return err
	}
	b.cpu = hostCPU
	base := b.add("judged", "judged: 48 tests, host", hostDs, nil, target{})
	b.cpu = cpu
	b.add("judged", "judged: compile replayed + 48 tests, sandbox", ds, base, ratioAtMost(1.3))
	return nil
}

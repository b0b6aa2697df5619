package conformance_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-sandbox/svc"
	"github.com/svc-sandbox/svc/svctest"
)

// parallelCases bounds the cases run at once (go test's -parallel, by
// default GOMAXPROCS, bounds them too).
const parallelCases = 3

// sandboxLimits are the sandbox's limits, raised to what a compile needs.
func sandboxLimits() svc.Limits {
	return svc.Limits{
		MemoryMax:      1 * svc.GiB,
		PidsMax:        256,
		CPUTimeLimit:   maxTimeout,
		WallTimeout:    maxTimeout,
		OverallTimeout: 3 * time.Minute,
		OutputLimit:    svc.DefaultLimits().OutputLimit,
	}
}

// asV1 maps a v2 profile to its v1 counterpart (SVC_CONFORMANCE_V1=1).
var asV1 = map[svc.Profile]svc.Profile{
	svc.ProfileCompileV2: svc.ProfileCompileV1,
	svc.ProfileNativeV2:  svc.ProfileNativeV1,
}

// TestConformance runs every case of cases/ on the host and in the
// sandbox under each of its profiles and compares the results (README.md).
// SVC_CONFORMANCE_V1=1 runs the v2 profiles as their v1 counterparts, to
// tell a refused call from another difference; SVC_CONFORMANCE_STRACE=1
// runs the host side under strace and names the calls each profile's
// allowlist lacks, and SVC_CONFORMANCE_STRACE=<file> also appends each
// case's calls to file, a line "<lang>/<name> call call ..." per build
// and run (the trace tool's -corpus reads them); under CI=true a case whose tools are missing fails
// instead of skipping.
func TestConformance(t *testing.T) {
	svctest.RequireRoot(t)
	dirs, err := caseDirs("cases")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no cases under cases/")
	}
	cacheDir, err := os.MkdirTemp("", "svcconf-cache-")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := svc.OpenCache(svc.CacheConfig{URL: "dir://" + cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cache.Close()
		os.RemoveAll(cacheDir)
	})
	cfg := svc.Config{Limits: sandboxLimits(), AllowedProfiles: svc.Profiles(), Cache: cache}
	if _, err := os.Stat("/usr/local/go/bin/go"); err == nil {
		// Go builds as the server makes them: the standard library
		// prepared once (shared by the tests of this machine).
		cfg.GoBuildCache = svctest.GoBuildCache()
	}
	s := &suite{
		sb:       svctest.New(t, cfg),
		v1:       os.Getenv("SVC_CONFORMANCE_V1") == "1",
		ci:       os.Getenv("CI") == "true",
		trace:    os.Getenv("SVC_CONFORMANCE_STRACE") != "",
		sem:      make(chan struct{}, parallelCases),
		expected: make(map[string]int),
	}
	if s.v1 {
		t.Log("SVC_CONFORMANCE_V1=1: v2 profiles run as v1")
	}
	if cfg.GoBuildCache != "" {
		if err := s.sb.WaitGoBuildCache(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if out := os.Getenv("SVC_CONFORMANCE_STRACE"); out != "" && out != "1" {
		if s.traceOut, err = os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.traceOut.Close() })
	}
	start := time.Now()
	t.Cleanup(func() { t.Log(s.summary(time.Since(start))) })
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s.runCase(t, dir)
		})
	}
}

// suite is one run of the suite: its sandbox and its tally.
type suite struct {
	sb    *svc.Sandbox
	v1    bool
	ci    bool
	trace bool // the host side runs under strace
	// traceOut is SVC_CONFORMANCE_STRACE's file, for the calls of every
	// case; nil for none.
	traceOut *os.File
	sem      chan struct{}

	mu        sync.Mutex // guards the tally below and the writes to traceOut
	cases     int
	skipped   int
	runs      int
	identical int
	expected  map[string]int // expected differences by reason
	failures  int
}

// count updates the tally under mu.
func (s *suite) count(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// summary is the suite's one-line report.
func (s *suite) summary(took time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var exp []string
	n := 0
	for _, r := range slices.Sorted(maps.Keys(s.expected)) {
		exp = append(exp, fmt.Sprintf("%q: %d", r, s.expected[r]))
		n += s.expected[r]
	}
	return fmt.Sprintf("conformance: %d cases (%d skipped), %d sandbox runs: %d identical, %d expected differences {%s}, %d failures; %v",
		s.cases, s.skipped, s.runs, s.identical, n, strings.Join(exp, ", "), s.failures, took.Round(time.Second))
}

// fail reports a failure of the case or run t and counts it.
func (s *suite) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	s.count(func() { s.failures++ })
	t.Errorf(format, args...)
}

// runCase runs one case: it loads it, prepares its files and stdin, runs
// it on the host, then in the sandbox under each profile (a subtest each).
func (s *suite) runCase(t *testing.T, dir string) {
	s.count(func() { s.cases++ })
	c, err := loadCase(dir)
	if err != nil {
		s.fail(t, "malformed case: %v", err)
		return
	}
	if missing := s.missingTools(c); len(missing) > 0 {
		if s.ci {
			s.fail(t, "tools the case needs are missing (CI=true): %s", strings.Join(missing, ", "))
			return
		}
		s.count(func() { s.skipped++ })
		t.Skipf("tools the case needs are missing: %s", strings.Join(missing, ", "))
	}
	s.sem <- struct{}{}
	defer func() { <-s.sem }()

	files, stdin, err := prepareInput(t, c)
	if err != nil {
		s.fail(t, "case input: %v", err)
		return
	}
	begin := time.Now()
	host, err := runHost(c, files, stdin, s.trace)
	if err != nil {
		s.fail(t, "host: %v", err)
		return
	}
	t.Logf("host: %v in %v", host, time.Since(begin).Round(time.Millisecond))
	s.record(t, c, host.BuildCalls, host.Calls)
	if host.BuildCalls != nil {
		t.Log(strings.TrimPrefix(traceNote("build", host.BuildCalls, svc.ProfileCompileV2), "\n"))
	}
	for _, p := range c.Profiles {
		t.Run(string(p), func(t *testing.T) { s.runProfile(t, c, p, files, stdin, host) })
	}
}

// missingTools returns the commands and files the case needs that the
// host lacks.
func (s *suite) missingTools(c *testCase) []string {
	var missing []string
	for _, argv := range [][]string{c.Build, c.Run, c.StdinGen} {
		if len(argv) > 0 && !strings.HasPrefix(argv[0], ".") {
			if _, ok := lookTask(argv[0], c.Dir); !ok {
				missing = append(missing, argv[0])
			}
		}
	}
	if len(c.HostBuild) > 0 {
		if _, err := exec.LookPath(c.HostBuild[0]); err != nil {
			missing = append(missing, c.HostBuild[0])
		}
	}
	for _, n := range c.Needs {
		if filepath.IsAbs(n) {
			if m, _ := filepath.Glob(n); len(m) == 0 {
				missing = append(missing, n)
			}
		} else if _, ok := lookTask(n, c.Dir); !ok {
			missing = append(missing, n)
		}
	}
	return missing
}

// prepareInput returns the files of the case (after hostbuild, if any)
// and the run's stdin (stdin: or stdin-gen:).
func prepareInput(t *testing.T, c *testCase) (map[string]string, string, error) {
	src := c.Dir
	if c.HostBuild != nil {
		stage := t.TempDir()
		if err := os.CopyFS(stage, os.DirFS(c.Dir)); err != nil {
			return nil, "", fmt.Errorf("copy the case: %w", err)
		}
		src = stage
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if c.HostBuild != nil {
		if _, err := runAsRoot(ctx, src, os.Environ(), c.HostBuild); err != nil {
			return nil, "", fmt.Errorf("hostbuild: %w", err)
		}
	}
	files, err := readFiles(src)
	if err != nil {
		return nil, "", err
	}
	switch {
	case c.Stdin != "":
		return files, files[c.Stdin], nil
	case c.StdinGen != nil:
		// In the case's own directory, whose ../../../gen holds the
		// generators cases share.
		env := []string{"PATH=" + taskPath, "HOME=" + src, "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8"}
		out, err := runAsRoot(ctx, c.Dir, env, c.StdinGen)
		if err != nil {
			return nil, "", fmt.Errorf("stdin-gen: %w", err)
		}
		return files, string(out), nil
	}
	return files, "", nil
}

// record appends the traced calls of a case to the trace file, if any.
func (s *suite) record(t *testing.T, c *testCase, calls ...[]string) {
	if s.traceOut == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cs := range calls {
		if len(cs) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(s.traceOut, "%s/%s %s\n", c.Lang, c.Name, strings.Join(cs, " ")); err != nil {
			t.Errorf("trace file: %v", err)
		}
	}
}

// hostRun is the host side of a case: the build's calls (under strace)
// and the run.
type hostRun struct {
	BuildCalls []string
	result
}

// runHost builds (if the case has a build) and runs the case in a fresh
// host directory, under strace with trace.
func runHost(c *testCase, files map[string]string, stdin string, trace bool) (hostRun, error) {
	h, err := newHostDir()
	defer func() {
		if h != nil {
			h.remove()
		}
	}()
	if err != nil {
		return hostRun{}, err
	}
	if err := h.place(files); err != nil {
		return hostRun{}, fmt.Errorf("place files: %w", err)
	}
	var hr hostRun
	if c.Build != nil {
		b, err := h.run(c.Build, "", maxTimeout, trace)
		if err != nil {
			return hostRun{}, fmt.Errorf("build: %w", err)
		}
		if b.Outcome != svc.OutcomeExited || b.ExitCode != 0 {
			return hostRun{}, fmt.Errorf("build %q failed on the host (a broken case): %v\n%s%s",
				strings.Join(c.Build, " "), b, clip(b.Stdout, 2000), clip(b.Stderr, 2000))
		}
		hr.BuildCalls = b.Calls
	}
	hr.result, err = h.run(c.Run, stdin, c.Timeout, trace)
	return hr, err
}

// request is the sandbox request of a case under profile p: the build
// (cached, so that the next profile replays it), then the run.
func (s *suite) request(c *testCase, p svc.Profile, files map[string]string, stdin string) *svc.Request {
	build := svc.ProfileCompileV2
	if s.v1 {
		build, p = asV1[build], cmp.Or(asV1[p], p)
	}
	run := svc.Task{Cmd: c.Run[0], Args: c.Run[1:], Stdin: stdin, SandboxProfile: p, Cache: new(false)}
	req := &svc.Request{StopOnFailure: true}
	if c.Build == nil {
		run.Files = sandboxFiles(files)
	} else {
		req.Steps = append(req.Steps, svc.Single(svc.Task{Cmd: c.Build[0], Args: c.Build[1:],
			Files: sandboxFiles(files), SandboxProfile: build, Cache: new(true)}))
	}
	req.Steps = append(req.Steps, svc.Single(run))
	return req
}

// sandboxFiles turns the case's files into a task's.
func sandboxFiles(files map[string]string) map[string]svc.File {
	m := make(map[string]svc.File, len(files))
	for p, content := range files {
		m[p] = svc.File{Content: content}
	}
	return m
}

// runProfile runs the case in the sandbox under profile p and compares
// the run with the host's, or checks the outcome the case expects.
func (s *suite) runProfile(t *testing.T, c *testCase, p svc.Profile, files map[string]string, stdin string, host hostRun) {
	s.count(func() { s.runs++ })
	ctx, cancel := context.WithTimeout(context.Background(), sandboxLimits().OverallTimeout+30*time.Second)
	defer cancel()
	begin := time.Now()
	resp, err := s.sb.Run(ctx, s.request(c, p, files, stdin))
	if err != nil {
		s.fail(t, "sandbox: %v", err)
		return
	}
	if c.Build != nil {
		b := resp.Results[0].Results[0]
		if b.Outcome != svc.OutcomeExited || b.ExitCode != 0 {
			s.fail(t, "build %q in the sandbox: %s exit %d signal %d%s\n%s%s%s", strings.Join(c.Build, " "),
				b.Outcome, b.ExitCode, b.Signal, deniedNote(b.Stats.DeniedSyscalls), clip(b.Stdout, 2000), clip(b.Stderr, 2000),
				traceNote("build", host.BuildCalls, svc.ProfileCompileV2))
			return
		}
		if bad := unexpectedDenials(b.Stats.DeniedSyscalls, c.DeniedOK); len(bad) > 0 {
			s.fail(t, "build: the sandbox refused %s", strings.Join(bad, ", "))
		}
	}
	r := resp.Results[len(resp.Results)-1].Results[0]
	box := fromSandbox(r)
	t.Logf("sandbox: %v in %v (cache: %d replayed, %d stored)", box, time.Since(begin).Round(time.Millisecond),
		resp.Cache.ReplayedSteps, resp.Cache.StoredSteps)
	if e, ok := c.Expect[p]; ok {
		if box.Outcome != e.Outcome {
			s.fail(t, "expected %s (%s), got %v%s\nstdout: %s\nstderr: %s%s", e.Outcome, e.Reason, box,
				deniedNote(r.Stats.DeniedSyscalls), clip(box.Stdout, 1000), clip(box.Stderr, 1000), traceNote("run", host.Calls, p))
			return
		}
		s.count(func() { s.expected[e.Reason]++ })
		return
	}
	if d := differences(host.result, box, c.Normalize); len(d) > 0 {
		s.fail(t, "differs from the host%s:\n%s%s", deniedNote(r.Stats.DeniedSyscalls), strings.Join(d, "\n"),
			traceNote("run", host.Calls, p))
		return
	}
	if host.Calls != nil {
		t.Log(strings.TrimPrefix(traceNote("run", host.Calls, p), "\n"))
	}
	// nil: the sandbox could not watch the calls; unknown, not refused.
	if bad := unexpectedDenials(r.Stats.DeniedSyscalls, c.DeniedOK); len(bad) > 0 {
		s.fail(t, "identical, but the sandbox refused %s (denied-ok: names a call the program survives by design)", strings.Join(bad, ", "))
		return
	}
	s.count(func() { s.identical++ })
}

// deniedNote names the refused calls of a run, if any were seen.
func deniedNote(denied map[string]int64) string {
	if len(denied) == 0 {
		return ""
	}
	return " (refused calls: " + strings.Join(unexpectedDenials(denied, nil), ", ") + ")"
}
